"""Where the worker's CPU per message goes: each part of its work timed alone, on one thread, per message.

What the parts do not add up to of the worker's measured cost is what no part covers: its threads' hand-offs
(thread wakes, GIL switches, lock contention) and their waits, the handler loop's own calls, the pool's bookkeeping
a message (its running table, for the watchdog and the drain) and a receive's (the turn, the room, the hand-over).
``handoff_free_us`` measures the floor: the handler path with no hand-off at all. Used by ``bench/runtime_bench.py``.
"""

from __future__ import annotations

import collections
import gc
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from support.fakes import FakeSQS

from sqslease.attempt import Attempt
from sqslease.emf import EmfLogger
from sqslease.emf_writer import LineWriter
from sqslease.handler_pool import runs_inline
from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.settle_future import SettleFuture
from sqslease.settle_sender import SettleItem

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/bench"
BATCH = 10


class _NoLine:
    """A processor's EMF lines, not written: the line is timed on its own."""

    def emit(self, *fields: Any) -> None:
        return None


def _us_per_message(run: Callable[[Any], int], rounds: int, batches: int, prepare: Callable[[], Any] = list) -> float:
    """Median over ``rounds`` of the CPU per message of ``batches`` calls of ``run(prepare())`` (which returns its
    messages); ``prepare`` is not timed."""
    results = []
    for _ in range(rounds):
        spent, done = 0.0, 0
        for _ in range(batches):
            data = prepare()
            started = time.process_time()
            done += run(data)
            spent += time.process_time() - started
        results.append(spent / done * 1e6)
    return statistics.median(results)


def worker_parts(
    rounds: int = 5, batches: int = 300, per_receive: int = BATCH, record: bool = True
) -> dict[str, float]:
    """Microseconds per message of each part of the worker's work on a no-op handler, each on its own; the receive
    request and the lease and ``Message`` objects of ``per_receive`` messages a receive (default 10: the hand
    loop's), the rest of batches of 10 (the worker deletes 10 a request). ``record``: the fake keeps its calls
    (``FakeSQS(record=...)``). Default True."""
    sqs = FakeSQS(poll_s=0, record=record)
    settings = LeaseSettings(job_type="Bench")
    devnull = open(os.devnull, "w")
    scheduler = LeaseScheduler()
    quiet = Settler(sqs, URL, scheduler)
    quiet._closed = True  # deletes queue up without a sender thread: the queueing alone is timed
    processor = MessageProcessor(
        lambda body, message: None,
        quiet,
        settings,
        sqs,
        EmfLogger(devnull),
        queue_name="bench",
        delete_on_success=False,
    )
    processor.lines = _NoLine()  # type: ignore[assignment]
    line_logger = EmfLogger(devnull)
    lines = LineWriter(line_logger, "Bench", "bench", deferred=True)  # as the worker's: held, written a batch at once

    def loaded(count: int = BATCH) -> None:
        sqs.add(*(f"b{i}" for i in range(count)))

    def received(count: int = BATCH) -> list[dict[str, Any]]:
        loaded(count)
        return receive(count)

    def receive(count: int = BATCH) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = sqs.receive_message(
            QueueUrl=URL,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=20,
            VisibilityTimeout=30,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
            MessageAttributeNames=["All"],
        )["Messages"]
        return messages

    def messages_of(raw: list[dict[str, Any]]) -> list[Message]:
        leases = scheduler.add_all([r["ReceiptHandle"] for r in raw], time.monotonic(), 30)
        return [Message.from_sqs(r, URL, lease) for r, lease in zip(raw, leases, strict=True)]

    def delete_request(raw: list[dict[str, Any]]) -> int:
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(raw)]
        sqs.delete_message_batch(QueueUrl=URL, Entries=entries)
        return len(raw)

    pool = [received() for _ in range(20)]
    k = per_receive
    parts = {
        f"FakeSQS receive request, its share of {k}": _us_per_message(
            lambda _: len(receive(k)), rounds, batches, lambda: loaded(k)
        ),
        "FakeSQS delete request, its share of 10": _us_per_message(delete_request, rounds, batches, received),
        f"lease and Message objects, {k} a receive": _us_per_message(
            lambda raw: len(messages_of(raw)), rounds, batches, lambda: received(k)
        ),
    }
    ready = [messages_of(raw) for raw in pool]

    def process(_: object) -> int:
        for message in ready[0]:
            processor.process(message, Attempt(message, time.monotonic()))
        return BATCH

    def line(_: object) -> int:
        for message in ready[0]:
            lines.emit(message.message_id, 0.0042, "success", 1, 0, False, None, 12.5)
        line_logger.flush()  # as before the batch's delete request: the 10 lines in one write
        return BATCH

    parts["process(): attempt, hooks (OpenTelemetry idle), settle choice"] = _us_per_message(process, rounds, batches)
    parts["the EMF line (held; one write and flush of 10 to /dev/null)"] = _us_per_message(line, rounds, batches)

    def queue_deletes(messages: list[Message]) -> int:
        for message in messages:
            quiet.delete(message.lease)
        return len(messages)

    parts["delete queued: lease claim, future, queue"] = _us_per_message(
        queue_deletes, rounds, batches // 3, lambda: messages_of(pool[1])
    )

    def claimed() -> list[SettleItem]:
        batch = [SettleItem(m.lease, None, LeaseState.DELETED, SettleFuture()) for m in messages_of(received())]
        for item in batch:
            scheduler.begin_delete(item.lease)
        return batch

    def send(batch: list[SettleItem]) -> int:
        quiet._send(batch, "DeleteMessageBatch")
        return len(batch)

    parts["delete sent: its request and the sender's bookkeeping"] = _us_per_message(send, rounds, batches, claimed)
    devnull.close()
    return parts


def parts_sums(per_receive: int, rounds: int = 1, record: bool = True) -> tuple[float, float]:
    """The sum of the worker's parts, as :func:`print_breakdown` counts them (us per message, ``per_receive``
    messages a receive), and the same less the receive and the leases (its handler path's: the floor's parts).
    ``record``: the fake keeps its calls. Default True."""
    parts = worker_parts(rounds, per_receive=per_receive, record=record)
    work = sum(parts.values()) - parts["FakeSQS delete request, its share of 10"]  # sent: its request and bookkeeping
    return work, work - sum(v for name, v in parts.items() if name.startswith(("FakeSQS receive", "lease and")))


def print_breakdown(worker_us: float, hand_us: float, rounds: int = 5, per_receive: int = BATCH) -> dict[str, float]:
    """Print the parts beside the worker's and the hand loop's measured cost (same run). The receive request and the
    lease and ``Message`` objects are timed at ``per_receive`` messages a receive, the worker's own (its prefetch of
    its handlers plus one batch ahead: 2 at concurrency 1), and the ratio is also printed with them at the hand
    loop's 10."""
    parts = worker_parts(rounds, per_receive=per_receive)
    parts["delete sent: the sender's bookkeeping"] = (
        parts.pop("delete sent: its request and the sender's bookkeeping")
        - parts["FakeSQS delete request, its share of 10"]
    )
    print(
        f"      the worker's parts, each alone on one thread (us per message; {per_receive} a receive, as it received):"
    )
    for name, value in parts.items():
        print(f"         {value:6.2f}  {name}")
    work = sum(parts.values())
    print(f"         {work:6.2f}  sum of the parts")
    print(
        f"         {worker_us - work:6.2f}  the rest of the worker's {worker_us:.1f}, which no part covers: hand-offs, "
        f"waits, the handler loop's and the receive's own calls "
        f"(the hand loop: {hand_us:.1f})"
    )
    print(f"      the worker's cost over the sum of its parts: {worker_us / work:.2f}x")
    if per_receive != BATCH:
        ten = worker_parts(rounds, per_receive=BATCH)
        ten.pop("delete sent: its request and the sender's bookkeeping")
        ten_work = sum(ten.values()) + parts["delete sent: the sender's bookkeeping"]
        print(f"      the same with the receive counted at 10 a request (the hand loop's): {worker_us / ten_work:.2f}x")
    return parts


def handoff_free_us(make_worker: Callable[[FakeSQS, int], Any], concurrency: int, messages: int) -> float:
    """CPU per message (us) of the worker's handler path alone: ``messages`` received and leased beforehand (not
    timed), then run by ``concurrency`` threads that each take the next straight from a shared list through the
    handler pool's own path (process, EMF line, delete queued and sent): no receiver, no ready queue, no wait. What
    its threads cost with no hand-off between them: the floor of the worker's cost on those parts."""
    sqs = FakeSQS(poll_s=0)
    sqs.add(*(f"b{i}" for i in range(messages)))
    worker = make_worker(sqs, concurrency)
    if not runs_inline(concurrency, fifo=False):  # as the worker's own pool: only an inline one lets the GIL go
        worker.handlers._yield_at = float("inf")
    raw: list[dict[str, Any]] = []
    while len(raw) < messages:
        raw += sqs.receive_message(QueueUrl=URL, MaxNumberOfMessages=BATCH, WaitTimeSeconds=20, VisibilityTimeout=300)[
            "Messages"
        ]
    leases = worker.scheduler.add_all([m["ReceiptHandle"] for m in raw], time.monotonic(), 300)
    waiting = collections.deque(Message.from_sqs(m, URL, lease) for m, lease in zip(raw, leases, strict=True))

    def run() -> None:
        me, handle, ended = threading.current_thread(), worker.handlers._handle, None
        while waiting:
            try:
                message = waiting.popleft()
            except IndexError:
                break
            ended = handle(message, me, ended)  # its end counted with the next start, as the pool's loops do
        if ended is not None:
            worker.handlers._ended(ended, me)

    threads = [threading.Thread(target=run) for _ in range(concurrency)]
    gc.collect()
    started = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    worker.settler.close(timeout=30)  # what is left of the deletes (under a batch) sent, as the worker would
    spent = time.process_time() - started
    assert sqs.count("DeleteMessageBatch", entries=True) == messages, "not every message was deleted"
    return spent / messages * 1e6
