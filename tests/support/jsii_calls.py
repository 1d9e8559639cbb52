"""Counting the round trips between Python and the jsii kernel (the Node process that runs aws-cdk-lib).

A CDK app's construct and synth time is mostly these round trips: each property read, method call, object creation
and static call from Python is one request to the kernel and one answer. Their number per job type is a count, not
a time, so a test can hold it (``tests/test_synth_cost.py``) where a timed test would flake.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jsii._kernel.providers import process

_counters: list[tuple[Counter[str], Callable[[Any], str]]] = []
_send = process._NodeProcess.send
_ROOT = str(Path(__file__).resolve().parents[2]) + "/"


def _counting_send(self: Any, request: Any, response_type: Any) -> Any:
    for counter, key in _counters:
        counter[key(request)] += 1
    return _send(self, request, response_type)


def _kind(request: Any) -> str:
    return type(request).__name__.removesuffix("Request")


def _call_site(request: Any) -> str:
    """``path:line function`` of the innermost Python frame outside the installed libraries (jsii, aws_cdk,
    constructs, typeguard): the line of the app or of jobqueues that made the request."""
    frame = sys._getframe(2)
    while frame is not None and not _ours(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return f"<library> {_kind(request)}"
    filename = frame.f_code.co_filename.removeprefix(_ROOT)
    return f"{filename}:{frame.f_lineno} {frame.f_code.co_name}"


def _ours(filename: str) -> bool:
    """A file of this repository (not of its virtualenv, and not this module)."""
    return filename.startswith(_ROOT) and "/.venv/" not in filename and filename != __file__


@contextlib.contextmanager
def _counting(key: Callable[[Any], str]) -> Iterator[Counter[str]]:
    counter: Counter[str] = Counter()
    if not _counters:
        process._NodeProcess.send = _counting_send  # type: ignore[method-assign]
    entry = (counter, key)
    _counters.append(entry)
    try:
        yield counter
    finally:
        _counters.remove(entry)
        if not _counters:
            process._NodeProcess.send = _send  # type: ignore[method-assign]


def counting_jsii_calls() -> contextlib.AbstractContextManager[Counter[str]]:
    """Count the kernel requests made inside the block, by kind (``Create``, ``Invoke``, ``Get``, ``StaticInvoke``,
    ...). Callbacks from the kernel into Python are not requests and are not counted."""
    return _counting(_kind)


def counting_jsii_call_sites() -> contextlib.AbstractContextManager[Counter[str]]:
    """Count the kernel requests made inside the block by where they were made (``path:line function`` of the
    innermost frame outside the installed libraries): which line of jobqueues or of an app costs round trips."""
    return _counting(_call_site)
