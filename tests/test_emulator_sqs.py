"""The emulator's SQS: a received message is hidden from every other receive, and a FIFO group comes back in order.

moto checks that a message is visible, then marks it received, with no lock between; moto_server serves
requests on threads, so two concurrent ReceiveMessage calls could both take one message. The fault fleet hit
this once (two workers started one job 11 ms apart, each with a fresh lease). These tests drive moto's SQS
backend in-process with the window between check and mark held open until every receive has checked (or, where
the patch's lock keeps the others out, for a second), without and with the emulator's patch.
A FIFO group whose leases all ran out must come back from its first message, as in SQS; moto alone starts
from its last (moto's clock moved past the leases, not waited for).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import moto.sqs.models
import pytest
from moto.sqs.models import Message, Queue, SQSBackend

from jobqueues.emulator.patches.sqs import (
    make_fifo_redelivery_ordered,
    make_retention_check_constant_time,
    make_sqs_receives_atomic,
)

RECEIVERS = 4


def hold_marks(monkeypatch: pytest.MonkeyPatch, window_s: float) -> None:
    """Widen the window between moto's visibility check and its mark: each mark waits until all
    :data:`RECEIVERS` receives have reached theirs (each saw the message visible), or ``window_s`` seconds."""
    original = Message.mark_received
    checked = threading.Barrier(RECEIVERS)

    def mark_received(self: Message, visibility_timeout: int | None = None) -> None:
        try:
            checked.wait(window_s)
        except threading.BrokenBarrierError:
            pass  # the other receives never got past the check
        original(self, visibility_timeout)

    monkeypatch.setattr(Message, "mark_received", mark_received)


def receive_at_once(backend: SQSBackend) -> list[str]:
    backend.create_queue("q")
    backend.send_message("q", "only")
    bodies: list[str] = []
    start = threading.Barrier(RECEIVERS)

    def receive() -> None:
        start.wait()
        bodies.extend(m.body for m in backend.receive_message("q", 10, 0, 60))

    threads = [threading.Thread(target=receive) for _ in range(RECEIVERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return bodies


def test_moto_alone_hands_one_message_to_concurrent_receives(monkeypatch: pytest.MonkeyPatch) -> None:
    class Plain(SQSBackend):
        pass

    hold_marks(monkeypatch, window_s=30)  # every receive checks before any marks: the race, every time
    assert receive_at_once(Plain("us-east-1", "123456789012")) == ["only"] * RECEIVERS  # what this guards against


def test_the_emulator_hands_a_message_to_one_receive_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Atomic(SQSBackend):
        pass

    make_sqs_receives_atomic(Atomic)
    hold_marks(monkeypatch, window_s=1)  # the lock keeps the others from the check: the first mark waits it out
    assert receive_at_once(Atomic("us-east-1", "123456789012")) == ["only"]


def test_a_long_poll_still_waits_for_a_message_sent_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    class Atomic(SQSBackend):
        pass

    make_sqs_receives_atomic(Atomic)
    backend = Atomic("us-east-1", "123456789012")
    backend.create_queue("q")
    waiting = threading.Event()
    wait_for_messages = Queue.wait_for_messages

    def signalled_wait(self: Queue, timeout: float) -> None:
        waiting.set()
        wait_for_messages(self, timeout)

    monkeypatch.setattr(Queue, "wait_for_messages", signalled_wait)
    bodies: list[str] = []
    # GIVEN a 60 s long poll that found nothing and waits (outside the lock)
    poll = threading.Thread(target=lambda: bodies.extend(m.body for m in backend.receive_message("q", 10, 60, 60)))
    poll.start()
    assert waiting.wait(30)
    # WHEN a message is sent meanwhile THEN the poll takes it, long before its 60 s are over
    backend.send_message("q", "late")
    poll.join(30)
    assert not poll.is_alive() and bodies == ["late"]
    # AND an empty long poll waits out its time
    started = time.monotonic()
    assert backend.receive_message("q", 10, 1, 60) == [] and time.monotonic() - started >= 0.95


@pytest.fixture
def moto_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """moto's SQS clock (``unix_time_millis``), ahead of the real one by the milliseconds in ``[0]``."""
    ahead = [0.0]
    real = moto.sqs.models.unix_time_millis
    monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *args: real(*args) + ahead[0])
    yield ahead


def crash_holding_a_group(backend: SQSBackend, moto_clock: list[float]) -> list[str]:
    """A consumer receives a group's #0..#2 and crashes; once their leases run out together, what comes first."""
    backend.create_queue("q.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for i in range(3):
        backend.send_message("q.fifo", f"#{i}", group_id="g")
    assert [m.body for m in backend.receive_message("q.fifo", 10, 0, 1)] == ["#0", "#1", "#2"]
    moto_clock[0] += 1_200  # the 1 s leases run out, none deleted
    return [m.body for m in backend.receive_message("q.fifo", 10, 0, 30)]


def test_moto_alone_redelivers_a_fifo_group_out_of_order(moto_clock: list[float]) -> None:
    class Plain(SQSBackend):
        pass

    assert crash_holding_a_group(Plain("us-east-1", "123456789012"), moto_clock)[0] == "#2"  # what this guards against


def test_the_emulator_redelivers_a_fifo_group_in_order(moto_clock: list[float]) -> None:
    class Emulated(SQSBackend):
        pass

    make_fifo_redelivery_ordered(Emulated)
    make_sqs_receives_atomic(Emulated)
    assert crash_holding_a_group(Emulated("us-east-1", "123456789012"), moto_clock) == ["#0", "#1", "#2"]


def test_the_retention_check_reads_one_attribute_and_keeps_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    class Backend(SQSBackend):
        pass

    make_retention_check_constant_time(Backend)
    backend = Backend("us-east-1", "123456789012")
    backend.create_queue("r", MessageRetentionPeriod="60")
    message = backend.send_message("r", "m")
    # moto's check computed every attribute (three of them count the queue's messages): never again here
    monkeypatch.setattr(SQSBackend, "get_queue_attributes", lambda *a, **k: pytest.fail("all attributes computed"))
    assert backend.is_message_valid_based_on_retention_period("r", message)
    message.sent_timestamp -= 61_000  # sent 61 s ago: past the 60 s retention
    assert not backend.is_message_valid_based_on_retention_period("r", message)


def extend_a_lapsed_head(backend: SQSBackend, moto_clock: list[float]) -> list[str]:
    """A consumer holds a group's #0 and #1; #0's lease lapses and another receive scans the queue before the
    consumer extends it again (a late heartbeat, which SQS accepts); then the consumer dies, and #1's lease runs
    out first. What the next receive is handed while #0 is still invisible."""
    backend.create_queue("q.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for i in range(2):
        backend.send_message("q.fifo", f"#{i}", group_id="g")
    head, second = backend.receive_message("q.fifo", 10, 0, 1)
    backend.change_message_visibility("q.fifo", second.receipt_handle, 10)  # #1's lease extended in time
    moto_clock[0] += 1_200  # #0's 1 s lease lapses
    assert backend.receive_message("q.fifo", 10, 0, 30) == []  # #1 in flight keeps the group
    backend.change_message_visibility("q.fifo", head.receipt_handle, 30)  # the late extension: #0 in flight again
    moto_clock[0] += 10_000  # #1's lease runs out; #0's has 20 s left
    return [m.body for m in backend.receive_message("q.fifo", 10, 0, 30)]


def test_moto_alone_hands_out_a_group_behind_a_head_extended_after_it_lapsed(moto_clock: list[float]) -> None:
    class Plain(SQSBackend):
        pass

    assert extend_a_lapsed_head(Plain("us-east-1", "123456789012"), moto_clock) == ["#1"]  # what this guards against


def test_the_emulator_keeps_a_group_whose_head_was_extended_after_it_lapsed(moto_clock: list[float]) -> None:
    # GIVEN the emulator's SQS
    class Emulated(SQSBackend):
        pass

    make_fifo_redelivery_ordered(Emulated)
    make_sqs_receives_atomic(Emulated)
    backend = Emulated("us-east-1", "123456789012")
    # WHEN the group's head, extended after it lapsed, is still invisible THEN none of its group is handed out
    assert extend_a_lapsed_head(backend, moto_clock) == []
    # AND once it is visible the group comes back from it, in order
    moto_clock[0] += 21_000
    assert [m.body for m in backend.receive_message("q.fifo", 10, 0, 30)] == ["#0", "#1"]
