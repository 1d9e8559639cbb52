"""Counting the round trips between Python and the jsii kernel (the Node process that runs aws-cdk-lib).

A CDK app's construct and synth time is mostly these round trips: each property read, method call, object creation
and static call from Python is one request to the kernel and one answer. Their number per job type is a count, not
a time, so a test can hold it (``tests/test_synth_cost.py``) where a timed test would flake.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

from jsii._kernel.providers import process

_counters: list[Counter[str]] = []
_send = process._NodeProcess.send


def _counting_send(self: Any, request: Any, response_type: Any) -> Any:
    for counter in _counters:
        counter[type(request).__name__.removesuffix("Request")] += 1
    return _send(self, request, response_type)


@contextlib.contextmanager
def counting_jsii_calls() -> Iterator[Counter[str]]:
    """Count the kernel requests made inside the block, by kind (``Create``, ``Invoke``, ``Get``, ``StaticInvoke``,
    ...). Callbacks from the kernel into Python are not requests and are not counted."""
    counter: Counter[str] = Counter()
    if not _counters:
        process._NodeProcess.send = _counting_send  # type: ignore[method-assign]
    _counters.append(counter)
    try:
        yield counter
    finally:
        _counters.remove(counter)
        if not _counters:
            process._NodeProcess.send = _send  # type: ignore[method-assign]
