"""An idempotency record held as long as its lease, whatever the timing of the claim against the heartbeat; and a
completion retried as long as the SQS lease is held. On the fakes (``FakeSQS``, ``FakeDynamoDB``) and one injected
clock: each race is made to happen at a chosen point, so each test is deterministic.

The consumer's wall clock is ``EPOCH`` plus its monotonic clock, so a retry's sleep moves the leases' time and the
records' time together, as real time does.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from support.fake_dynamodb import FakeDynamoDB, dynamodb_error
from support.fakes import FakeClock, FakeSQS

from sqslease.heartbeat import Heartbeat, TickStats
from sqslease.idempotency import IdempotencySettings, RecordStatus
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.idempotency_store import IdempotencyStore
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.settings import LeaseSettings

EPOCH = 1_800_000_000.0
#: The defaults: leases of 30 s, extended within 5 s of their end, a tick a second, a first lease of 10 s.
DEFAULTS = LeaseSettings(job_type="Orders")


class Consumer:
    """One consumer on the fakes: its lease table, heartbeat (ticked by the test) and idempotency gate, on ``clock``.
    Consumers of one test share the clock and the table."""

    def __init__(self, clock: FakeClock, dynamodb: FakeDynamoDB, settings: LeaseSettings = DEFAULTS) -> None:
        self.clock = clock
        self.settings = settings
        self.sqs = FakeSQS(clock)
        wall = epoch_of(clock)
        #: Called with each retry pause the store takes, after the clock moved: a tick can happen there.
        self.paused: Callable[[], object] = lambda: None
        store = IdempotencyStore(
            dynamodb, settings, IdempotencySettings(table="t"), clock=wall, sleep=self._pause, rng=random.Random(1)
        )
        self.gate = IdempotencyGate(store, clock=clock)
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        self.heartbeat = Heartbeat(
            self.sqs,
            "q",
            self.scheduler,
            settings,
            clock=clock,
            sleep=clock.sleep,
            rng=random.Random(2),
            idempotency=self.gate,
        )
        self.runs: list[str] = []

    def _pause(self, seconds: float) -> None:
        self.clock.sleep(seconds)
        self.paused()

    def receive(self, message_id: str, left: float) -> Message:
        """A message received ``settings.first_lease`` seconds before ``left`` more of its first lease remain: a
        long poll that answered at its end hands it over with ``left`` seconds."""
        now = self.clock()
        lease = self.scheduler.add(
            f"rh-{message_id}-{now}", now - self.settings.first_lease + left, self.settings.first_lease
        )
        return Message(message_id, lease.receipt_handle, "{}", "q", lease)

    def tick(self) -> TickStats:
        """One heartbeat tick, its rounds run to their end (the first one on this thread)."""
        return self.heartbeat.tick(first_inline=True).wait(timeout=10)

    def tick_then(self, answer: str) -> Callable[[], None]:
        """A scripted DynamoDB answer: a heartbeat tick happens while the request is in flight, then ``answer``."""

        def action() -> None:
            self.tick()
            if answer != "ok":
                raise dynamodb_error(answer, "PutItem")

        return action

    def process(self, message: Message, seconds: float) -> str:
        """The processor's idempotency steps around a handler that runs ``seconds`` and succeeds: the message's
        outcome. Records in :attr:`runs` whether its record was still live when the handler returned."""
        unrun = self.gate.admit(message)
        if unrun is not None:
            return unrun[0]
        self.clock.sleep(seconds)  # the handler
        self.runs.append("live" if record_live(self.gate, message) else "lapsed")
        self.gate.complete(message, None)
        return "success"


def epoch_of(clock: FakeClock) -> Callable[[], float]:
    return lambda: EPOCH + clock()


def record_live(gate: IdempotencyGate, message: Message) -> bool:
    item = gate.store.client.items[f"Orders#{message.message_id}"]
    return float(item["expires_at"]["N"]) > gate.store.clock()


def expires_at(dynamodb: FakeDynamoDB, message: Message) -> float:
    return float(dynamodb.items[f"Orders#{message.message_id}"]["expires_at"]["N"]) - EPOCH


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(0.0)


@pytest.fixture
def dynamodb(clock: FakeClock) -> FakeDynamoDB:
    return FakeDynamoDB(epoch_of(clock))


def test_a_claim_retried_across_a_lease_extension_is_held_while_its_handler_runs_and_its_job_runs_once(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN the default settings, a message handed over with 5 s of its first lease left (due at the next tick),
    # DynamoDB throttling its first two claims while the heartbeat extends its lease in between, throttling its
    # completion once, and a delete that is lost (the message comes back when its lease ends)
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    dynamodb.script("PutItem", "throttle", consumer.tick_then("throttle"))
    dynamodb.script("UpdateItem", "throttle")
    # WHEN its 3 s handler runs and succeeds, and the message is delivered again once its lease ended
    first = consumer.process(message, seconds=3)
    clock.now = message.lease.deadline + 0.1
    again = Consumer(clock, dynamodb)
    second = again.process(again.receive("m1", left=10.0), seconds=3)
    # THEN the job ran once: its record was live all along its handler, completed, and the redelivery a duplicate
    assert (first, second) == ("success", "duplicate")
    assert consumer.runs == ["live"] and again.runs == []
    assert dynamodb.items["Orders#m1"]["status"]["S"] == RecordStatus.COMPLETED
    assert message.lease.extensions == 1  # the extension did land during the claim


def test_a_tick_while_the_claim_lands_moves_the_record_before_the_handler_starts(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a claim written with the lease's end as it was when sent, and a tick that extends the lease meanwhile
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    dynamodb.script("PutItem", consumer.tick_then("ok"))
    # WHEN the claim returns
    assert consumer.gate.admit(message) is None
    # THEN before the handler starts, the record is moved to the extended lease's end (one TransactWriteItems)
    assert message.lease.extensions == 1
    assert expires_at(dynamodb, message) == pytest.approx(message.lease.deadline, abs=0.001)  # ms precision
    assert dynamodb.count() == {"PutItem": 1, "TransactWriteItems": 1}
    # AND the next tick that takes the lease moves the record with it: it was never left to lapse
    clock.now = message.lease.deadline - DEFAULTS.extension_threshold
    stats = consumer.tick()
    assert (stats.records_extended, stats.records_missed) == (1, 0)
    assert expires_at(dynamodb, message) == pytest.approx(message.lease.deadline, abs=0.001)  # ms precision


def test_a_claim_whose_first_answer_was_lost_moves_the_record_that_landed_not_the_one_it_wrote_last(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a claim whose first PutItem landed but its answer was lost, and a tick during the pause before its retry:
    # the retry writes the extended end, is refused (the record is there: its own), and finds the first expiry
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    dynamodb.script("PutItem", "landed_timeout")
    consumer.paused = consumer.tick
    # WHEN the claim returns
    assert consumer.gate.admit(message) is None
    # THEN the record that landed is moved to the extended lease's end before the handler starts
    assert message.lease.extensions == 1
    assert expires_at(dynamodb, message) == pytest.approx(message.lease.deadline, abs=0.001)  # ms precision
    assert dynamodb.count() == {"PutItem": 2, "TransactWriteItems": 1}


def test_a_record_that_cannot_be_moved_with_its_extended_lease_is_not_run(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a tick while the claim lands, and DynamoDB throttling every extension of the record
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    dynamodb.script("PutItem", consumer.tick_then("ok"))
    dynamodb.script("TransactWriteItems", *["throttle"] * 100)
    # WHEN the claim returns
    unrun = consumer.gate.admit(message)
    # THEN the handler does not run (its record would lapse under it): the message is left to its lease, and the
    # record lapses first, so the next delivery runs it
    assert unrun == ("store_unavailable", None)
    assert message.lease.deadline - DEFAULTS.extension_threshold > expires_at(dynamodb, message) > clock()
    assert 1 < len(dynamodb.of("TransactWriteItems")) < 100


def test_a_claim_sent_while_an_extension_is_in_flight_is_written_to_that_extensions_end(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a tick that took the lease before its claim began, its extension's answer held
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    held = threading.Event()
    consumer.sqs.script("ChangeMessageVisibilityBatch", held)
    tick = consumer.heartbeat.tick()
    try:
        # WHEN the claim is written meanwhile, and then the extension's answer comes
        assert consumer.gate.admit(message) is None
    finally:
        held.set()
    tick.wait(timeout=10)
    consumer.heartbeat.stop()
    # THEN the record ends with the extended lease, not with the lease the claim started under
    assert message.lease.extensions == 1
    assert expires_at(dynamodb, message) == pytest.approx(message.lease.deadline, abs=0.001)  # ms precision
    assert dynamodb.count() == {"PutItem": 1}


def test_a_record_completed_while_its_extension_was_retried_is_not_reported_missed(
    clock: FakeClock, dynamodb: FakeDynamoDB, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a record whose extension is throttled, and its handler ending meanwhile: its completion lands
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    assert consumer.gate.admit(message) is None

    def completed_meanwhile() -> None:
        hold = consumer.gate.take(message.lease)  # what gate.complete does first, on the handler's thread
        assert hold is not None
        dynamodb.items["Orders#m1"]["status"] = {"S": RecordStatus.COMPLETED.value}
        raise dynamodb_error("throttle", "TransactWriteItems")

    dynamodb.script("TransactWriteItems", completed_meanwhile)
    # WHEN the tick's record round retries, and finds the record completed
    with caplog.at_level("ERROR", "sqslease"):
        stats = consumer.tick()
    # THEN the record is neither extended nor missed, and no error says another consumer may run the message
    assert (stats.records_extended, stats.records_missed) == (0, 0)
    assert len(dynamodb.of("TransactWriteItems")) == 2
    assert "not extended" not in caplog.text


def test_a_completion_is_retried_while_the_sqs_lease_is_held_though_its_record_lapsed(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a record whose extension was throttled past its slack while its SQS lease was extended
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    assert consumer.gate.admit(message) is None
    dynamodb.script("TransactWriteItems", *["throttle"] * 100)
    stats = consumer.tick()
    assert (stats.extended, stats.records_missed) == (1, 1)
    # WHEN its handler ends after the record's expiry, and its completion is throttled three times
    clock.now = 12.0
    assert not record_live(consumer.gate, message) and message.lease.deadline > clock()
    dynamodb.script("UpdateItem", "throttle", "throttle", "throttle")
    consumer.gate.complete(message, None)
    # THEN it is retried (the SQS lease is held: no other consumer has the message) until it lands
    assert len(dynamodb.of("UpdateItem")) == 4
    assert dynamodb.items["Orders#m1"]["status"]["S"] == RecordStatus.COMPLETED


def test_a_completion_after_the_sqs_lease_was_lost_is_tried_within_its_record_only(
    clock: FakeClock, dynamodb: FakeDynamoDB
) -> None:
    # GIVEN a handler whose record and SQS lease both ended (the lease lost)
    consumer = Consumer(clock, dynamodb)
    message = consumer.receive("m1", left=5.0)
    assert consumer.gate.admit(message) is None
    consumer.scheduler.lost(message.lease)
    clock.now = 12.0
    dynamodb.script("UpdateItem", *["throttle"] * 10)
    # WHEN it completes under throttling
    consumer.gate.complete(message, None)
    # THEN one attempt only: the message may be another consumer's by now
    assert len(dynamodb.of("UpdateItem")) == 1
    assert dynamodb.items["Orders#m1"]["status"]["S"] == RecordStatus.IN_PROGRESS
