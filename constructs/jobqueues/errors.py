"""The one exception type of the construct library, and the text of its declaration errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

#: The construct library's own directory: its frames are never the user's line.
_LIBRARY = os.path.realpath(Path(__file__).parent) + os.sep


class JobQueueError(ValueError):
    """A job type declaration that cannot be deployed.

    The message names the construct and lists every problem, each with the prop, the value given and the fix.
    """


def declaration_error(kind: str, path: str, errors: Sequence[str], declared_at: str | None = None) -> str:
    """The text of a declaration's :class:`JobQueueError`: ``kind`` (``JobQueue``, ``LambdaJob``...) and construct
    ``path``, where it was declared (``FILE:LINE``; default: not said), then one line per problem."""
    where = f" (declared at {declared_at})" if declared_at else ""
    return f"{kind} {path}{where} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in errors)


def declaring_line() -> str | None:
    """``FILE:LINE`` of the innermost caller outside the construct library and installed packages (the CDK, jsii):
    the user's line that declared what is being built, for an error only the synth can raise. ``FILE`` is relative
    to the working directory when under it. ``None``: no such frame."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        installed = "site-packages" in filename or "dist-packages" in filename or filename.startswith("<")
        absolute = os.path.realpath(filename)
        if not installed and not absolute.startswith(_LIBRARY):
            here = os.path.realpath(os.getcwd()) + os.sep
            shown = os.path.relpath(absolute, here) if absolute.startswith(here) else filename
            return f"{shown}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None
