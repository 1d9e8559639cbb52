"""One Lambda invocation's batch: its records run one at a time in order, each settled or reported as a failure, the
ones not started released (see :mod:`sqslease.lambda_adapter`).

:class:`RecordBatch` runs the records of a standard queue. :class:`FifoRecordBatch` those of a FIFO queue: a failure
stops its group (or the rest of the batch), a failed record with attempts left is retried in the invocation while it
fits (:mod:`sqslease.invocation_retry`), and the failures are reported in record order.
"""

from __future__ import annotations

import functools
import logging
import operator
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqslease.async_loop import AsyncLoop
from sqslease.attempt import Attempt
from sqslease.deadline_watch import InlineWatch, watch_inline_records
from sqslease.emf import EmfLogger
from sqslease.fifo_retry import FifoRetry
from sqslease.hooks import MessageHooks
from sqslease.hung_records import (
    RecordsHungError,
    TimedOutRecords,
    cancel_wait_s,
    delete_finished,
    release_unstarted,
    settle_failed_invocation,
)
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.invocation import EventLeases, remaining_seconds
from sqslease.invocation_retry import retry_in_invocation
from sqslease.message import Message
from sqslease.payload_pointer import PayloadStore
from sqslease.processor import Handler, MessageProcessor
from sqslease.record_runner import run_record
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")


class ConsumerProcessor(MessageProcessor):
    """The processor of one Lambda consumer's invocations (:func:`invocation_processor`): a :class:`MessageProcessor`
    that knows what it was built for while an invocation holds it, so that it can be handed back."""

    #: The arguments it was built for (compared by identity) while an invocation holds it; None once handed back. An
    #: attribute, not a weak dictionary's entry: setting and popping one cost 0.6 us an invocation.
    built_for: tuple[Any, ...] | None = None


#: The processor the process's last invocation handed back (:func:`spare_processor`), and what it was built for: the
#: next invocation of the same consumer takes it (:func:`invocation_processor`).
_spare: list[tuple[tuple[Any, ...], ConsumerProcessor]] = []


def invocation_processor(
    handler: Handler,
    held: EventLeases,
    settings: LeaseSettings,
    sqs: Any,
    emf: EmfLogger | None,
    hooks: Iterable[MessageHooks],
    gate: IdempotencyGate | None,
    payloads: PayloadStore | None = None,
) -> ConsumerProcessor:
    """The processor of one invocation's records: it deletes none but those whose payload it deletes (Lambda deletes
    what is not reported). ``payloads``: the process's store (one S3 client for every invocation).

    Built once per consumer, not per invocation (an execution environment runs one invocation at a time): the one
    the last invocation handed back (:func:`spare_processor`) is taken when it was built for the same arguments (the
    same objects) and given this invocation's settler; a new one otherwise (with idempotency on: the gate is the
    invocation's)."""
    # without a logger of its own the processor's writes to the stdout of its making (which a test may swap)
    built_for = (handler, settings, sqs, sys.stdout if emf is None else emf, hooks, gate, payloads, held.queue_url)
    try:
        spare_for, processor = _spare.pop()  # one taker, even among invocations run at once on threads (a test's)
    except IndexError:
        pass
    else:
        if all(map(operator.is_, spare_for, built_for)):  # both built above: the same length (a generator cost 0.4 us)
            processor.settler, processor.on_fatal, processor.built_for = held.settler, held.on_fatal, built_for
            return processor
    processor = ConsumerProcessor(
        handler,
        held.settler,
        settings,
        sqs,
        emf,
        queue_name=held.queue_url.rsplit("/", 1)[-1],
        delete_on_success=False,
        hooks=hooks,
        loop=AsyncLoop(),  # the consumer's: started by an invocation's first coroutine, stopped before it returns
        idempotency=gate,
        on_fatal=held.on_fatal,
        fifo_retry=FifoRetry.of(settings, held.queue_url),
        payloads=payloads,
    )
    processor.built_for = built_for
    return processor


def spare_processor(processor: ConsumerProcessor) -> None:
    """Hand ``processor`` back once its invocation returned: none of its handlers still runs (a hung one's thread
    may still settle through its processor, which is never reused) and its loop is stopped."""
    built_for, processor.built_for = processor.built_for, None
    if built_for is not None:
        _spare[:] = [(built_for, processor)]


def record_batch(
    records: list[dict[str, Any]],
    held: EventLeases,
    processor: MessageProcessor,
    context: Any,
    *,
    skip_group_on_error: bool,
    sleep: Callable[[float], None],
    on_hung: Callable[[RecordsHungError], object] | None = None,
) -> RecordBatch:
    """The batch of ``records``: a :class:`FifoRecordBatch` on a FIFO queue, else a :class:`RecordBatch`."""
    if held.queue_url.endswith(".fifo"):
        return FifoRecordBatch(records, held, processor, context, sleep, on_hung, skip_group_on_error)
    return RecordBatch(records, held, processor, context, sleep, on_hung)


class RecordBatch:
    """The records of one invocation (:meth:`run`), and the failures to report.

    :param records: the event's records, in order.
    :param held: the invocation's hold on their leases.
    :param processor: runs one record and settles it.
    :param context: the Lambda context (the time left to wait for a timed-out handler).
    :param sleep: how the invocation waits out a FIFO retry's back-off, in seconds.
    :param on_hung: given a record hung on the invocation's own thread, once the deadline watchdog settled the batch
        (:func:`sqslease.lambda_adapter.process_event`).
    """

    def __init__(
        self,
        records: list[dict[str, Any]],
        held: EventLeases,
        processor: MessageProcessor,
        context: Any,
        sleep: Callable[[float], None],
        on_hung: Callable[[RecordsHungError], object] | None = None,
    ) -> None:
        self.records = records
        self.held = held
        self.processor = processor
        self.context = context
        self.sleep = sleep
        self.timed_out = TimedOutRecords()
        self.failures: list[dict[str, str]] = []
        #: Records not run: out of time, or (FIFO) after a failure of their group (or batch).
        self.skipped: list[dict[str, Any]] = []
        self.on_hung = on_hung
        self.watch: InlineWatch | None = None  # the deadline watchdog's, armed while the records run

    #: A FIFO queue's batch (:class:`FifoRecordBatch`): records may be skipped after a failure of their group.
    fifo = False

    def run(self) -> list[dict[str, str]]:
        """Run the records; the failures to report (``batchItemFailures``). Raises the invocation's fatal error, or
        :class:`~sqslease.hung_records.RecordsHungError` when a handler still runs after its timeout."""
        held = self.held
        answered = False  # every record is settled or reported (no fatal error came between)
        # The watchdog settles the batch from these very lists (mutated in place) if a record hangs inline.
        settle_failed = functools.partial(
            settle_failed_invocation, self.processor, held, self.records, self.failures, self.skipped
        )
        self.watch = watch_inline_records(self.processor, held, self.timed_out, settle_failed, self.on_hung)
        try:
            self._run_records()
            answered = True
        finally:
            if self.watch is not None:
                self.watch.disarm()
            timed_out = self.timed_out
            hung = timed_out.still_running(cancel_wait_s(remaining_seconds(self.context))) if timed_out else []
            if hung and answered:  # the environment ends (below): the invocation fails, and Lambda deletes nothing
                delete_finished(held.settler, held.leases, self.records, self.failures)
            self.processor.loop.stop()
            held.close()  # waits (bounded) for the releases, backoffs and deletes to be confirmed
            payloads = self.processor.payloads
            if payloads.pending:  # the objects of the deleted pointers (none: the context is not asked the time)
                payloads.flush(held.time_left())
            if hung:  # even on a fatal error: the thread must not outlive the environment's end
                raise RecordsHungError([attempt.message.message_id for attempt in hung])
        held.raise_if_fatal()
        return self.failures

    def _run_records(self) -> None:
        held, records, processor, timed_out, fifo = self.held, self.records, self.processor, self.timed_out, self.fifo
        watch, leases, queue_url, out_of_time = self.watch, held.leases, held.queue_url, held.out_of_time
        fatal = held.on_fatal  # its error read a record, without the property's call
        # Only a lease renewed at the start (lease extension on) can be lost before its record starts: asked once
        renewed, from_record, monotonic = held.renewed, Message.from_lambda_record, time.monotonic
        # Without a max_processing_time every record runs on this thread, watched (sqslease.record_runner): decided
        # once an invocation, not asked of each record
        inline = watch.run if watch is not None and processor.settings.max_processing_time is None else None
        for index, record in enumerate(records):
            if fatal.error is not None:
                raise fatal.error
            if fifo and self._skips(record):
                self.skipped.append(record)
                continue
            if out_of_time():
                unstarted = records[index:]
                logger.warning(
                    "less than %.2f s left: releasing %d unstarted records", held.deadline_margin, len(unstarted)
                )
                self.skipped += unstarted
                break
            lease = leases[record["messageId"]]
            if renewed and lease.lost:  # its renewal found the receipt handle stale: it may be running elsewhere
                logger.warning("record %s not started: its lease could not be renewed", record["messageId"])
                self._failed(record)
                continue
            message = from_record(record, queue_url, lease)
            if inline is not None:
                result = inline(message, Attempt(message, monotonic()))
            else:
                result = run_record(processor, message, out_of_time, held.remaining, timed_out=timed_out, watch=watch)
            if result.held:  # a FIFO failure with attempts left: retried while it fits (sqslease.invocation_retry)
                run = functools.partial(
                    run_record, processor, message, held.out_of_time, held.remaining, timed_out=timed_out, watch=watch
                )
                result = retry_in_invocation(processor, message, result, run, held.remaining, self.sleep)
            if result.retry:
                self._failed(record)
        if self.skipped:
            self._release_skipped()

    def _skips(self, record: dict[str, Any]) -> bool:
        """Whether ``record`` is not run (asked on a FIFO queue only: :class:`FifoRecordBatch`)."""
        return False

    def _failed(self, record: dict[str, Any]) -> None:
        self.failures.append({"itemIdentifier": record["messageId"]})

    def _release_skipped(self) -> None:
        self.failures += release_unstarted(self.processor, self.held, self.skipped)


class FifoRecordBatch(RecordBatch):
    """The records of a FIFO queue's invocation: after a failure, the rest of the batch is not run, or with
    ``skip_group_on_error`` only the rest of that record's group; failures are reported in record order.

    :param skip_group_on_error: after a failure stop only that record's group, not the batch.
    """

    fifo = True

    def __init__(
        self,
        records: list[dict[str, Any]],
        held: EventLeases,
        processor: MessageProcessor,
        context: Any,
        sleep: Callable[[float], None],
        on_hung: Callable[[RecordsHungError], object] | None,
        skip_group_on_error: bool,
    ) -> None:
        super().__init__(records, held, processor, context, sleep, on_hung)
        self.skip_group_on_error = skip_group_on_error
        self.failed_groups: set[str | None] = set()
        self.batch_stopped = False

    def run(self) -> list[dict[str, str]]:
        failures = super().run()
        # Lambda retries in order only if failures are reported in record order.
        position = {r["messageId"]: i for i, r in enumerate(self.records)}
        failures.sort(key=lambda f: position[f["itemIdentifier"]])
        return failures

    def _skips(self, record: dict[str, Any]) -> bool:
        return self.batch_stopped or _group(record) in self.failed_groups

    def _failed(self, record: dict[str, Any]) -> None:
        super()._failed(record)
        self.failed_groups.add(_group(record))
        self.batch_stopped = not self.skip_group_on_error

    def _release_skipped(self) -> None:
        if self.failed_groups:
            logger.warning("FIFO: %d records after a failure in their group released unprocessed", len(self.skipped))
        super()._release_skipped()


def _group(record: dict[str, Any]) -> str | None:
    group: str | None = record.get("attributes", {}).get("MessageGroupId")
    return group
