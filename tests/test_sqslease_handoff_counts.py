"""The worker's hand-offs between its threads, pinned as counts (the timings are in ``bench/runtime_bench.py``): a
full batch of deletes is sent by the thread that queued its tenth, not by a woken sender thread; the sender thread
is woken by the first settle after a quiet spell only, and sends what is left once it waited ``linger``; a retry of
a batch sent that way goes to the sender; the receiver waiting for room is woken once, however many handlers end
before it runs; a handler on a standard queue takes the pool's lock once a message (the end of one counted with the
start of the next).

The wake counts hold for the order the tests set: the next settles are queued once the sender waits, holding the
first, for its linger. A sender scheduled late (a loaded machine) can find a batch a queueing thread just took and
sleep again, to be woken by the next settle: then it wakes once a batch at most, which no count here pins."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from support.counting import CountingLock
from support.fakes import FakeSQS
from support.sqs_errors import client_error
from support.waiting import until, wait_for
from support.worker_threads import running_worker

from sqslease.emf import EmfLogger
from sqslease.handler_pool import HandlerPool
from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.settle_future import SettleFuture
from sqslease.settle_queue import SettleQueue

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


class WatchedWake(threading.Event):
    """A settle queue's wake event, recording each wait's bound (``None``: the sender sleeps until woken)."""

    def __init__(self) -> None:
        super().__init__()
        self.bounds: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.bounds.append(timeout)
        return super().wait(timeout)


@pytest.fixture
def wakes_watched(monkeypatch: pytest.MonkeyPatch) -> list[SettleQueue]:
    """Every settle queue made from now on waits on a :class:`WatchedWake` (set before its sender thread starts),
    listed here in the order made."""
    queues: list[SettleQueue] = []
    real_init = SettleQueue.__init__

    def init(self: SettleQueue, linger: float, takes_full: bool) -> None:
        real_init(self, linger, takes_full)
        self._wake = WatchedWake()
        queues.append(self)

    monkeypatch.setattr(SettleQueue, "__init__", init)
    return queues


def lingering(queues: list[SettleQueue]) -> bool:
    """The deletes' sender waits for its linger to end: it holds a delete, and nothing queued wakes it."""
    bounds = [q._wake.bounds for q in queues if q.takes_full]  # type: ignore[attr-defined]
    return bool(bounds) and bool(bounds[0]) and bounds[0][-1] is not None


class ThreadedSQS(FakeSQS):
    """``FakeSQS`` that records the name of the thread that sent each ``DeleteMessageBatch``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delete_threads: list[str] = []

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        self.delete_threads.append(threading.current_thread().name)
        return super().delete_message_batch(QueueUrl, Entries)


def test_full_batches_of_deletes_are_sent_by_the_thread_that_queued_them_and_the_sender_wakes_once(
    wakes_watched: list[SettleQueue],
) -> None:
    # GIVEN a settler that waits a minute for a batch to fill, its sender lingering with the first delete
    sqs = ThreadedSQS()
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=60)
    leases = [scheduler.add(f"rh-{i}", 0.0, 600) for i in range(25)]
    futures = [settler.delete(leases[0])]
    until(lambda: lingering(wakes_watched), 30, "the sender to linger")
    # WHEN this thread queues 24 more
    futures += [settler.delete(lease) for lease in leases[1:]]
    # THEN the two full batches were sent here, as their tenth was queued, and confirmed
    assert sqs.delete_threads == [threading.current_thread().name] * 2
    assert all(f.done() and f.result() for f in futures[:20])
    # AND the sender thread was woken once at most (by the first delete, if it slept by then), not per batch
    assert settler._queues["DeleteMessageBatch"].wakes <= 1
    # AND the 5 left are the sender's: sent at its close (its linger is a minute)
    assert not any(f.done() for f in futures[20:])
    settler.close(timeout=5)
    assert all(f.result(timeout=0) for f in futures[20:])
    assert sqs.delete_threads[2:] == ["sqslease-delete"]
    assert [len(entries) for _, _, entries in sqs.of("DeleteMessageBatch")] == [10, 10, 5]
    assert len(scheduler) == 0


def test_a_partial_batch_is_sent_by_the_sender_once_it_waited_the_linger() -> None:
    # GIVEN a settler lingering 20 ms
    sqs = ThreadedSQS()
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=0.02)
    # WHEN 3 deletes are queued
    futures = [settler.delete(scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(3)]
    # THEN the sender sends them, in one request, with no close to push it
    assert all(f.result(timeout=30) for f in futures)
    assert sqs.delete_threads == ["sqslease-delete"]
    assert [len(entries) for _, _, entries in sqs.of("DeleteMessageBatch")] == [3]
    settler.close(timeout=5)


def test_what_sqs_refused_of_a_batch_sent_by_its_queueing_thread_is_retried_by_the_sender() -> None:
    # GIVEN a settler whose first delete request is throttled
    sqs = ThreadedSQS().script("DeleteMessageBatch", "throttling")
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=0.02)
    # WHEN this thread queues a full batch
    futures = [settler.delete(scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(10)]
    # THEN its request went from here, and the sender sent the 10 again after their backoffs; all confirmed
    assert all(f.result(timeout=30) for f in futures)
    assert sqs.delete_threads[0] == threading.current_thread().name
    assert set(sqs.delete_threads[1:]) == {"sqslease-delete"}
    assert sum(len(entries) for _, _, entries in sqs.of("DeleteMessageBatch")) == 20
    assert len(scheduler) == 0
    settler.close(timeout=5)


def test_a_close_waits_for_a_batch_its_queueing_thread_sends_and_retries_what_sqs_refused_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a settler whose first delete request is held until the closing sender has seen it in flight, then
    # throttled
    gate, held = threading.Event(), threading.Event()
    real_idle = SettleQueue.idle

    def idle(self: SettleQueue) -> bool:
        busy = not real_idle(self)
        if busy and self._closing:
            gate.set()  # the closing sender found the batch still being sent
        return not busy

    def held_then_throttled() -> None:
        held.set()
        assert gate.wait(10), "the closing sender did not wait for the batch in flight"
        raise client_error("throttling", "DeleteMessageBatch")

    monkeypatch.setattr(SettleQueue, "idle", idle)
    sqs = ThreadedSQS().script("DeleteMessageBatch", held_then_throttled)
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=0.02)
    futures: list[SettleFuture] = []
    leases = [scheduler.add(f"rh-{i}", 0.0, 600) for i in range(10)]
    queueing = threading.Thread(target=lambda: futures.extend(settler.delete(lease) for lease in leases))
    queueing.start()
    assert held.wait(30)
    # WHEN the settler closes while that thread's request is in flight
    settler.close(timeout=30)
    queueing.join(timeout=30)
    # THEN the close waited for it, and its sender sent the refused 10 again: every delete confirmed
    assert all(f.result(timeout=0) for f in futures)
    assert sum(len(entries) for _, _, entries in sqs.of("DeleteMessageBatch")) == 20
    assert len(scheduler) == 0


def test_a_closed_settler_sends_no_batch_from_the_queueing_thread() -> None:
    # GIVEN a settler closed before its first delete (nothing queued after close is sent)
    sqs = ThreadedSQS()
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler)
    settler.close(timeout=1)
    # WHEN 10 deletes are queued: THEN none is sent, and each lease is still held (left to run out)
    futures = [settler.delete(scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(10)]
    assert sqs.of("DeleteMessageBatch") == [] and not any(f.done() for f in futures)
    assert len(scheduler) == 10 and all(lease.state is LeaseState.ACTIVE and lease.settling for lease in scheduler)


def test_a_delete_whose_lease_was_lost_while_queued_is_left_out_of_the_batch_its_queueing_thread_sends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a settler that waits a minute for a batch to fill, and 9 deletes queued, the 4th's lease then lost (the
    # heartbeat found its receipt handle rejected)
    sqs = ThreadedSQS()
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=60)
    leases = [scheduler.add(f"rh-{i}", 0.0, 600) for i in range(10)]
    futures = [settler.delete(lease) for lease in leases[:9]]
    scheduler.lost(leases[3])
    # WHEN this thread queues the tenth
    futures.append(settler.delete(leases[9]))
    # THEN it sent the batch, without the lost one, whose delete resolved to False with a warning naming it
    assert sqs.delete_threads == [threading.current_thread().name]
    assert [e["ReceiptHandle"] for e in sqs.of("DeleteMessageBatch")[0][2]] == [f"rh-{i}" for i in range(10) if i != 3]
    assert [f.result(timeout=0) for f in futures] == [i != 3 for i in range(10)]
    assert "delete of rh-3 unconfirmed and its receipt handle now rejected" in caplog.text
    assert leases[3].state is LeaseState.LOST and len(scheduler) == 0
    settler.close(timeout=5)


def test_a_worker_of_one_handler_sends_its_deletes_from_the_receivers_thread(
    wakes_watched: list[SettleQueue],
) -> None:
    # GIVEN a worker of one handler (run inline, on the receiver's thread), its settler lingering a minute (no
    # partial batch sent meanwhile, however slow the machine), its sender lingering with the first message's delete
    sqs = ThreadedSQS()
    done: list[str] = []
    with running_worker(sqs, URL, lambda body, message: done.append(body), concurrency=1) as worker:
        worker.settler.linger = 60  # before its first delete: its sender's queue takes it then
        sqs.add("b0")
        until(lambda: lingering(wakes_watched), 30, "the sender to linger")
        # WHEN it runs 99 more messages
        sqs.add(*(f"b{i}" for i in range(1, 100)))
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 100, timeout_s=30)
        # THEN every request was a full batch, sent by the thread that ran its messages: no hand-off to the sender,
        # woken once at most (by the first delete, if it slept by then)
        assert sqs.delete_threads == ["sqslease-receiver"] * 10
        assert worker.settler._queues["DeleteMessageBatch"].wakes <= 1
    assert len(done) == 100


class GatedEvent(threading.Event):
    """The receiver's room event, counting its sets; its wait returns only once ``gate`` opens (a receiver not
    scheduled yet while handlers end their messages)."""

    def __init__(self) -> None:
        super().__init__()
        self.sets = 0
        self.gate = threading.Event()

    def set(self) -> None:
        self.sets += 1
        super().set()

    def wait(self, timeout: float | None = None) -> bool:
        self.gate.wait(timeout)
        return super().wait(0)


def test_the_receiver_waiting_for_room_is_woken_once_however_many_handlers_end_before_it_runs() -> None:
    # GIVEN a pool of 4 handlers, each running a message that waits for its own gate
    gates = [threading.Event() for _ in range(4)]
    started: list[str] = []

    def gated(body: str, message: Message) -> None:
        started.append(body)
        gates[int(body)].wait(30)

    scheduler = LeaseScheduler()
    settler = Settler(FakeSQS(), URL, scheduler)
    settings = LeaseSettings(job_type="Counted")
    processor = MessageProcessor(gated, settler, settings, FakeSQS(), EmfLogger(io.StringIO()), queue_name="jobs")
    pool = HandlerPool(processor, settler, fifo=False, stopping=threading.Event(), clock=lambda: 0.0)
    pool._room = room = GatedEvent()
    pool.start(4)
    pool.put([Message(f"m{i}", f"rh-{i}", str(i), URL, scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(4)])
    assert wait_for(lambda: len(started) == 4, timeout_s=30)
    # AND a receiver waiting for at most 2 outstanding, not yet run
    waiter = threading.Thread(target=pool.wait_for_room, args=(2, 30))
    waiter.start()
    assert wait_for(lambda: pool._room_at == 2, timeout_s=30)
    # WHEN the 4 handlers end their messages, one after another
    for i, gate in enumerate(gates):
        gate.set()
        assert wait_for(lambda i=i: pool.processed == i + 1, timeout_s=30)
    # THEN the receiver was woken once (at 2 outstanding), not once per handler that ended at 2 or fewer
    assert room.sets == 1
    room.gate.set()
    waiter.join(timeout=30)
    pool.take_unstarted()
    pool.join(until=5)
    settler.close(timeout=5)


def counted_pool(sqs: FakeSQS, ran: list[str]) -> tuple[HandlerPool, CountingLock, LeaseScheduler]:
    """A pool of a standard queue whose running table's lock counts its acquisitions."""
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=60)
    settings = LeaseSettings(job_type="Counted")
    processor = MessageProcessor(
        lambda body, message: ran.append(body), settler, settings, sqs, EmfLogger(io.StringIO()), queue_name="jobs"
    )
    pool = HandlerPool(processor, settler, fifo=False, stopping=threading.Event(), clock=lambda: 0.0)
    pool._running_lock = lock = CountingLock()
    return pool, lock, scheduler


def ten_messages(scheduler: LeaseScheduler) -> list[Message]:
    return [Message(f"m{i}", f"rh-{i}", f"b{i}", URL, scheduler.add(f"rh-{i}", 0.0, 600)) for i in range(10)]


def test_a_pool_run_inline_takes_its_lock_once_a_message_and_once_for_the_last_end() -> None:
    # GIVEN an inline pool (one handler on a standard queue: the receiver's thread runs each batch) and 10 messages
    ran: list[str] = []
    pool, lock, scheduler = counted_pool(FakeSQS(), ran)
    pool.start(1, inline=True)
    pool.runs_on(threading.current_thread())
    pool.put(ten_messages(scheduler))
    # WHEN this thread runs them
    pool.run_inline()
    # THEN the pool's lock was taken 11 times (before: 20, a start and an end each): each start counted the end
    # before it, and the last end was counted before the receiver polls again (its room)
    assert ran == [f"b{i}" for i in range(10)]
    assert lock.acquired == 11
    assert pool.processed == 10 and pool.outstanding() == 0 and pool.still_running() == []


def test_a_handler_thread_takes_the_pools_lock_once_a_message_and_ends_its_last_before_it_receives() -> None:
    # GIVEN a pool of one handler thread that receives (its receive finds nothing), 10 messages waiting
    ran: list[str] = []
    receives: list[int] = []
    pool, lock, scheduler = counted_pool(FakeSQS(), ran)

    def receive() -> bool:
        receives.append(len(pool._running))  # what it still counts as running when it would poll
        return False

    pool.put(ten_messages(scheduler))
    # WHEN it runs them, then finds nothing and would receive
    pool.start(1, receive=receive)
    assert wait_for(lambda: bool(receives), timeout_s=30)
    # THEN it took the pool's lock 11 times (before: 20), and its last message's end was counted before it would
    # poll: no message counted as running, so its room is whole
    assert ran == [f"b{i}" for i in range(10)]
    assert lock.acquired == 11
    assert receives == [0] and pool.processed == 10
    pool.close()


def test_the_benchmarks_fake_that_keeps_no_record_still_counts_every_call_and_entry() -> None:
    # GIVEN the benchmark's fake without its call record (bench/runtime_bench.py: a record keeps every message alive)
    sqs = FakeSQS(poll_s=0.01, record=False)
    sqs.add(*(f"b{i}" for i in range(30)))
    done: list[str] = []
    # WHEN a worker of two handlers runs its 30 messages
    with running_worker(sqs, URL, lambda body, message: done.append(body), concurrency=2):
        assert wait_for(lambda: sqs.count("DeleteMessageBatch", entries=True) == 30, timeout_s=30)
    # THEN the counts are the calls made, and nothing of them was kept
    assert sorted(done) == sorted(f"b{i}" for i in range(30))
    assert sqs.count("ReceiveMessage") >= 3 and sqs.count("ReceiveMessage", entries=True) == sqs.count("ReceiveMessage")
    assert 3 <= sqs.count("DeleteMessageBatch") <= 30 and sqs.calls == []
