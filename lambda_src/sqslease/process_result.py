"""How one message ended in :class:`sqslease.processor.MessageProcessor` (its outcome, time, and whether it comes
back), shared by the Lambda adapter's and the worker's callers."""

from __future__ import annotations

from typing import NamedTuple

#: The outcome of a handler still running at its timeout (``max_processing_time``, or the Lambda deadline).
TIMED_OUT = "timed_out"


class ProcessResult(NamedTuple):
    """How one message ended. ``retry`` is True when the message should be delivered again. ``held``: a failed FIFO
    message whose lease is kept for a retry in process (:mod:`sqslease.fifo_retry`): the caller runs it again or
    settles it (:meth:`MessageProcessor.apply_failure_policy`). (A named tuple: a frozen dataclass's ``__init__`` cost
    every message a microsecond.)"""

    outcome: str  # one of sqslease.emf.OUTCOMES
    processing_ms: float
    retry: bool
    held: bool = False
