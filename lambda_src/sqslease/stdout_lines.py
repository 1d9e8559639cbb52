"""A worker process's stdout: what each thread writes goes out a whole line at a time.

The worker's EMF lines go to stdout, and so does a handler's ``print()``, which writes its text and its newline in
two writes: another thread's line written between them was glued to the printed text, and could not be read (by
CloudWatch, jobstats, or the chaos report, which then counts its message lost). ``python -m sqslease.worker``
replaces ``sys.stdout`` with :class:`WholeLines` over its EMF logger: each thread's text is kept until its newline,
then written, whole lines only, under the logger's stream lock. Not covered: binary writes (``sys.stdout.buffer``)
and writes to the file descriptor itself (a C library, a child process).
"""

from __future__ import annotations

import io
import threading
from typing import IO, Any

from sqslease.emf import EmfLogger

#: Threads with text waiting for its newline beyond which a write looks for ended ones (:meth:`WholeLines._sweep`).
SWEEP_AT = 32


class WholeLines(io.TextIOBase):
    """``sys.stdout`` of a worker: each thread's text written whole lines at a time, through ``logger`` (its
    stream, after the lines it holds, under its lock). A thread's text after its last newline waits for the next
    one, or for :meth:`close_lines`.

    :param logger: the worker's EMF logger, whose stream is the real stdout.
    """

    def __init__(self, logger: EmfLogger) -> None:
        super().__init__()
        self._logger = logger
        self._stream: IO[str] = logger.stream
        # A thread's text since its last newline, by thread: the thread object, not its id, which Python gives
        # again to a thread started after it ended (whose line the text would have joined).
        self._partial: dict[threading.Thread, str] = {}

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        me = threading.current_thread()
        pending = self._partial.pop(me, "") + text  # a thread's own key: only a sweep of ended threads takes others
        end = pending.rfind("\n") + 1
        if end < len(pending):
            self._partial[me] = pending[end:]
            if len(self._partial) > SWEEP_AT:
                self._sweep()
        if end:
            self._logger._write(pending[:end])  # text the stream cannot encode raises here, as print() would
        return len(text)

    def _sweep(self) -> None:
        """Write what threads that ended left without a newline, a line each: no newline will come."""
        for thread in list(self._partial):
            if not thread.is_alive():
                text = self._partial.pop(thread, None)  # what it holds now: it may have written since the list
                if text is not None:
                    self._logger._write(text + "\n")

    def flush(self) -> None:
        """Whole lines are written (and flushed) as they end; a partial line waits for its newline."""

    def close_lines(self) -> None:
        """Write what each thread left without a newline, a line each (the worker's end)."""
        while self._partial:
            _, text = self._partial.popitem()
            self._logger._write(text + "\n")

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8") or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._stream, "errors", None)

    @property
    def buffer(self) -> Any:
        """The real stdout's binary buffer: what is written there is not kept to whole lines."""
        return self._stream.buffer  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        # What a text stream has beyond io.TextIOBase (name, mode, line_buffering, reconfigure...): the real stdout's
        return getattr(self._stream, name)
