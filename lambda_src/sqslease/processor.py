"""Runs a handler on one message and settles its lease by outcome and failure policy.

Shared by the long-running worker (which deletes on success) and the Lambda adapter (where Lambda deletes
the records not reported in ``batchItemFailures``).
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqslease.async_loop import AsyncLoop
from sqslease.attempt import Attempt, HandlerTimeoutError
from sqslease.emf import EmfLogger
from sqslease.emf_writer import LineWriter
from sqslease.failure_policy import dead_letter
from sqslease.fifo_retry import FifoRetry
from sqslease.hooks import HookChain, MessageHooks, configured_hooks
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.imports import resolve_exceptions
from sqslease.message import Message
from sqslease.payload_pointer import LEGACY_SIZE_ATTRIBUTE, SIZE_ATTRIBUTE, PayloadStore
from sqslease.process_result import TIMED_OUT, ProcessResult
from sqslease.retry import FatalSqsError
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.unrun import UnrunPaths

logger = logging.getLogger("sqslease")

Handler = Callable[[str, Message], Any]

#: Its callers import the result's type from here too.
__all__ = ["TIMED_OUT", "Handler", "MessageProcessor", "ProcessResult"]

#: A message's :class:`ProcessResult` built without the named tuple's ``__new__`` (a Python call a message).
_result = tuple.__new__


class MessageProcessor(UnrunPaths):
    """Calls ``handler(body, message)`` and settles the lease.

    A handler that returns a coroutine (``async def``) has it run on ``loop``. The handler failed if it raised
    anything, any ``BaseException`` included (``SystemExit`` from a library's ``sys.exit()``,
    ``KeyboardInterrupt``), returned an awaitable that is not a coroutine, or ran past ``max_processing_time``
    (:meth:`time_out`). Each failure is logged and settled by the failure policy, never deleted.

    :param delete_on_success: the worker deletes; the Lambda adapter leaves deleting to Lambda.
    :param non_retryable: exception types that go straight to the DLQ (in addition to the settings' paths).
    :param hooks: called before and after each message, after the built-in and the settings' ones. Default none.
    :param loop: runs the coroutines of ``async def`` handlers. Default: one of its own, started on first use.
    :param idempotency: the records that make completion exactly-once (:meth:`_begin`). Default none: off.
    :param on_fatal: called with a :class:`FatalStoreError` of the idempotency store (the message is not run).
        Default: raise it.
    :param fifo_retry: a FIFO queue's retries in process: a failure with attempts left is held (not settled), and
        one whose attempts are spent is sent to the DLQ (:mod:`sqslease.fifo_retry`). Default none: the failure
        policy settles every failure.
    :param deferred_lines: a success's EMF line is held until its delete is sent (:class:`LineWriter`'s
        ``deferred``; the settler's ``before_deletes`` writes it). Default False: each line written as it ends.
    :param payloads: reads the payload of a message sent as a pointer (:mod:`sqslease.payload_pointer`) before the
        hooks and the handler, and deletes it after a success. A payload it cannot read fails the message (Outcome
        ``failure``, the failure policy: nothing ran). Default: a store of its own, deleting by
        ``settings.delete_payloads``, its S3 client made on the first pointer.
    """

    def __init__(
        self,
        handler: Handler,
        settler: Settler,
        settings: LeaseSettings,
        sqs: Any,
        emf: EmfLogger | None = None,
        *,
        queue_name: str,
        delete_on_success: bool = True,
        non_retryable: tuple[type[BaseException], ...] = (),
        hooks: Iterable[MessageHooks] = (),
        loop: AsyncLoop | None = None,
        idempotency: IdempotencyGate | None = None,
        on_fatal: Callable[[FatalSqsError], None] | None = None,
        fifo_retry: FifoRetry | None = None,
        payloads: PayloadStore | None = None,
        deferred_lines: bool = False,
    ) -> None:
        self.handler = handler
        self.settler = settler
        self.settings = settings
        self.sqs = sqs
        self.emf = emf or EmfLogger()
        self.queue_name = queue_name
        #: The EMF lines of this consumer (its job type, stack and queue fixed).
        self.lines = LineWriter(self.emf, settings.job_type, queue_name, settings.stack, deferred=deferred_lines)
        self.delete_on_success = delete_on_success
        self.non_retryable = non_retryable + resolve_exceptions(settings.non_retryable)
        self.hooks = HookChain([*configured_hooks(settings.job_type, settings.hooks), *hooks])
        #: Decided once per consumer, not per message: whether a message calls the hooks at all, and what tells
        #: that they would do nothing for it (HookChain.idle, asked once a message).
        self._hooked = bool(self.hooks.hooks)
        self._idle = self.hooks.idle
        self._warn_above = settings.receive_count_warning
        self.loop = loop or AsyncLoop()
        self.idempotency = idempotency
        self.on_fatal = on_fatal
        self.fifo_retry = fifo_retry
        self.payloads = payloads if payloads is not None else PayloadStore(delete=settings.delete_payloads)

    def process(self, message: Message, attempt: Attempt | None = None) -> ProcessResult:
        """Run the handler on ``message`` and settle it, unless ``attempt`` timed out meanwhile (then its late
        result is logged and ignored: the outcome is ``timed_out``)."""
        attempt = attempt or Attempt(message, time.monotonic())
        receive_count = message.receive_count
        if receive_count > self._warn_above:
            self._warn_received_often(message, receive_count)
        queue_ms = message.queue_time_ms(time.time() * 1000)
        attributes = message.message_attributes  # an attribute marks a pointer: no call for an ordinary message
        if self.idempotency is not None or (
            attributes and (SIZE_ATTRIBUTE in attributes or LEGACY_SIZE_ATTRIBUTE in attributes)
        ):
            unrun = self._before_handler(message, attempt)
            if unrun is not None:
                return unrun
        hooked = self._hooked and not (self._idle and self._idle())  # decided before the handler, for both hooks
        started = time.perf_counter()
        error: BaseException | None = None
        returned: Any = None
        try:
            context = contextvars.copy_context()  # the message's own: what a before hook set, the handler sees
            returned = context.run(self._hooked_call if hooked else self.handler, message.body, message)
            if returned is not None:  # None: the usual plain handler's, no awaitable to look for
                returned = context.run(self.loop.result, self.handler, returned, attempt)
        except BaseException as caught:
            # Any BaseException (a library's sys.exit()...) too: its thread must not end with the lease unsettled.
            error = caught
        finally:
            attempt.ended = True
        elapsed_ms = (time.perf_counter() - started) * 1000
        if not attempt.claim():  # its timeout settled it: the result comes too late to count
            return self._too_late(message, attempt, elapsed_ms, error)
        if self.idempotency is not None:  # the record before the message: a redelivery finds it completed
            self._end_record(message, error, returned)
        lease = message.lease  # the usual outcomes settled here, not in a method of their own: a call less a message
        if lost := lease.lost:  # read once: for the outcome and for the line
            outcome, retry, held = "lost", True, False
            logger.warning("message %s finished after its lease was lost; not settling it", message.message_id)
        elif error is None:
            outcome, retry, held = "success", False, False
        else:
            outcome, retry, held = self._failed(message, error)
        self.lines.emit(  # not through _emit: a call less a message; a success's before its delete, which sends it
            message.message_id,
            elapsed_ms,
            outcome,
            receive_count,
            lease.extensions,
            lost,
            error,
            queue_ms,
            message.message_group_id,
        )
        if outcome == "success":
            if message.pointer is not None and self.payloads.delete:  # its object too, once SQS confirmed
                self.settler.delete(lease, self.payloads.deletion(message.pointer))
            elif self.delete_on_success:  # else Lambda deletes it once the invocation returns (extended until then)
                self.settler.delete(lease)
        if hooked:
            self.hooks.after(message, outcome, elapsed_ms / 1000, error)
        return _result(ProcessResult, (outcome, elapsed_ms, retry, held))

    def _too_late(
        self, message: Message, attempt: Attempt, elapsed_ms: float, error: BaseException | None
    ) -> ProcessResult:
        """The handler returned after its timeout settled the message: its result is logged and ignored."""
        logger.warning(
            "message %s: handler returned %.1f s after it started, past its timeout; its result (%s) is ignored",
            message.message_id,
            elapsed_ms / 1000,
            "success" if error is None else repr(error),
        )
        if attempt.take_held():  # its timeout held the lease while this thread ran: settle it now
            self.apply_failure_policy(message)
        return ProcessResult(TIMED_OUT, elapsed_ms, True)

    def _warn_received_often(self, message: Message, receive_count: int) -> None:
        logger.warning(
            "message %s of %s received %d times (warning threshold %d): investigate",
            message.message_id,
            self.settings.job_type,
            receive_count,
            self.settings.receive_count_warning,
        )

    def _end_record(self, message: Message, error: BaseException | None, returned: Any) -> None:
        """Complete the message's idempotency record (with the handler's result) or, on a failure, delete it."""
        assert self.idempotency is not None
        if error is None:
            self.idempotency.complete(message, returned)
        else:
            self.idempotency.fail(message.lease, message.message_id)

    def _failed(self, message: Message, error: BaseException) -> tuple[str, bool, bool]:
        """Settle the handler's failure: a non-retryable error to the DLQ, any other by the failure policy (or held
        for a FIFO retry in process). Its outcome, whether it is delivered again, and whether its lease is held."""
        if self.non_retryable and isinstance(error, self.non_retryable):
            outcome, retry = dead_letter(
                self.sqs, self.settler, self.settings, message, error, delete_on_success=self.delete_on_success
            )
            return outcome, retry, False
        logger.error(
            "handler failed on message %s (receive %d): %r",
            message.message_id,
            message.receive_count,
            error,
            exc_info=error,
        )
        return self._settle_failure(message, error)

    def _hooked_call(self, body: str, message: Message) -> Any:
        """The handler's call after the before hooks (in the message's context, as the handler's)."""
        self.hooks.before(message)
        return self.handler(body, message)

    def time_out(self, attempt: Attempt, now: float, reason: str, *, hold: bool = False) -> bool:
        """Fail a handler still running (``reason``: past ``max_processing_time``, or the Lambda deadline): settle
        its message by the failure policy, cancel its task (``async def``), log its EMF line (``timed_out``) and
        call the hooks. False (nothing done) when the handler ended first.

        :param hold: keep the lease held (extended) instead of settling it: the handler settles it by the failure
            policy when it returns, or the worker as it exits; the Lambda adapter ends the process first
            (:mod:`sqslease.hung_records`). See :meth:`Attempt.take_held`. Default False.
        """
        if not attempt.time_out(now, hold=hold and not attempt.message.lease.lost):
            return False
        message = attempt.message
        elapsed_s = now - attempt.started
        error = HandlerTimeoutError(f"handler still running after {elapsed_s:.1f} s: {reason}")
        logger.error(
            "message %s (receive %d) timed out: %s; %s",
            message.message_id,
            message.receive_count,
            error,
            "its task is cancelled"
            if attempt.cancellable
            else "its thread cannot be stopped and its result will be ignored",
        )
        if attempt.held:
            logger.warning("message %s: lease held until its handler ends or its process exits", message.message_id)
        if self.idempotency is not None:
            self.idempotency.fail(message.lease, message.message_id)
        if message.lease.lost:
            logger.warning("message %s timed out after its lease was lost; not settling it", message.message_id)
        elif not attempt.held:
            self.apply_failure_policy(message)
        queue_ms = message.queue_time_ms((time.time() - elapsed_s) * 1000)  # until its handler started
        self._emit(message, elapsed_s * 1000, TIMED_OUT, message.receive_count, error, queue_ms)
        self.hooks.after(message, TIMED_OUT, elapsed_s, error)
        return True
