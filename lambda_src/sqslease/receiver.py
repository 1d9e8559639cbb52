"""The worker's receive loop: long polls sized to the free handlers, the in-flight governor, late answers.

One poll is in flight at a time (the lock a drain waits for): the receive loop's, or, when the handlers receive
(:func:`sqslease.handler_pool.handlers_receive`), that of a handler with nothing to run; the loop then polls only
when they cannot, and hands the polling back with the first messages it receives.

A lease is timed from when ReceiveMessage was sent (see :attr:`sqslease.settings.LeaseSettings.poll_wait`): an
answer that comes after the lease it asked for ran out is not run, since another consumer may hold its messages.
Messages a poll brings after shutdown began are never started: held for the drain's release point, or released
at once if that has passed.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from sqslease.handler_pool import HandlerPool
from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.retry import EntryOutcome, FatalSqsError, classify_exception, is_throttling
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

#: AWSTraceHeader: the producer's X-Ray trace context, which the OpenTelemetry span links to (sqslease.otel).
RECEIVE_ATTRIBUTES = [
    "ApproximateReceiveCount",
    "SentTimestamp",
    "MessageGroupId",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
]
#: Seconds the receiver waits for handlers to make room for a batch before it receives what there is room for.
ROOM_WAIT_S = 0.02
#: Seconds (clock) between two looks at the queue's in-flight count.
GOVERNOR_CHECK_INTERVAL_S = 10
#: Seconds the receive loop of handlers that receive sleeps at most between two looks at the stop flag.
IDLE_LOOK_S = 1.0


class Receiver:
    """Receives for one worker until ``stopping`` is set, and hands the messages to its handlers.

    :param sqs: the lease client (releases of messages received after shutdown began).
    :param receive_sqs: the client for long polls.
    :param control_sqs: the client for the in-flight governor.
    :param concurrency: the worker's handlers: it receives at most one batch ahead of them.
    :param on_fatal: called with a :class:`FatalSqsError` (access denied, missing queue, unusable KMS key).
    """

    def __init__(
        self,
        *,
        sqs: Any,
        receive_sqs: Any,
        control_sqs: Any,
        queue_url: str,
        settings: LeaseSettings,
        scheduler: LeaseScheduler,
        handlers: HandlerPool,
        processor: MessageProcessor,
        concurrency: int,
        stopping: threading.Event,
        on_fatal: Callable[[FatalSqsError], None],
        clock: Callable[[], float],
    ) -> None:
        self.sqs = sqs
        self.receive_sqs = receive_sqs
        self.control_sqs = control_sqs
        self.queue_url = queue_url
        self.settings = settings
        self.scheduler = scheduler
        self.handlers = handlers
        self.processor = processor
        self.concurrency = concurrency
        #: Messages a receive waits (at most ROOM_WAIT_S) to have room for: a full batch, or one more than the
        #: handlers, so that a worker of 1 to 4 handlers receives for all of them at once, not one by one.
        self._batch = min(10, concurrency + 1)
        self._stopping = stopping
        self._on_fatal = on_fatal
        self.clock = clock
        #: Held while a poll is in flight (sent, not yet handed over): what a drain waits for. A lock, not an
        #: event: taken and let go once a poll, it costs no condition.
        self._polling = threading.Lock()
        self._wanted = threading.Event()  # the handlers that receive cannot: this loop polls (handlers_receive)
        self._failures = 0  # failed receives in a row
        self._backoff = 0.0  # seconds the receive loop waits before it polls again, after a failed receive
        self._next_governor_check = 0.0
        self._paused_by_governor = False
        # Derived from the (frozen) settings once, not a poll: each is a property, first_lease read twice
        self._first_lease, self._poll_wait = settings.first_lease, settings.poll_wait

    def start(self) -> threading.Thread:
        """Run the receive loop in a daemon thread (which runs the messages too when the handlers run inline:
        :meth:`sqslease.handler_pool.HandlerPool.run_inline`); returns the thread."""
        thread = threading.Thread(target=self.run, name="sqslease-receiver", daemon=True)
        if self.handlers.inline:
            self.handlers.runs_on(thread)
        thread.start()
        return thread

    def wait_for_poll(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the long poll in flight, if any (the receiver's or a handler's), to
        be answered and its messages handed over; False if it still is not. A drain waits for it rather than abandon
        it (SQS would go on with it and hide what it finds); the thread may go on running messages (inline handlers)
        meanwhile."""
        if not self._polling.acquire(timeout=timeout):
            return False
        self._polling.release()
        return True

    def run(self) -> None:
        """Receive until the worker stops (or a fatal error), handing each poll's messages to the handlers. When the
        handlers receive (:meth:`receive_for_handler`), this loop polls only once they cannot (no room, the
        governor, a failed receive) or none is left to (every one running, nothing waiting: the batch ahead), and
        until a poll brings messages."""
        first_lease, poll_wait = self._first_lease, self._poll_wait
        relay = self.handlers.receive is not None  # handlers receive: this loop polls when they want it to
        wanted = not relay
        while not self._stopping.is_set():
            if not wanted:
                self.handlers.wake_when_busy(self._wanted)
                wanted = self._wanted.wait(IDLE_LOOK_S)
                continue
            if self._backoff:
                self._stopping.wait(self._backoff)
                self._backoff = 0.0
                continue
            capacity, batch = self._capacity(), 1 if relay else self._batch  # relay: what there is room for now
            if capacity < batch:  # wait for room for a batch (or ROOM_WAIT_S), then take what there is
                self.handlers.wait_for_room(2 * self.concurrency - batch, ROOM_WAIT_S)
                capacity = self._capacity()
            if capacity <= 0:
                if len(self.scheduler) >= self.settings.max_in_flight:
                    self._stopping.wait(ROOM_WAIT_S)  # the leases held, not the handlers, leave no room: no wake
                continue
            if self._governor_paused():
                self._stopping.wait(1)
                continue
            with self._polling:  # taken before the look at stopping: a drain that finds it taken waits for the poll
                received = self._poll(capacity, first_lease, poll_wait, relay)
                if received and relay:  # a handler it woke polls next (handed the turn under the turn)
                    self._wanted.clear()
                    wanted = False
            if received is None:
                return
            self.handlers.run_inline()

    def receive_for_handler(self) -> bool:
        """A handler found nothing to run: once the poll in flight, if any, is over, receive on its thread unless
        messages came meanwhile, the worker stops, or this loop must poll instead (no room, the governor, a failed
        receive: it is woken). True if the handler should look at the ready queue again (messages came, or its
        poll was answered empty: it polls again); False if it should wait for a hand-over."""
        with self._polling:
            if self._stopping.is_set() or self._wanted.is_set():
                return False
            if self.handlers.waiting():
                return True
            capacity = self._capacity()
            if capacity <= 0 or self._backoff or self._governor_paused():
                self._wanted.set()
                return False
            return self._poll(capacity, self._first_lease, self._poll_wait) is not None

    def _poll(self, capacity: int, first_lease: float, poll_wait: int, relay: bool = False) -> int | None:
        """One poll, ``self._polling`` held: its messages handed over (``relay``: a waiting handler more is woken,
        to poll next). Returns how many; None when the worker stops receiving (stopping, a fatal error, or messages
        received after shutdown began: released)."""
        if self._stopping.is_set():
            return None  # a poll sent during a drain could bring more messages than handlers
        sent_at = self.clock()
        try:
            response = self.receive_sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(10, capacity),
                WaitTimeSeconds=poll_wait,
                VisibilityTimeout=int(first_lease),
                MessageSystemAttributeNames=RECEIVE_ATTRIBUTES,
                MessageAttributeNames=["All"],
            )
        except Exception as error:
            self._failures += 1
            if not self._receive_failed(error, self._failures):
                return None
            return 0
        self._failures = 0
        return self._hand_over(response.get("Messages", []), sent_at, first_lease, relay)

    def _governor_paused(self) -> bool:
        """Whether the in-flight governor pauses receives (its look every GOVERNOR_CHECK_INTERVAL_S)."""
        now = self.clock()
        if now >= self._next_governor_check:
            self._paused_by_governor = self._queue_over_limit()
            self._next_governor_check = now + GOVERNOR_CHECK_INTERVAL_S
        return self._paused_by_governor

    def _receive_failed(self, error: Exception, failures: int) -> bool:
        """A ReceiveMessage failed (the ``failures``-th in a row): False on a fatal error (reported), else True, its
        backoff set: the receive loop waits it out (or until the worker stops) before it polls again."""
        outcome, code, message = classify_exception(error)
        if outcome is EntryOutcome.FATAL:
            self._on_fatal(FatalSqsError("ReceiveMessage", code, message))
            return False
        delay = min(20.0, 0.2 * 2**failures) * random.uniform(1.0, 1.25)
        level = logging.WARNING if is_throttling(code) else logging.ERROR
        logger.log(level, "ReceiveMessage failed (%s: %s); retrying in %.1f s", code, message, delay)
        self._backoff = delay
        return True

    def _hand_over(self, received: list[dict[str, Any]], sent_at: float, first_lease: float, relay: bool) -> int | None:
        """Hand a poll's messages to the handlers (or not, if its answer came after the lease it asked for ran out);
        returns how many. None when the poll came after shutdown began: its messages were released, and the receive
        loop ends."""
        # One lock for the batch's leases, not one per message.
        leases = self.scheduler.add_all([raw["ReceiptHandle"] for raw in received], sent_at, first_lease)
        messages = [Message.from_sqs(r, self.queue_url, lease) for r, lease in zip(received, leases, strict=True)]
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
            return 0
        if messages and not self.handlers.put(messages, relay):
            # Received after shutdown began: hand them straight back.
            self._release_late(messages)
            return None
        return len(messages)

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
        room = self.settings.max_in_flight - len(self.scheduler)
        if room <= 0:
            return 0
        return min(2 * self.concurrency - self.handlers.outstanding(), room)

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
