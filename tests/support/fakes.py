"""A scripted SQS client, a clock and a Lambda context for deterministic unit tests (no network, no moto).

The clock moves only when a test moves it, so every deadline (a lease, a drain's release point, a Lambda
invocation's remaining time) passes exactly when the test says. Threads still run in real time: a test waits for
what they do with :func:`support.waiting.wait_for`, with generous bounds. To show that something did *not* happen,
a test waits for the thread that would have done it to go round its loop (:meth:`FakeClock.await_reads`), never
for a while.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from support.sqs_errors import client_error
from support.waiting import wait_for


class FakeClock:
    """A monotonic clock (seconds) that moves only when told to (``clock.now = ...``, or :meth:`sleep`). It counts who
    reads it, by thread name (:meth:`reads`), and knows whether it moved since a thread last read it
    (:meth:`moved_since_read`)."""

    def __init__(self, now: float = 0.0) -> None:
        self._now = now
        self._moves = 0
        self._lock = threading.Lock()
        self._reads: collections.Counter[str] = collections.Counter()
        self._seen: dict[int, int] = {}  # thread id -> the moves counted when it last read the clock

    @property
    def now(self) -> float:
        return self._now

    @now.setter
    def now(self, value: float) -> None:
        with self._lock:
            self._now = value
            self._moves += 1

    def __call__(self) -> float:
        with self._lock:
            self._reads[threading.current_thread().name] += 1
            self._seen[threading.get_ident()] = self._moves
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            self._moves += 1

    def reads(self, thread_name: str) -> int:
        """How many times threads named ``thread_name`` (e.g. ``sqslease-watchdog``) read the clock."""
        with self._lock:
            return self._reads[thread_name]

    def moved_since_read(self) -> bool:
        """Whether the clock moved since the calling thread last read it: a request it sends now was decided on a
        time that has passed (as if the request had been delayed in the network that long)."""
        with self._lock:
            seen = self._seen.get(threading.get_ident())
            return seen is not None and seen != self._moves

    def await_reads(self, thread_name: str, count: int = 2, timeout_s: float = 20) -> bool:
        """Wait until threads named ``thread_name`` read the clock ``count`` more times (True), or ``timeout_s``
        seconds (False). A thread that reads it once a round (the watchdog, the receiver, a drain waiting for its
        release point) has then gone round ``count - 1`` whole rounds that began after this call."""
        seen = self.reads(thread_name)
        return wait_for(lambda: self.reads(thread_name) >= seen + count, timeout_s)


class FakeSQS:
    """An SQS client stand-in that records every call (time on ``clock``) and answers per a script.

    ``script(operation, *actions)`` queues what the next calls of ``operation`` do: ``"ok"``, an
    ``SQS_ERRORS`` kind (raised as the real ``ClientError``), ``"timeout"`` (a botocore ``ReadTimeoutError``), a
    ``threading.Event`` to wait for (a held request) before answering ok, or a callable run before answering
    (e.g. one that moves the clock: an answer that comes late). Unscripted calls succeed.

    Receiving: :meth:`add` makes messages visible; ``receive_message`` hands them out in order, each delivery
    with a new receipt handle, and answers an empty long poll after ``poll_s`` real seconds (not its
    ``WaitTimeSeconds``). Nothing becomes visible again by itself: tests look at the calls.
    ``get_queue_attributes`` reports ``in_flight`` as ``ApproximateNumberOfMessagesNotVisible``;
    ``send_message`` (a DLQ send) is recorded in ``calls``.

    ``record=False`` keeps no call and no answered message, only :meth:`count`'s counts: a benchmark's fake, whose
    record would keep every message of a run alive (SQS's answers are dropped once read). Default True.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, poll_s: float = 0.02, *, record: bool = True
    ) -> None:
        self.clock = clock
        self.poll_s = poll_s
        self.record = record
        self.calls: list[tuple[float, str, list[dict]]] = []
        self._counts: collections.Counter[str] = collections.Counter()  # calls by operation
        self._entry_counts: collections.Counter[str] = collections.Counter()  # their entries, by operation
        self.queue_urls: set[str] = set()  # every QueueUrl a call named
        self.in_flight = 0
        self._script: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self._visible: collections.deque[dict[str, Any]] = collections.deque()
        self._deliveries = itertools.count(1)
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)

    def script(self, operation: str, *actions: Any) -> FakeSQS:
        self._script[operation].extend(actions)
        return self

    def of(self, operation: str) -> list[tuple[float, str, list[dict]]]:
        with self._lock:
            return [c for c in self.calls if c[1] == operation]

    def count(self, operation: str, entries: bool = False) -> int:
        """How many ``operation`` calls were made (``entries``: how many entries they held), recorded or not."""
        with self._lock:
            return (self._entry_counts if entries else self._counts)[operation]

    def releases(self) -> list[tuple[float, str]]:
        """(clock, receipt handle) of every release: a visibility change to 0."""
        return [
            (at, entry["ReceiptHandle"])
            for at, _, entries in self.of("ChangeMessageVisibilityBatch")
            for entry in entries
            if entry["VisibilityTimeout"] == 0
        ]

    def entries(self, operation: str) -> list[dict]:
        """Every entry of every ``operation`` call, in order (for a receive or a send: its parameters)."""
        return [entry for _, _, entries in self.of(operation) for entry in entries]

    def add(
        self,
        *bodies: str,
        group: str | None = None,
        receive_count: int = 1,
        system_attributes: dict[str, str] | None = None,
        message_attributes: dict[str, dict[str, str]] | None = None,
        sent_ms: int | None = None,
    ) -> list[str]:
        """Make messages visible; returns their message ids (``m-<body>``). ``system_attributes`` (e.g.
        ``AWSTraceHeader``) and ``message_attributes`` (boto3's shape) are handed out with each; ``sent_ms``: their
        ``SentTimestamp`` (wall clock, ms since the epoch). Default: now."""
        sent = str(int(time.time() * 1000) if sent_ms is None else sent_ms)
        with self._arrived:
            for body in bodies:
                attributes = {
                    "ApproximateReceiveCount": str(receive_count),
                    "SentTimestamp": sent,
                    **(system_attributes or {}),
                }
                if group is not None:
                    attributes["MessageGroupId"] = group
                message = {"MessageId": f"m-{body}", "Body": body, "Attributes": attributes}
                if message_attributes:
                    message["MessageAttributes"] = dict(message_attributes)
                self._visible.append(message)
            self._arrived.notify_all()
        return [f"m-{body}" for body in bodies]

    def handle_of(self, body: str) -> list[str]:
        """The receipt handles the message ``body`` was delivered with, in order."""
        return [
            m["ReceiptHandle"]
            for params in self.entries("ReceiveMessage")
            for m in params.get("_answered", [])
            if m["Body"] == body
        ]

    # -- the client's methods -----------------------------------------------------------------------
    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        return self._call("ChangeMessageVisibilityBatch", Entries, QueueUrl)

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        return self._call("DeleteMessageBatch", Entries, QueueUrl)

    def receive_message(self, **params: Any) -> dict:
        record: dict[str, Any] = {**params, "_answered": []} if self.record else params  # kept: filled in below
        self._call("ReceiveMessage", [record], params["QueueUrl"])
        with self._arrived:
            if not self._visible:
                self._arrived.wait(self.poll_s)
            taken = [self._visible.popleft() for _ in range(min(params["MaxNumberOfMessages"], len(self._visible)))]
        messages = [{**m, "ReceiptHandle": f"rh-{m['Body']}-{next(self._deliveries)}"} for m in taken]
        if self.record:
            record["_answered"].extend(messages)
        return {"Messages": messages} if messages else {}

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict:
        self._call("GetQueueAttributes", [{"QueueUrl": QueueUrl}], QueueUrl)
        return {"Attributes": {"ApproximateNumberOfMessagesNotVisible": str(self.in_flight)}}

    def send_message(self, **request: Any) -> dict:
        self._call("SendMessage", [request], request["QueueUrl"])
        return {"MessageId": f"dlq-{request['MessageBody']}"}

    def _call(self, operation: str, entries: list[dict], queue_url: str) -> dict:
        with self._lock:
            self.queue_urls.add(queue_url)
            self._counts[operation] += 1
            self._entry_counts[operation] += len(entries)
            if self.record:
                self.calls.append((self.clock(), operation, [e if "_answered" in e else dict(e) for e in entries]))
            action = self._script[operation].popleft() if self._script[operation] else "ok"
        if isinstance(action, threading.Event):
            action.wait(10)
        elif callable(action):
            action()
        elif action == "timeout":
            from botocore.exceptions import ReadTimeoutError

            raise ReadTimeoutError(endpoint_url="http://fake")
        elif action != "ok":
            raise client_error(action, operation)
        return {"Successful": [{"Id": e["Id"]} for e in entries if "Id" in e], "Failed": []}


class FakeContext:
    """Lambda's context object: only the remaining-time clock matters. ``seconds`` left at creation, on ``clock``
    (default the real monotonic clock; a :class:`FakeClock` makes the deadline exact)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.deadline = clock() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self.deadline - self.clock()) * 1000)
