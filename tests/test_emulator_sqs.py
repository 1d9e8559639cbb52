"""The emulator's SQS: a received message is hidden from every other receive, and a FIFO group comes back in order.

moto checks that a message is visible, then marks it received, with no lock between; moto_server serves
requests on threads, so two concurrent ReceiveMessage calls could both take one message. The fault fleet hit
this once (two workers started one job 11 ms apart, each with a fresh lease). These tests drive moto's SQS
backend in-process with the window between check and mark widened, without and with the emulator's patch.
A FIFO group whose leases all ran out must come back from its first message, as in SQS; moto alone starts
from its last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from moto.sqs.models import Message, SQSBackend

from jobqueues.emulator.patches.sqs import (
    make_fifo_redelivery_ordered,
    make_retention_check_constant_time,
    make_sqs_receives_atomic,
)


@pytest.fixture
def slow_marks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = Message.mark_received

    def mark_received(self: Message, visibility_timeout: int | None = None) -> None:
        time.sleep(0.05)  # the window between moto's visibility check and its mark, widened
        original(self, visibility_timeout)

    monkeypatch.setattr(Message, "mark_received", mark_received)
    yield


def receive_at_once(backend: SQSBackend, receivers: int = 4) -> list[str]:
    backend.create_queue("q")
    backend.send_message("q", "only")
    bodies: list[str] = []
    start = threading.Barrier(receivers)

    def receive() -> None:
        start.wait()
        bodies.extend(m.body for m in backend.receive_message("q", 10, 0, 60))

    threads = [threading.Thread(target=receive) for _ in range(receivers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return bodies


def test_moto_alone_hands_one_message_to_concurrent_receives(slow_marks: None) -> None:
    class Plain(SQSBackend):
        pass

    assert receive_at_once(Plain("us-east-1", "123456789012")).count("only") > 1  # the race this guards against


def test_the_emulator_hands_a_message_to_one_receive_only(slow_marks: None) -> None:
    class Atomic(SQSBackend):
        pass

    make_sqs_receives_atomic(Atomic)
    assert receive_at_once(Atomic("us-east-1", "123456789012")) == ["only"]


def test_a_long_poll_still_waits_for_a_message_sent_meanwhile() -> None:
    class Atomic(SQSBackend):
        pass

    make_sqs_receives_atomic(Atomic)
    backend = Atomic("us-east-1", "123456789012")
    backend.create_queue("q")
    threading.Timer(0.5, lambda: backend.send_message("q", "late")).start()
    started = time.monotonic()
    bodies = [m.body for m in backend.receive_message("q", 10, 5, 60)]
    assert bodies == ["late"] and 0.4 < time.monotonic() - started < 2
    started = time.monotonic()
    assert backend.receive_message("q", 10, 1, 60) == [] and time.monotonic() - started >= 0.95  # waits it out


def crash_holding_a_group(backend: SQSBackend) -> list[str]:
    """A consumer receives a group's #0..#2 and crashes; once their leases run out together, what comes first."""
    backend.create_queue("q.fifo", FifoQueue="true", ContentBasedDeduplication="true")
    for i in range(3):
        backend.send_message("q.fifo", f"#{i}", group_id="g")
    assert [m.body for m in backend.receive_message("q.fifo", 10, 0, 1)] == ["#0", "#1", "#2"]
    time.sleep(1.2)  # the 1 s leases run out, none deleted
    return [m.body for m in backend.receive_message("q.fifo", 10, 0, 30)]


def test_moto_alone_redelivers_a_fifo_group_out_of_order() -> None:
    class Plain(SQSBackend):
        pass

    assert crash_holding_a_group(Plain("us-east-1", "123456789012"))[0] == "#2"  # what this guards against


def test_the_emulator_redelivers_a_fifo_group_in_order() -> None:
    class Emulated(SQSBackend):
        pass

    make_fifo_redelivery_ordered(Emulated)
    make_sqs_receives_atomic(Emulated)
    assert crash_holding_a_group(Emulated("us-east-1", "123456789012")) == ["#0", "#1", "#2"]


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
