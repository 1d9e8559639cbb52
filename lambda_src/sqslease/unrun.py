"""The paths of :class:`sqslease.processor.MessageProcessor` where the handler does not run, and the settles and
EMF lines every path shares.

Before the handler, a pointer's payload is read (:mod:`sqslease.payload_pointer`; one that cannot be read fails the
message unrun) and the idempotency record is claimed (:mod:`sqslease.idempotency_gate`): a duplicate, a record
another consumer holds, or an unavailable store leaves the message unrun (:meth:`UnrunPaths._unrun`). A message
released without running (a drain, the Lambda deadline guard, a FIFO group behind a failure) has its line here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqslease.attempt import Attempt
from sqslease.emf_writer import LineWriter
from sqslease.failure_policy import apply_failure_policy, settle_failure
from sqslease.fifo_retry import FifoRetry
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.idempotency_requests import FatalStoreError
from sqslease.message import Message
from sqslease.payload_pointer import PayloadStore, is_pointer
from sqslease.process_result import TIMED_OUT, ProcessResult
from sqslease.retry import FatalSqsError
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler


class UnrunPaths:
    """The base of :class:`~sqslease.processor.MessageProcessor`: its unrun paths and shared settles (module doc).
    The attributes are :class:`~sqslease.processor.MessageProcessor`'s (documented there)."""

    settler: Settler
    settings: LeaseSettings
    sqs: Any
    lines: LineWriter
    delete_on_success: bool
    idempotency: IdempotencyGate | None
    on_fatal: Callable[[FatalSqsError], None] | None
    fifo_retry: FifoRetry | None
    payloads: PayloadStore

    def _before_handler(self, message: Message, attempt: Attempt) -> ProcessResult | None:
        """Read a pointer's payload (a failure to: the failure policy, unrun), then claim the idempotency record
        (:meth:`_begin`): ``None`` to run the handler, else how the unrun message ended."""
        if is_pointer(message.message_attributes) and message.pointer is None:  # a retry in process keeps its read
            error = self.payloads.read_into(message)
            if error is not None:
                return self._unrun(message, attempt, "failure", error)
        return None if self.idempotency is None else self._begin(message, attempt)

    def _begin(self, message: Message, attempt: Attempt) -> ProcessResult | None:
        """Claim the message's idempotency record (:meth:`IdempotencyGate.admit`): ``None`` to run the handler,
        else how the unrun message ended."""
        assert self.idempotency is not None
        try:
            unrun = self.idempotency.admit(message)
        except FatalStoreError as error:
            if self.on_fatal is None:
                raise
            self.on_fatal(error)
            unrun = ("store_unavailable", None)
        return None if unrun is None else self._unrun(message, attempt, *unrun)

    def _unrun(
        self, message: Message, attempt: Attempt, outcome: str, error: BaseException | None = None
    ) -> ProcessResult:
        """Settle a message whose handler was not run and log its EMF line (no hooks: nothing ran). ``duplicate``:
        deleted (the worker; Lambda deletes what is not reported). ``in_progress_elsewhere``, ``store_unavailable``:
        left to lapse. ``failure`` (its key function failed): the failure policy."""
        attempt.ended = True
        if not attempt.claim():  # timed out while its record was being claimed: its timeout settled it (or held it)
            if attempt.take_held():
                self.apply_failure_policy(message)
            return ProcessResult(TIMED_OUT, 0, True)
        retry, held = outcome != "duplicate", False
        if outcome == "failure":
            assert error is not None  # admit() gives the key function's error with a failure
            outcome, retry, held = self._settle_failure(message, error)
        elif outcome == "duplicate":
            if message.pointer is not None and self.payloads.delete:
                self.settler.delete(message.lease, self.payloads.deletion(message.pointer))
            elif self.delete_on_success:
                self.settler.delete(message.lease)
        else:
            self.settler.stop_tracking(message.lease)  # lapses: the holder (or a retry) runs it at its end
        self._emit(message, 0, outcome, message.receive_count, error)
        return ProcessResult(outcome, 0, retry, held)

    def record_released(self, message: Message) -> None:
        """Log the EMF line of a message released without running (a drain, the Lambda deadline guard, a FIFO
        group behind a failure): Outcome ``released``, ProcessingTime 0. It has spent a receive."""
        self._emit(message, 0, "released", message.receive_count)

    def _emit(
        self,
        message: Message,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        error: BaseException | None = None,
        queue_ms: float | None = None,
    ) -> None:
        """The message's EMF line (:class:`sqslease.emf.EmfLogger`), in milliseconds."""
        lease = message.lease
        self.lines.emit(
            message.message_id,
            processing_ms,
            outcome,
            receive_count,
            lease.extensions,
            lease.lost,
            error,
            queue_ms,
            message.message_group_id,
        )

    def apply_failure_policy(self, message: Message) -> None:
        apply_failure_policy(self.settler, self.settings, message)

    def _settle_failure(self, message: Message, error: BaseException) -> tuple[str, bool, bool]:
        return settle_failure(
            self.sqs, self.settler, self.settings, message, error, self.fifo_retry, self.delete_on_success
        )
