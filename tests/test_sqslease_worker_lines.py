"""When the worker writes its EMF lines: a success's line with the lines of the other messages of its delete request,
in one write just before that request is sent (never after its delete, at most the settler's linger after it ended);
every other line as it is logged, with the lines held before it, in order. One write a request of 10 instead of a
write and a flush a message: each write lets the GIL go, and a thread waiting for it is woken (bench/runtime_bench.py).
The Lambda adapter still writes and flushes each line as it ends (tests/test_sqslease_lambda_unit.py)."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event
from support.waiting import until
from support.worker_threads import running_worker

from sqslease.emf import MAX_HELD, EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
SETTINGS = LeaseSettings(visibility_timeout=60)


class Recorded:
    """What reached the log and SQS, in order: ``("write", [message ids of its lines])``, ``("flush",)``,
    ``("delete", [message ids])``."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()
        self.ids: dict[str, str] = {}  # receipt handle -> message id

    def add(self, *event: Any) -> None:
        with self.lock:
            self.events.append(event)

    def writes(self) -> list[list[str]]:
        return [event[1] for event in self.events if event[0] == "write"]

    def deletes(self) -> list[list[str]]:
        return [event[1] for event in self.events if event[0] == "delete"]

    def written(self) -> list[str]:
        return [message_id for ids in self.writes() for message_id in ids]


class Stream:
    """The EMF stream: records each write's lines (their ``MessageId``) and each flush."""

    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded

    def write(self, text: str) -> int:
        self.recorded.add("write", [json.loads(line)["MessageId"] for line in text.splitlines()])
        return len(text)

    def flush(self) -> None:
        self.recorded.add("flush")


class RecordedSQS(FakeSQS):
    def __init__(self, recorded: Recorded) -> None:
        super().__init__()
        self.recorded = recorded

    def receive_message(self, **params: Any) -> dict:
        response = super().receive_message(**params)
        for message in response.get("Messages", []):
            self.recorded.ids[message["ReceiptHandle"]] = message["MessageId"]
        return response

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        self.recorded.add("delete", [self.recorded.ids[entry["ReceiptHandle"]] for entry in Entries])
        return super().delete_message_batch(QueueUrl, Entries)


def ok(body: str, message: Message) -> None:
    if body.startswith("fail"):
        raise RuntimeError(body)


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


def test_the_lines_of_a_full_batch_of_deletes_are_written_in_one_write_just_before_its_request(
    recorded: Recorded,
) -> None:
    # GIVEN a worker of one handler whose deletes linger a minute (only a full batch is sent before its close)
    sqs = RecordedSQS(recorded)
    with running_worker(sqs, URL, ok, concurrency=1, stream=Stream(recorded)) as worker:
        worker.settler.linger = 60
        # WHEN 13 messages succeed
        sqs.add(*(f"b{i}" for i in range(13)))
        until(lambda: worker.processed == 13, 30, "13 messages run")
        # THEN the first 10 lines were written in one write, just before the request that deleted those 10
        until(lambda: len(recorded.deletes()) == 1, 30, "the first batch deleted")
        first = recorded.deletes()[0]
        assert len(first) == 10
        assert recorded.events[: recorded.events.index(("delete", first)) + 1] == [
            ("write", first),
            ("flush",),
            ("delete", first),
        ]
        # AND the other 3 are held with their deletes, while those linger
        assert recorded.written() == first
    # AND at the worker's end, the last 3 lines were written in one write before their request
    last = recorded.deletes()[1]
    assert len(last) == 3
    at = recorded.events.index(("delete", last))
    assert recorded.events[at - 2 : at] == [("write", last), ("flush",)]
    assert len(recorded.writes()) == 2


def test_a_partial_batch_s_lines_are_written_by_the_sender_once_it_waited_its_linger(recorded: Recorded) -> None:
    # GIVEN a worker of one handler whose deletes linger 20 ms
    sqs = RecordedSQS(recorded)
    with running_worker(sqs, URL, ok, concurrency=1, stream=Stream(recorded)):
        # WHEN 3 messages succeed
        sqs.add("a", "b", "c")
        # THEN their lines are written, and their deletes sent, with no close to push them (in one request, or more
        # on a machine slow enough that the linger ends between two receives)
        until(lambda: sum(map(len, recorded.deletes())) == 3, 30, "the 3 deleted")
        # AND each request right after the one write of its lines
        for at, event in enumerate(recorded.events):
            if event[0] == "delete":
                assert recorded.events[at - 2 : at] == [("write", event[1]), ("flush",)]
        assert sorted(recorded.written()) == ["m-a", "m-b", "m-c"]


def test_any_other_line_is_written_as_it_is_logged_after_the_lines_held_before_it(recorded: Recorded) -> None:
    # GIVEN a worker of one handler whose deletes linger a minute
    sqs = RecordedSQS(recorded)
    with running_worker(sqs, URL, ok, concurrency=1, stream=Stream(recorded)) as worker:
        worker.settler.linger = 60
        # WHEN a message succeeds, then one fails
        sqs.add("good")
        until(lambda: worker.processed == 1, 30, "the first run")
        sqs.add("fail-1")
        until(lambda: worker.processed == 2, 30, "the second run")
        # THEN the failure's line was written at once, with the success's line before it, in one write, though the
        # success's delete is still queued
        until(lambda: recorded.writes(), 30, "a write")
        assert len(recorded.writes()) == 1 and len(recorded.written()) == 2
        assert recorded.deletes() == []
    assert len(recorded.deletes()) == 1


def test_lines_written_to_a_plain_logger_read_back_whole_and_in_order() -> None:
    # GIVEN a worker of 4 handlers writing to a StringIO (what tests and `jobqueues local` read)
    stream = io.StringIO()
    sqs = FakeSQS()
    with running_worker(sqs, URL, ok, concurrency=4, stream=stream) as worker:
        # WHEN 57 messages succeed and 3 fail
        sqs.add(*(f"b{i}" for i in range(57)), "fail-a", "fail-b", "fail-c")
        until(lambda: worker.processed == 60, 30, "60 runs")
    # THEN after its end every line is there, each whole, once
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 60 and len({line["MessageId"] for line in lines}) == 60
    assert sorted(line["Outcome"] for line in lines).count("success") == 57


def test_the_emf_logger_holds_no_line_after_a_flush() -> None:
    # GIVEN a logger holding 2 lines
    stream = io.StringIO()
    logger = EmfLogger(stream)
    logger.hold('{"a":1}\n')
    logger.hold('{"b":2}\n')
    assert stream.getvalue() == ""
    # WHEN it is flushed: THEN both are written, in order, and nothing is held
    logger.flush()
    assert stream.getvalue() == '{"a":1}\n{"b":2}\n'
    logger.flush()
    assert stream.getvalue() == '{"a":1}\n{"b":2}\n'


def test_the_lambda_adapter_still_writes_each_line_as_its_record_ends(recorded: Recorded) -> None:
    # GIVEN an invocation of three records whose handler looks at what reached the log so far
    seen: list[list[str]] = []

    def handler(body: str, message: Message) -> None:
        seen.append(recorded.written())

    # WHEN it runs them
    process_event(
        fake_event(["a", "b", "c"]), FakeContext(60), handler, SETTINGS, FakeSQS(), emf=EmfLogger(Stream(recorded))
    )
    # THEN each record's line was written, and flushed, before the next record ran: a write and a flush each
    assert seen == [[], ["m0"], ["m0", "m1"]]
    assert recorded.events == [event for i in range(3) for event in (("write", [f"m{i}"]), ("flush",))]


def test_a_line_held_for_a_delete_the_settler_refuses_is_written_at_once(recorded: Recorded) -> None:
    # GIVEN a worker's processor and settler, and a message whose lease is taken for another settle meanwhile
    sqs = RecordedSQS(recorded)
    logger = EmfLogger(Stream(recorded))
    scheduler = LeaseScheduler()
    settler = Settler(sqs, URL, scheduler, linger=60, before_deletes=logger.flush)
    processor = MessageProcessor(ok, settler, LeaseSettings(), sqs, logger, queue_name="jobs", deferred_lines=True)
    lease = scheduler.add("rh-1", 0.0, 600)
    message = Message.from_sqs({"MessageId": "m-1", "Body": "x", "ReceiptHandle": "rh-1"}, URL, lease)
    assert scheduler.begin_change(lease)  # its delete will be refused
    # WHEN it succeeds: THEN its line is written though no delete is sent
    assert processor.process(message).outcome == "success"
    assert recorded.writes() == [["m-1"]] and recorded.deletes() == []
    settler.close(timeout=5)


def test_at_most_max_held_lines_are_held() -> None:
    # GIVEN a logger: WHEN MAX_HELD lines are held, THEN they are written, in one write, without a flush asked
    stream = io.StringIO()
    logger = EmfLogger(stream)
    for i in range(MAX_HELD - 1):
        logger.hold(f"{i}\n")
    assert stream.getvalue() == ""
    logger.hold("last\n")
    assert stream.getvalue() == "".join(f"{i}\n" for i in range(MAX_HELD - 1)) + "last\n"


def test_a_flush_returns_only_once_a_write_in_progress_of_the_lines_it_would_write_is_done() -> None:
    # GIVEN a thread writing the held lines (its line and another thread's), its write held open
    gate, writing, order = threading.Event(), threading.Event(), []

    class HeldWrite(io.StringIO):
        def write(self, text: str) -> int:
            writing.set()
            assert gate.wait(30)
            order.append("written")
            return super().write(text)

    class WatchedLock:
        """The stream's lock, telling when a second thread asks for it."""

        def __init__(self) -> None:
            self.lock, self.asked = threading.Lock(), threading.Event()

        def __enter__(self) -> None:
            if self.lock.locked():
                self.asked.set()
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    logger = EmfLogger(HeldWrite())
    watched = logger._lock = WatchedLock()  # type: ignore[assignment]
    logger.hold("a\n")
    logger.hold("b\n")
    first = threading.Thread(target=logger.flush)
    first.start()
    assert writing.wait(30)
    # WHEN the other thread flushes before sending its delete (its line taken by the first write)
    second = threading.Thread(target=lambda: (logger.flush(), order.append("second returned")))
    second.start()
    # THEN it waits for the stream's lock, and returns only after that write is done: its line is never written
    # after its delete
    assert watched.asked.wait(30), "the second flush returned without waiting for the write in progress"
    assert order == []
    gate.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert order == ["written", "second returned"]
