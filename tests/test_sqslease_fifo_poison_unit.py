"""FIFO retries in process on the fakes (``FakeSQS``, ``FakeDynamoDB``) with a clock that moves only when told: the
retry/back-off sequencing, the group held behind its failed head, the heartbeat keeping the held leases, a drain
while a group is held, idempotency, and the DLQ copy. End to end on moto_server: ``test_sqslease_fifo_poison.py``."""

from __future__ import annotations

import json

import pytest
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock, FakeSQS
from support.waiting import wait_for
from support.worker_threads import emf_records, running_worker
from test_sqslease_drain import advance_until

from sqslease import failure_policy
from sqslease.config import ConsumerConfig
from sqslease.failure_policy import (
    DLQ_REASON_ATTRIBUTE,
    DLQ_RECEIVE_COUNT_ATTRIBUTE,
    DLQ_SOURCE_ID_ATTRIBUTE,
    MAX_DLQ_ATTRIBUTES,
    dlq_attributes,
    retry_delay,
)
from sqslease.fifo import ReadyQueue
from sqslease.fifo_retry import FifoRetry
from sqslease.idempotency import IdempotencySettings
from sqslease.idempotency_store import IdempotencyStore
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo"
DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs-dlq.fifo"
#: A 30 s lease whose first part (10 s) falls due 5 s after the receive, 1 s polls; 3 attempts, back-off base 2 s.
UNIT = {
    "visibility_timeout": 30,
    "extension_threshold": 5,
    "heartbeat_interval": 0.2,
    "wait_time": 1,
    "max_receive_count": 3,
    "dead_letter_queue_url": DLQ,
}


def message(body: str, group: str, receive_count: int = 1) -> Message:
    attributes = {"MessageGroupId": group, "ApproximateReceiveCount": str(receive_count)}
    return Message(f"m-{body}", f"rh-{body}", body, URL, Lease(f"rh-{body}", 0, 30), attributes)


def changes(sqs: FakeSQS) -> list[tuple[float, str, int]]:
    """(fake time, receipt handle, visibility timeout) of every ChangeMessageVisibilityBatch entry."""
    return [
        (at, e["ReceiptHandle"], e["VisibilityTimeout"])
        for at, _, entries in sqs.of("ChangeMessageVisibilityBatch")
        for e in entries
    ]


class Runs:
    """A handler recording (body, receive count, fake time) of each run; bodies starting with ``poison`` fail."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.runs: list[tuple[str, int, float]] = []

    def __call__(self, body: str, message: Message) -> None:
        self.runs.append((body, message.receive_count, self.clock()))
        if body.startswith("poison"):
            raise RuntimeError(f"{body} fails every time")

    def of(self, body: str) -> list[tuple[str, int, float]]:
        return [run for run in self.runs if run[0] == body]


def test_a_parked_head_comes_back_at_its_time_before_its_group_while_other_groups_run() -> None:
    # GIVEN a group g (its head p failed and is parked until 12) and a group h, on a clock standing at 10
    clock = FakeClock(10)
    ready = ReadyQueue(fifo=True, clock=clock)
    p, m1, m2, h0, h1 = (message(b, b[0] if b[0] == "h" else "g") for b in ("p", "m1", "m2", "h0", "h1"))
    ready.put([p, m1, m2, h0, h1])
    assert ready.take(clock()) is p and ready.take(clock()) is h0
    assert ready.park(p, 12.0)
    # THEN the parked group counts as one message (its head), not three
    assert len(ready) == 2 and ready.parked() == {"m-p": 12.0}
    # and while it waits, group h goes on, and g's later messages do not overtake their head
    ready.done(h0, failed=False)
    assert ready.take(11.999) is h1
    assert ready.take(11.999) is None
    # WHEN its time comes, the head comes back, and its group follows in order once it ends
    assert ready.take(12.0) is p and ready.parked() == {}
    ready.done(p, failed=False)
    assert ready.take(12.0) is m1


def test_a_poison_is_retried_after_each_back_off_then_dead_lettered_by_the_worker_and_its_group_runs() -> None:
    # GIVEN a FIFO group [poison, m1, m2] whose head fails every time, and max_receive_count 3
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("poison", "m1", "m2", group="g", message_attributes={"tenant": {"DataType": "String", "StringValue": "t1"}})
    handler = Runs(clock)
    with running_worker(sqs, URL, handler, concurrency=2, clock=clock, **UNIT) as worker:
        dues = []
        for attempt in (1, 2):
            # WHEN a run fails with attempts left, it is parked for the failure policy's back-off of its count
            runs = lambda n=attempt: len(handler.of("poison")) == n and bool(worker.handlers.parked())  # noqa: E731
            assert wait_for(runs, timeout_s=10)
            (due,) = worker.handlers.parked().values()
            failed_at = handler.of("poison")[-1][2]
            ceiling = 2 * 2 ** (attempt - 1)  # backoff_base 2 s, doubling: equal jitter between half and all
            assert max(1, ceiling // 2) <= due - failed_at <= ceiling, (attempt, due - failed_at)
            dues.append(due)
            clock.now = due  # the clock moves only here: a run at `due` did not start before it
        assert wait_for(lambda: len(handler.runs) == 5 and len(sqs.entries("DeleteMessageBatch")) == 3, timeout_s=10)
    # THEN the poison ran 3 times, each retry at its due time, its receive count rising as SQS's would have; then
    # m1 and m2 ran once each, in order, on their first receive
    assert handler.runs == [
        ("poison", 1, 0.0),
        ("poison", 2, dues[0]),
        ("poison", 3, dues[1]),
        ("m1", 1, dues[1]),
        ("m2", 1, dues[1]),
    ]
    # the worker sent the poison to the DLQ itself (its group, body and attributes kept; its id deduplicates a second
    # copy), then deleted it; nothing was released: SQS counted one receive for each message
    (sent,) = sqs.entries("SendMessage")
    assert sent["QueueUrl"] == DLQ and sent["MessageBody"] == "poison" and sent["MessageGroupId"] == "g"
    assert sent["MessageDeduplicationId"] == "m-poison"
    attributes = sent["MessageAttributes"]
    assert attributes["tenant"] == {"DataType": "String", "StringValue": "t1"}
    assert attributes[DLQ_REASON_ATTRIBUTE]["StringValue"] == "max_receive_count"
    assert attributes[DLQ_RECEIVE_COUNT_ATTRIBUTE] == {"DataType": "Number", "StringValue": "3"}
    assert attributes[DLQ_SOURCE_ID_ATTRIBUTE]["StringValue"] == "m-poison"
    assert [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")] == [
        *sqs.handle_of("poison"),
        *sqs.handle_of("m1"),
        *sqs.handle_of("m2"),
    ]
    assert all(seconds == UNIT["visibility_timeout"] for _, _, seconds in changes(sqs))  # extensions only
    assert [(r["MessageId"], r["Outcome"], r["ReceiveCount"]) for r in emf_records(worker)] == [
        ("m-poison", "failure", 1),
        ("m-poison", "failure", 2),
        ("m-poison", "dead_lettered", 3),
        ("m-m1", "success", 1),
        ("m-m2", "success", 1),
    ]
    assert emf_records(worker)[2]["ErrorType"] == "RuntimeError"


def test_a_dlq_send_that_fails_deletes_nothing_and_releases_the_group_as_before() -> None:
    # GIVEN a poison on its last attempt (SQS's count 3 = max_receive_count) and a DLQ that refuses the send
    clock = FakeClock()
    sqs = FakeSQS(clock).script("SendMessage", "error500")
    sqs.add("poison", "m1", group="g", receive_count=3)
    handler = Runs(clock)
    with running_worker(sqs, URL, handler, clock=clock, **UNIT) as worker:
        assert wait_for(lambda: len([c for c in changes(sqs) if c[2] != 30]) == 2, timeout_s=10)
    # THEN the original is not deleted (the copy is sent first, the delete only after SQS took it): the failure
    # policy settles it (back-off for receive 3: 4-8 s) and m1 is released behind it, as without retries
    assert sqs.entries("DeleteMessageBatch") == [] and len(sqs.entries("SendMessage")) == 1
    settles = {h: seconds for _, h, seconds in changes(sqs) if seconds != 30}
    assert 4 <= settles[sqs.handle_of("poison")[0]] <= 8 and settles[sqs.handle_of("m1")[0]] == 0
    assert [(r["MessageId"], r["Outcome"]) for r in emf_records(worker)] == [
        ("m-poison", "failure"),
        ("m-m1", "released"),
    ]


def test_a_held_group_does_not_keep_a_one_handler_worker_from_other_groups() -> None:
    # GIVEN a worker of one handler whose group g is held behind its failed head, the clock standing still
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("poison", "m1", "m2", "m3", group="g")
    handler = Runs(clock)
    with running_worker(sqs, URL, handler, concurrency=1, clock=clock, **UNIT) as worker:
        assert wait_for(lambda: worker.handlers.parked(), timeout_s=10)
        # WHEN another group's messages arrive
        sqs.add("h0", "h1", "h2", group="h")
        # THEN they run, in order, while g waits: its head's retry is not due (the clock stands still)
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 3, timeout_s=10)
        assert [run[0] for run in handler.runs] == ["poison", "h0", "h1", "h2"]
        # and g's head is retried once it is due
        clock.now = max(worker.handlers.parked().values())
        assert wait_for(lambda: len(handler.of("poison")) == 2 and worker.handlers.parked(), timeout_s=10)
        worker.shutdown()  # the drain releases the group at its release point
        assert advance_until(clock, lambda: len([c for c in changes(sqs) if c[2] != 30]) == 4)


@pytest.mark.parametrize("back_off", [30, 38, 60])  # 38 s: released at 8 s, hidden 30 s, as long as a lease
def test_the_heartbeat_keeps_a_held_groups_leases_and_a_drain_hides_the_head_for_the_rest_of_its_back_off(
    back_off: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a group whose head failed and waits its back-off (base 60 s: 30-60 s, the jitter's draw fixed here)
    monkeypatch.setattr(failure_policy, "backoff_delay", lambda receive_count, base, ceiling: back_off)
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("poison", "m1", "m2", group="g")
    handler = Runs(clock)
    settings = {**UNIT, "backoff_base": 60, "shutdown_grace": 600}
    with running_worker(sqs, URL, handler, concurrency=2, clock=clock, **settings) as worker:
        assert wait_for(lambda: worker.handlers.parked(), timeout_s=10)
        (due,) = worker.handlers.parked().values()
        # WHEN the leases fall due (10 s first lease, 5 s threshold), the heartbeat extends all three
        clock.now = 6
        held = {h for body in ("poison", "m1", "m2") for h in sqs.handle_of(body)}
        assert wait_for(lambda: {h for _, h, s in changes(sqs) if s == 30} == held, timeout_s=10)
        # WHEN the worker drains before the retry is due: the clock steps to its release point (6 + 1 s poll
        # + 1 s margin) and stops short of the leases' next extension (at 31), so every change from here is a settle
        extended = len(changes(sqs))
        worker.shutdown()
        step_until = lambda: len(changes(sqs)) - extended >= 3 or bool(clock.now < 20 and clock.sleep(0.25))  # noqa: E731
        assert wait_for(step_until, timeout_s=20)
    # THEN at its release point the later messages are released (visibility 0, EMF released) and the head is hidden
    # for what is left of its back-off (which may be 30 s, as long as a lease: told apart by when it was sent): the
    # next consumer retries it then, and the group stays in order
    settles = {h: (at, seconds) for at, h, seconds in changes(sqs)[extended:]}
    assert len(settles) == 3
    at, seconds = settles[sqs.handle_of("poison")[0]]
    assert seconds == pytest.approx(due - at, abs=1) and seconds > 0
    assert settles[sqs.handle_of("m1")[0]][1] == settles[sqs.handle_of("m2")[0]][1] == 0
    assert [(r["MessageId"], r["Outcome"]) for r in emf_records(worker)] == [
        ("m-poison", "failure"),
        ("m-m1", "released"),
        ("m-m2", "released"),
    ]
    assert [run[0] for run in handler.runs] == ["poison"] and sqs.entries("SendMessage") == []


def test_with_idempotency_each_retry_claims_the_record_again_and_the_dlq_copy_leaves_none() -> None:
    # GIVEN idempotency on, and a poison followed by m1 in its group
    clock, wall = FakeClock(), FakeClock(1_800_000_000.0)
    sqs, dynamodb = FakeSQS(clock), FakeDynamoDB(wall)
    sqs.add("poison", "m1", group="g")
    handler = Runs(clock)
    settings = LeaseSettings(**{k: v for k, v in UNIT.items() if k != "heartbeat_interval"}, job_type="Orders")
    store = IdempotencyStore(dynamodb, settings, IdempotencySettings(table="t"), clock=wall, sleep=wall.sleep)
    with running_worker(sqs, URL, handler, clock=clock, worker_args={"idempotency": store}, **UNIT) as worker:
        for attempt in (1, 2):
            ran = lambda n=attempt: len(handler.runs) == n and bool(worker.handlers.parked())  # noqa: E731
            assert wait_for(ran, timeout_s=10)
            clock.now = max(worker.handlers.parked().values())
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 2, timeout_s=10)
    # THEN each run claimed the poison's record and its failure deleted it (so the next run could claim it): none is
    # left for a redrive to find; m1 ran once and completed its record
    assert [run[0] for run in handler.runs] == ["poison"] * 3 + ["m1"]
    assert dynamodb.count() == {"PutItem": 4, "DeleteItem": 3, "UpdateItem": 1}
    assert {item["pk"]["S"]: item["status"]["S"] for item in dynamodb.items.values()} == {"Orders#m-m1": "COMPLETED"}


def test_without_max_receive_count_or_dlq_a_fifo_failure_is_released_as_before() -> None:
    settings = LeaseSettings(dead_letter_queue_url=DLQ)
    assert FifoRetry.of(settings, URL) is None
    assert FifoRetry.of(LeaseSettings(max_receive_count=3), URL) is None
    both = LeaseSettings(max_receive_count=3, dead_letter_queue_url=DLQ)
    assert FifoRetry.of(both, URL.removesuffix(".fifo")) is None  # a standard queue has no groups to hold
    retries = FifoRetry.of(both, URL)
    assert retries is not None and retries.holds(message("p", "g", 2)) and retries.spent(message("p", "g", 3))


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (FailurePolicy.VISIBLE_NOW, {0.0}),
        (FailurePolicy.LAPSE, {30.0}),
        (FailurePolicy.BACKOFF, {4.0, 5.0, 6.0, 7.0, 8.0}),
    ],
)
def test_a_retry_in_process_waits_what_the_failure_policy_would_have_hidden_the_message_for(
    policy: FailurePolicy, expected: set[float]
) -> None:
    settings = LeaseSettings(visibility_timeout=30, failure_policy=policy, backoff_base=2)
    assert {retry_delay(settings, 3) for _ in range(200)} <= expected  # receive 3: 2 x 2^2 = 8 s, half to all


def test_a_dlq_copy_keeps_its_attributes_drops_an_earlier_dead_letterings_and_stays_within_sqs_limit() -> None:
    redriven = message("p", "g", 2)
    redriven.retries_in_process = 1
    redriven.message_attributes = {
        "a": {"DataType": "String", "StringValue": "1"},
        "sqslease.error": {"DataType": "String", "StringValue": "RuntimeError('last time')"},
    }
    attributes = dlq_attributes(redriven, RuntimeError("this time"), "max_receive_count")
    assert attributes["a"]["StringValue"] == "1" and "this time" in attributes["sqslease.error"]["StringValue"]
    assert attributes["sqslease.receive_count"]["StringValue"] == "3"
    crowded = message("p", "g")
    crowded.message_attributes = {f"a{i}": {"DataType": "String", "StringValue": "x"} for i in range(8)}
    kept = dlq_attributes(crowded, RuntimeError("x"), "non_retryable")
    assert len(kept) == MAX_DLQ_ATTRIBUTES and list(kept)[-2:] == ["sqslease.error", "sqslease.source_message_id"]


def test_max_receive_count_is_a_setting_with_sqs_range() -> None:
    assert ConsumerConfig.from_env({"SQSLEASE_MAX_RECEIVE_COUNT": "5"}).lease.max_receive_count == 5
    assert "--max-receive-count" in ConsumerConfig(lease=LeaseSettings(max_receive_count=5)).to_args()
    with pytest.raises(ValueError, match="max_receive_count must be 1-1000, got 0"):
        LeaseSettings(max_receive_count=0)
    assert json.dumps(ConsumerConfig().values()).count("max_receive_count") == 0  # unset: not written


class PolicyClient:
    """A GetQueueAttributes answering a RedrivePolicy (or raising ``error``)."""

    def __init__(self, policy: dict | None, error: Exception | None = None) -> None:
        self.policy, self.error, self.asked = policy, error, 0

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict:
        self.asked += 1
        if self.error is not None:
            raise self.error
        return {"Attributes": {"RedrivePolicy": json.dumps(self.policy)} if self.policy else {}}


def test_the_worker_command_reads_a_fifo_queues_redrive_policy_for_what_its_options_do_not_give(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from support.sqs_errors import client_error

    from sqslease.worker.cli import with_redrive_policy

    policy = {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:jobs-dlq.fifo", "maxReceiveCount": 4}
    emulator = "http://localhost:4566/123456789012/jobs.fifo"
    # GIVEN no options: both from the policy, the DLQ's URL on the queue's endpoint (an emulator's here)
    found = with_redrive_policy(LeaseSettings(), PolicyClient(policy), emulator)
    assert (found.max_receive_count, found.dead_letter_queue_url) == (
        4,
        "http://localhost:4566/123456789012/jobs-dlq.fifo",
    )
    # an option given wins; a standard queue, or both given, asks nothing
    assert with_redrive_policy(LeaseSettings(max_receive_count=2), PolicyClient(policy), URL).max_receive_count == 2
    for settings, url in ((LeaseSettings(), URL.removesuffix(".fifo")), (LeaseSettings(**UNIT), URL)):
        client = PolicyClient(policy)
        assert with_redrive_policy(settings, client, url) == settings and client.asked == 0
    # a queue without a policy has no DLQ to protect; a policy that cannot be read is logged, the worker runs on
    assert with_redrive_policy(LeaseSettings(), PolicyClient(None), URL) == LeaseSettings()
    denied = PolicyClient(policy, client_error("access_denied", "GetQueueAttributes"))
    assert with_redrive_policy(LeaseSettings(), denied, URL) == LeaseSettings()
    assert f"could not read the RedrivePolicy of {URL}" in caplog.text


def test_without_the_heartbeat_the_worker_holds_nothing(caplog: pytest.LogCaptureFixture) -> None:
    # A held lease that nothing extends would run out while its message waits for its retry: no holding.
    from sqslease.worker import Worker

    told = {k: v for k, v in UNIT.items() if k not in ("extension_threshold", "heartbeat_interval")}
    worker = Worker(FakeSQS(), URL, Runs(FakeClock()), LeaseSettings(**told, heartbeat=False))
    assert worker.processor.fifo_retry is None
    assert "to retry it in process, give both max_receive_count and dead_letter_queue_url" in caplog.text
    assert Worker(FakeSQS(), URL, Runs(FakeClock()), LeaseSettings(**told)).processor.fifo_retry is not None
