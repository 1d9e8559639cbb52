"""Long-polling consumer for ECS/Fargate and any long-running worker.

    python -m sqslease.worker --queue-url URL --handler package.module:function [--concurrency N]
        [--visibility-timeout S --extension-threshold S ... any LeaseSettings field as --kebab-case]

Environment equivalents: ``SQSLEASE_QUEUE_URL``, ``SQSLEASE_HANDLER``, ``SQSLEASE_CONCURRENCY``, plus every
``SQSLEASE_*`` lease setting (see :class:`sqslease.settings.LeaseSettings`); the command line wins. EMF lines go
to stdout, logs to stderr. With ``ECS_AGENT_URI`` set (ECS does), the task is protected from scale-in while it
holds leases.

Shutdown (SIGTERM/SIGINT): send no new receive; wait for the long poll in flight (it answers within
``poll_wait``) rather than abandon it, since SQS would still hide what it finds; keep extending running
handlers until they finish or ``shutdown_grace`` ends. A message already received but not started has spent
its receive: a handler that comes free runs it, until ``poll_wait`` + 1 s after the signal (capped by
``shutdown_grace``), when what is still unstarted is released (visibility 0, batched). By then the long polls
of the other workers signalled at the same moment have ended, so none of them can take a released message it
may have no handler for. Budget: a drain costs a message that did not run at most the one receive that
brought it to the draining worker; so with maxReceiveCount >= 2 no drain sends an unfailed message to the
DLQ. When the grace ends, the handlers still running are released. Deletes are confirmed (or retried) and
releases confirmed (or, once one may have landed, left to their lease) before the heartbeat stops.

A handler that raises anything (``SystemExit`` and ``KeyboardInterrupt`` included) or returns an awaitable
(an ``async def`` handler, not supported yet) fails that message only (see :mod:`sqslease.processor`).

Exit status: 0 after a shutdown, 1 after a fatal SQS error (access denied, missing queue, unusable KMS key),
logged on one line, so that ECS restarts the task and alarms fire; 2 for a bad option or environment (one
line naming the option and the fix). Without a configured region (``AWS_REGION``, ``AWS_DEFAULT_REGION``, a
profile) the region is the queue URL's (``https://sqs.REGION.amazonaws.com/...``).
"""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from sqslease.clients import RECEIVE_READ_MARGIN_S
from sqslease.emf import EmfLogger
from sqslease.fifo import ReadyQueue
from sqslease.heartbeat import Heartbeat
from sqslease.message import Message
from sqslease.processor import Handler, MessageProcessor
from sqslease.retry import EntryOutcome, FatalSqsError, classify_exception, is_throttling
from sqslease.scheduler import LeaseScheduler, LeaseState
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.task_protection import TaskProtection

logger = logging.getLogger("sqslease")

RECEIVE_ATTRIBUTES = ["ApproximateReceiveCount", "SentTimestamp", "MessageGroupId", "ApproximateFirstReceiveTimestamp"]
GOVERNOR_CHECK_INTERVAL_S = 10
DEFAULT_CONCURRENCY = 4
#: Seconds a long poll of another worker signalled at the same moment may answer after its wait: a drain releases
#: unstarted messages only once ``poll_wait`` plus this has passed, so no such poll can take them.
DRAIN_POLL_MARGIN_S = 1.0
DRAIN_LOOK_S = 0.05  # how often a drain looks whether handlers took the unstarted messages


class Worker:
    """Receives, runs and settles messages of one queue.

    :param sqs: the boto3 SQS client for lease requests (extend, delete, release); see
        :func:`sqslease.clients.make_clients` for one with the right timeouts.
    :param queue_url: the queue to consume. A ``.fifo`` queue runs one message per group at a time.
    :param handler: ``handler(body, message)``; raising (any ``BaseException``) or returning an awaitable means failure.
    :param settings: lease and failure settings.
    :param concurrency: handlers running at once. Default 4.
    :param emf: where the per-message EMF lines go. Default stdout.
    :param clock: monotonic clock (tests).
    :param receive_sqs: client for long polls (its own connection pool). Default ``sqs``.
    :param control_sqs: client for the in-flight governor and DLQ sends. Default ``sqs``.
    :param ecs_agent_uri: ``ECS_AGENT_URI``: enables ECS task scale-in protection. Default none.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handler: Handler,
        settings: LeaseSettings,
        concurrency: int = DEFAULT_CONCURRENCY,
        emf: EmfLogger | None = None,
        clock: Callable[[], float] = time.monotonic,
        receive_sqs: Any = None,
        control_sqs: Any = None,
        ecs_agent_uri: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.sqs = sqs
        self.receive_sqs = receive_sqs or sqs
        self.control_sqs = control_sqs or sqs
        self.queue_url = queue_url
        self.settings = settings
        self.concurrency = concurrency
        self.clock = clock
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        self.heartbeat = Heartbeat(sqs, queue_url, self.scheduler, settings, clock, on_fatal=self._on_fatal)
        self.settler = Settler(sqs, queue_url, self.scheduler, on_fatal=self._on_fatal, clock=clock)
        self.processor = MessageProcessor(
            handler,
            self.settler,
            settings,
            self.control_sqs,
            emf,
            queue_name=queue_url.rstrip("/").rsplit("/", 1)[-1],
        )
        self._ready = ReadyQueue(fifo=queue_url.endswith(".fifo"))
        self._running: dict[int, Message] = {}
        self._running_lock = threading.Lock()
        self._held_back: list[Message] = []  # FIFO messages kept from release until the drain releases (below)
        self._released = False  # the drain released what was not started
        self._release_at = 0.0  # when (clock) the drain releases: no poll drained with this one is open then
        self._stopping = threading.Event()
        self._handlers: list[threading.Thread] = []
        self.fatal: FatalSqsError | None = None
        self.processed = 0
        self.protection = (
            TaskProtection(ecs_agent_uri, self._holding, settings.task_protection_minutes) if ecs_agent_uri else None
        )

    # -- lifecycle --------------------------------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Consume until :meth:`shutdown` (or SIGTERM/SIGINT), then drain and return.

        Raises :class:`FatalSqsError` after a fatal SQS error, without draining: the leases it held run out.
        """
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda signum, frame: self.shutdown())
        self.heartbeat.start()
        self._handlers = [
            threading.Thread(target=self._handle_loop, name=f"sqslease-handler-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        for thread in self._handlers:
            thread.start()
        receiver = threading.Thread(target=self._receive_loop, name="sqslease-receiver", daemon=True)
        receiver.start()
        if self.protection is not None:
            self.protection.start()
        logger.info("consuming %s with %d handlers", self.queue_url, self.concurrency)
        while not self._stopping.wait(0.2):
            pass
        if self.fatal is not None:
            self._abort()
            raise self.fatal
        self._drain(receiver)

    def shutdown(self) -> None:
        """Stop receiving now; :meth:`run` drains and returns."""
        if not self._stopping.is_set():
            logger.info("shutdown requested: no more receives, draining")
            self._stopping.set()

    def _on_fatal(self, error: FatalSqsError) -> None:
        if self.fatal is None:
            self.fatal = error
            logger.critical("fatal: %s (queue %s); no retry can fix this, exiting", error, self.queue_url)
        self._stopping.set()

    def _holding(self) -> bool:
        return len(self.scheduler) > 0

    def _abort(self) -> None:
        self._ready.close()
        self.heartbeat.stop()
        self.settler.close(timeout=1)
        if self.protection is not None:
            self.protection.stop()

    def _drain(self, receiver: threading.Thread) -> None:
        """Spend no receive twice: see the module docstring's "Shutdown"."""
        started = self.clock()
        grace_ends = started + self.settings.shutdown_grace
        self._release_at = min(grace_ends, started + self.settings.poll_wait + DRAIN_POLL_MARGIN_S)
        # The poll in flight is waited for, not abandoned: SQS would go on with it and hide what it finds. It
        # answers within poll_wait, or times out (the receive client's read timeout).
        answered_by = min(grace_ends, started + self.settings.poll_wait + RECEIVE_READ_MARGIN_S)
        receiver.join(timeout=max(0.0, answered_by - self.clock()))
        if receiver.is_alive():
            logger.warning(
                "abandoning a long poll still unanswered: a message it receives stays hidden for %.0f s",
                self.settings.first_lease,
            )
        # Handlers that come free meanwhile run what was received. Releasing earlier could hand a message to
        # a poll of another worker drained at the same moment, which might have no handler for it.
        while (len(self._ready) or self._held_back) and self.clock() < self._release_at:
            time.sleep(DRAIN_LOOK_S)
        with self._running_lock:
            unstarted = self._ready.close() + self._held_back  # handlers take nothing new; get() returns None
            self._held_back = []
            self._released = True
        if unstarted:
            logger.info("releasing %d messages not yet started", len(unstarted))
            self.settler.release_all([m.lease for m in unstarted], timeout=max(1.0, grace_ends - self.clock()))
            for message in unstarted:
                self.processor.record_released(message)
        for thread in self._handlers:
            thread.join(timeout=max(0.0, grace_ends - self.clock()))
        with self._running_lock:
            still_running = list(self._running.values())
        if still_running:
            logger.warning("grace period over: releasing %d messages still being handled", len(still_running))
            self.settler.release_all([m.lease for m in still_running], timeout=1)
        # The heartbeat keeps holding leases until their deletes and releases are confirmed.
        self.settler.close(timeout=max(1.0, grace_ends - self.clock()))
        self.heartbeat.stop()
        if self.protection is not None:
            self.protection.stop()
        logger.info("stopped after processing %d messages", self.processed)

    # -- receiving --------------------------------------------------------------------------------
    def _receive_loop(self) -> None:
        failures = 0
        next_governor_check = 0.0
        paused_by_governor = False
        first_lease = self.settings.first_lease
        while not self._stopping.is_set():
            capacity = self._capacity()
            if capacity <= 0:
                self._stopping.wait(0.02)
                continue
            now = self.clock()
            if now >= next_governor_check:
                paused_by_governor = self._queue_over_limit()
                next_governor_check = now + GOVERNOR_CHECK_INTERVAL_S
            if paused_by_governor:
                self._stopping.wait(1)
                continue
            if self._stopping.is_set():
                break  # a poll sent during a drain could bring more messages than handlers
            sent_at = self.clock()
            try:
                response = self.receive_sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(10, capacity),
                    WaitTimeSeconds=self.settings.poll_wait,
                    VisibilityTimeout=int(first_lease),
                    MessageSystemAttributeNames=RECEIVE_ATTRIBUTES,
                    MessageAttributeNames=["All"],
                )
                failures = 0
            except Exception as error:
                outcome, code, message = classify_exception(error)
                if outcome is EntryOutcome.FATAL:
                    self._on_fatal(FatalSqsError("ReceiveMessage", code, message))
                    return
                failures += 1
                delay = min(20.0, 0.2 * 2**failures) * random.uniform(1.0, 1.25)
                level = logging.WARNING if is_throttling(code) else logging.ERROR
                logger.log(level, "ReceiveMessage failed (%s: %s); retrying in %.1f s", code, message, delay)
                self._stopping.wait(delay)
                continue
            messages = [
                Message.from_sqs(raw, self.queue_url, self.scheduler.add(raw["ReceiptHandle"], sent_at, first_lease))
                for raw in response.get("Messages", [])
            ]
            if messages and logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "received %s after %.3f s",
                    ", ".join(m.receipt_handle[:16] for m in messages),
                    self.clock() - sent_at,
                )
            if messages and self.clock() >= sent_at + first_lease:
                # The answer came after the lease it asked for ran out: another consumer may hold them now.
                logger.warning(
                    "ReceiveMessage answered after its %.0f s lease ran out; not running %d messages",
                    first_lease,
                    len(messages),
                )
                for late in messages:
                    self.scheduler.lapsed(late.lease)
                continue
            if messages and not self._ready.put(messages):
                # Received after shutdown began: hand them straight back.
                self._release_late(messages)
                return

    def _release_late(self, messages: list[Message]) -> None:
        """Release messages directly (the settler may be closed already)."""
        leases = [m.lease for m in messages]
        entries = [
            {"Id": str(i), "ReceiptHandle": lease.receipt_handle, "VisibilityTimeout": 0}
            for i, lease in enumerate(leases)
        ]
        try:
            response = self.sqs.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
            logger.info("released %d messages received after shutdown began", len(response.get("Successful", [])))
        except Exception as error:
            logger.warning("could not release %d messages received after shutdown began: %s", len(leases), error)
        for message in messages:
            self.scheduler.finish(message.lease, LeaseState.RELEASED)
            self.processor.record_released(message)

    def _capacity(self) -> int:
        """How many more messages to receive: enough to keep every handler busy, one batch ahead at most."""
        if len(self.scheduler) >= self.settings.max_in_flight:
            return 0
        with self._running_lock:
            outstanding = len(self._running) + len(self._ready)
        return min(2 * self.concurrency - outstanding, self.settings.max_in_flight - len(self.scheduler))

    def _queue_over_limit(self) -> bool:
        """In-flight governor: long-polling consumers never see OverLimit, so look before receiving."""
        try:
            attributes = self.control_sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
            )["Attributes"]
        except Exception as error:
            outcome, code, message = classify_exception(error)
            if outcome is EntryOutcome.FATAL:
                self._on_fatal(FatalSqsError("GetQueueAttributes", code, message))
                return True
            logger.warning("in-flight check failed (%s: %s); receiving anyway", code, message)
            return False
        in_flight = int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0))
        if in_flight >= self.settings.queue_in_flight_limit:
            logger.warning(
                "queue has %d in-flight messages (limit %d of the 120,000 quota): pausing receives",
                in_flight,
                self.settings.queue_in_flight_limit,
            )
            return True
        return False

    # -- handling ---------------------------------------------------------------------------------
    def _handle_loop(self) -> None:
        while True:
            message = self._ready.get()
            if message is None:
                return
            with self._running_lock:
                self._running[id(message)] = message
            failed = True
            try:
                failed = self.processor.process(message).retry
            except BaseException:  # process() settles and logs handler errors; this is a bug in sqslease
                logger.exception("processing message %s failed unexpectedly", message.message_id)
            finally:
                with self._running_lock:
                    del self._running[id(message)]
                    self.processed += 1
                later = self._ready.done(message, failed)
            if later:
                # FIFO: the group's later messages must not run before this one succeeds.
                logger.info(
                    "message group %s: message %s failed; releasing %d later messages of the group",
                    message.message_group_id,
                    message.message_id,
                    len(later),
                )
                with self._running_lock:
                    # Draining: released with the unstarted ones, once no poll drained with this one is open.
                    hold = self._stopping.is_set() and not self._released
                    if hold:
                        self._held_back += later
                if not hold:
                    if self._stopping.is_set():  # ready is closed: this thread has nothing else to do
                        time.sleep(max(0.0, self._release_at - self.clock()))
                    for other in later:
                        self.settler.change_visibility(other.lease, 0)
                        self.processor.record_released(other)


def main(argv: list[str] | None = None) -> int:
    """``python -m sqslease.worker``; see :func:`sqslease.worker_cli.main`."""
    from sqslease.worker_cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
