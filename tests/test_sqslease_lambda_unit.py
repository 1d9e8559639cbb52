"""The Lambda adapter on a scripted SQS client, with the invocation's remaining time on a clock that moves only
when told (no network): partial batch failures, the deadline guard, lease renewal at the start, FIFO releases,
and the queue it settles on (``SQSLEASE_QUEUE_URL``). The same end to end, against moto_server, in
``test_sqslease_lambda.py``."""

from __future__ import annotations

import io
import logging

import pytest
from support.emf import outcomes, read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import FAKE_QUEUE_ARN, FAKE_QUEUE_URL, fake_event

from sqslease.emf import EmfLogger
from sqslease.invocation import QUEUE_URL_ENV, names_queue_of
from sqslease.lambda_adapter import BatchFailedError, leases_held, process_event
from sqslease.message import Message
from sqslease.retry import FatalSqsError
from sqslease.settings import FailurePolicy, LeaseSettings

SETTINGS = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
#: A queue URL that differs from what the records' ARN gives: an emulator's endpoint.
EMULATOR_URL = "http://localhost:4566/123456789012/quick"


@pytest.fixture(autouse=True)
def no_configured_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)


def changes(sqs: FakeSQS) -> list[tuple[str, int]]:
    return [(e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")]


def fail_on(*bad: str):  # type: ignore[no-untyped-def]
    def handler(body: str, message: Message) -> None:
        if body in bad:
            raise ValueError(f"{body} fails")

    return handler


def test_a_partial_batch_failure_reports_and_releases_only_the_failed_record() -> None:
    # GIVEN three records, the second of which fails
    sqs, emf = FakeSQS(), io.StringIO()
    # WHEN the invocation runs them
    response = process_event(
        fake_event(["ok-1", "bad", "ok-2"]), FakeContext(60), fail_on("bad"), SETTINGS, sqs, emf=EmfLogger(emf)
    )
    # THEN only the failed record is reported and released (visible_now); Lambda deletes the others
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert ("rh-1", 0) in changes(sqs) and not [c for c in changes(sqs) if c[1] == 0 and c[0] != "rh-1"]
    assert sqs.of("DeleteMessageBatch") == []
    assert outcomes(emf) == {"m0": "success", "m1": "failure", "m2": "success"}


def test_a_batch_whose_every_record_failed_raises_unless_told_not_to() -> None:
    with pytest.raises(BatchFailedError, match="all 2 records of the batch failed") as raised:
        process_event(fake_event(["a", "b"]), FakeContext(60), fail_on("a", "b"), SETTINGS, FakeSQS())
    assert raised.value.failures == [{"itemIdentifier": "m0"}, {"itemIdentifier": "m1"}]
    response = process_event(
        fake_event(["a", "b"]),
        FakeContext(60),
        fail_on("a", "b"),
        SETTINGS,
        FakeSQS(),
        raise_on_entire_batch_failure=False,
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m1"}]}


def test_the_deadline_guard_releases_the_records_it_does_not_start_and_reports_them() -> None:
    # GIVEN 2.0 s left, a 5.5 s margin (shrunk to a quarter of the 2.0 s: 0.5 s) and records that take 0.55 s
    clock = FakeClock()
    settings = LeaseSettings(visibility_timeout=30, deadline_margin=5.5, heartbeat_interval=0.2)
    sqs, emf, done = FakeSQS(), io.StringIO(), []

    def handler(body: str, message: Message) -> None:
        clock.sleep(0.55)
        done.append(body)

    # WHEN the invocation runs them
    response = process_event(
        fake_event(["r1", "r2", "r3", "r4"]), FakeContext(2.0, clock), handler, settings, sqs, emf=EmfLogger(emf)
    )
    # THEN records start with 2.0, 1.45 and 0.9 s left (the third ends with 0.35 s left, before the hang point of
    # 0.25 s); with 0.35 s left the fourth is released and reported
    assert done == ["r1", "r2", "r3"]
    assert response == {"batchItemFailures": [{"itemIdentifier": "m3"}]}
    assert [c for c in changes(sqs) if c[1] == 0] == [("rh-3", 0)]
    (released,) = [r for r in read_emf(emf) if r["Outcome"] == "released"]
    assert released["MessageId"] == "m3" and released["ProcessingTime"] == 0


def test_lease_extension_renews_every_lease_before_the_first_record_starts() -> None:
    # GIVEN 12 records and lease extension on (a 21 s lease)
    settings = LeaseSettings(visibility_timeout=21, extension_threshold=5, heartbeat=True)
    sqs, emf = FakeSQS(), io.StringIO()
    calls_at_start: list[int] = []

    def handler(body: str, message: Message) -> None:
        calls_at_start.append(len(sqs.of("ChangeMessageVisibilityBatch")))

    # WHEN the invocation runs them
    response = process_event(
        fake_event([f"r{i}" for i in range(12)]), FakeContext(10), handler, settings, sqs, emf=EmfLogger(emf)
    )
    # THEN ceil(12 / 10) = 2 requests renewed all 12 leases to 21 s before any record ran
    assert response == {"batchItemFailures": []}
    renewals = sqs.of("ChangeMessageVisibilityBatch")
    assert [len(entries) for _, _, entries in renewals] == [10, 2]
    assert {e["VisibilityTimeout"] for _, _, entries in renewals for e in entries} == {21}
    assert calls_at_start[0] == 2
    assert [r["Extensions"] for r in read_emf(emf)] == [1] * 12


class RefusesAtRenewal(FakeSQS):
    """Refuses the renewal's (the first request's) entries of ``stale`` receipt handles as SQS does a stale one."""

    def __init__(self, *stale: str) -> None:
        super().__init__()
        self.stale = stale

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        response = super().change_message_visibility_batch(QueueUrl, Entries)
        if len(self.of("ChangeMessageVisibilityBatch")) > 1:
            return response
        refused = {e["Id"] for e in Entries if e["ReceiptHandle"] in self.stale}
        return {
            "Successful": [s for s in response["Successful"] if s["Id"] not in refused],
            "Failed": [
                {"Id": i, "Code": "ReceiptHandleIsInvalid", "Message": "stale", "SenderFault": True} for i in refused
            ],
        }


RENEWED = LeaseSettings(visibility_timeout=40, heartbeat_interval=0.2, heartbeat=True)


@pytest.mark.parametrize("first_answer", ["throttle", "error500", "timeout"])
def test_a_renewal_refused_as_a_whole_is_retried_before_any_record_starts(first_answer: str) -> None:
    # GIVEN lease extension on, and SQS failing the renewal's first request (throttled, an error, a timeout)
    sqs, emf = FakeSQS().script("ChangeMessageVisibilityBatch", first_answer), io.StringIO()
    requests_at_start: list[int] = []

    def handler(body: str, message: Message) -> None:
        requests_at_start.append(len(sqs.of("ChangeMessageVisibilityBatch")))

    # WHEN an invocation of 3 records runs
    response = process_event(fake_event(["a", "b", "c"]), FakeContext(30), handler, RENEWED, sqs, emf=EmfLogger(emf))
    # THEN the renewal was sent again for the 3, and every record ran after it, renewed once
    assert response == {"batchItemFailures": []}
    renewals = sqs.of("ChangeMessageVisibilityBatch")
    assert [[e["ReceiptHandle"] for e in entries] for _, _, entries in renewals] == [["rh-0", "rh-1", "rh-2"]] * 2
    assert requests_at_start == [2, 2, 2]
    assert [r["Extensions"] for r in read_emf(emf)] == [1, 1, 1]


def test_a_record_whose_lease_the_renewal_finds_stale_is_not_started_and_the_others_run() -> None:
    # GIVEN lease extension on, and SQS refusing the renewal of rh-1 (its receipt handle stale)
    sqs, emf, ran = RefusesAtRenewal("rh-1"), io.StringIO(), []
    # WHEN an invocation of 3 records runs
    response = process_event(
        fake_event(["a", "b", "c"]), FakeContext(30), lambda b, m: ran.append(b), RENEWED, sqs, emf=EmfLogger(emf)
    )
    # THEN that record is reported unstarted, its lease lost (not sent again), and the other two ran renewed
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert ran == ["a", "c"] and len(sqs.of("ChangeMessageVisibilityBatch")) == 1
    assert [(r["MessageId"], r["Extensions"]) for r in read_emf(emf)] == [("m0", 1), ("m2", 1)]


def test_a_fatal_answer_to_the_renewal_is_raised_before_any_record_runs() -> None:
    sqs, ran = FakeSQS().script("ChangeMessageVisibilityBatch", "access_denied"), []
    with pytest.raises(FatalSqsError, match="AccessDenied"):
        process_event(fake_event(["a", "b"]), FakeContext(30), lambda b, m: ran.append(b), RENEWED, sqs)
    assert ran == [] and len(sqs.of("ChangeMessageVisibilityBatch")) == 1


def test_without_lease_extension_nothing_is_renewed() -> None:
    sqs = FakeSQS()
    settings = LeaseSettings(visibility_timeout=18, heartbeat=False)
    assert process_event(fake_event(["a"]), FakeContext(3), lambda b, m: None, settings, sqs) == {
        "batchItemFailures": []
    }
    assert sqs.calls == []


@pytest.mark.parametrize("skip_group_on_error", [False, True])
def test_a_fifo_failure_releases_the_rest_of_its_group_or_batch_and_reports_them_in_order(
    skip_group_on_error: bool,
) -> None:
    # GIVEN a FIFO batch A0 B0 A1 B1 A2 B2 where A1 fails
    bodies = ["A0", "B0", "A1", "B1", "A2", "B2"]
    event = fake_event(bodies, arn=FAKE_QUEUE_ARN + ".fifo", groups=[b[0] for b in bodies])
    sqs, ran = FakeSQS(), []

    def handler(body: str, message: Message) -> None:
        ran.append(body)
        if body == "A1":
            raise RuntimeError("A1 fails")

    # WHEN the invocation runs it
    response = process_event(event, FakeContext(60), handler, SETTINGS, sqs, skip_group_on_error=skip_group_on_error)
    # THEN the group (or the whole batch) stops at A1: what follows is released unrun and reported, in order
    stopped = ["A1", "A2"] if skip_group_on_error else ["A1", "B1", "A2", "B2"]
    ids = [f"m{bodies.index(b)}" for b in stopped]
    assert response == {"batchItemFailures": [{"itemIdentifier": i} for i in ids]}
    assert ran == [b for b in bodies if b not in stopped or b == "A1"]
    assert sorted(h for h, vt in changes(sqs) if vt == 0) == sorted(f"rh-{bodies.index(b)}" for b in stopped)


def test_a_fatal_sqs_error_is_raised_from_the_invocation() -> None:
    sqs = FakeSQS().script("ChangeMessageVisibilityBatch", "access_denied")
    settings = LeaseSettings(visibility_timeout=30, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
    with pytest.raises(FatalSqsError, match="AccessDenied"):
        process_event(fake_event(["a", "b"]), FakeContext(60), fail_on("a"), settings, sqs)


# -- the queue: SQSLEASE_QUEUE_URL, else the records' ARN ----------------------------------------------------------
def test_without_a_configured_queue_the_records_arn_names_it() -> None:
    sqs, seen = FakeSQS(), []
    process_event(fake_event(["a"]), FakeContext(60), lambda b, m: seen.append(m.queue_url), SETTINGS, sqs)
    assert seen == [FAKE_QUEUE_URL] and sqs.queue_urls == {FAKE_QUEUE_URL}


def test_the_adapter_settles_on_the_queue_url_the_construct_set(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN SQSLEASE_QUEUE_URL naming the records' queue at another endpoint than the ARN gives
    monkeypatch.setenv(QUEUE_URL_ENV, EMULATOR_URL)
    sqs, seen, emf = FakeSQS(), [], io.StringIO()
    # WHEN an invocation renews, runs and releases
    response = process_event(
        fake_event(["ok", "bad"]),
        FakeContext(60),
        lambda b, m: (seen.append(m.queue_url), fail_on("bad")(b, m)),
        SETTINGS,
        sqs,
        emf=EmfLogger(emf),
    )
    # THEN every request names that URL, and the handler sees it; nothing is logged as an error
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert sqs.queue_urls == {EMULATOR_URL} and seen == [EMULATOR_URL] * 2
    assert {r["Queue"] for r in read_emf(emf)} == {"quick"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and "records come from" in r.getMessage()]
    # and leases_held (around another batch processor) uses it too
    held = FakeSQS()
    with leases_held(fake_event(["x"]), FakeContext(60), SETTINGS, held):
        pass
    assert held.queue_urls == {EMULATOR_URL}


@pytest.mark.parametrize(
    "configured",
    [
        "http://localhost:4566/123456789012/other",  # another queue
        "http://localhost:4566/999999999999/quick",  # another account
        "https://sqs.eu-west-1.amazonaws.com/123456789012/quick",  # another region
    ],
)
def test_a_configured_queue_that_is_not_the_records_is_an_error_and_no_record_is_lost(
    configured: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN SQSLEASE_QUEUE_URL naming another queue than the records' ARN
    monkeypatch.setenv(QUEUE_URL_ENV, configured)
    sqs, done = FakeSQS(), []
    # WHEN an invocation runs
    with caplog.at_level(logging.ERROR, "sqslease"):
        response = process_event(fake_event(["a", "b"]), FakeContext(60), lambda b, m: done.append(b), SETTINGS, sqs)
    # THEN it is logged as an error naming both, and the records run and are settled on their own queue
    (error,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert QUEUE_URL_ENV in error and configured in error and FAKE_QUEUE_ARN in error
    assert response == {"batchItemFailures": []} and done == ["a", "b"]
    assert sqs.queue_urls == {FAKE_QUEUE_URL}


def test_a_queue_url_argument_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(QUEUE_URL_ENV, EMULATOR_URL)
    sqs = FakeSQS()
    argument = "http://127.0.0.1:5000/123456789012/quick"
    process_event(fake_event(["a"]), FakeContext(60), lambda b, m: None, SETTINGS, sqs, argument)
    assert sqs.queue_urls == {argument}


@pytest.mark.parametrize(
    ("url", "same"),
    [
        ("https://sqs.us-east-1.amazonaws.com/123456789012/quick", True),
        ("https://vpce-1a2b.sqs.us-east-1.vpce.amazonaws.com/123456789012/quick", True),
        ("http://localhost:4566/123456789012/quick", True),  # an emulator's URL names no region
        ("http://localhost:4566/queue/us-east-1/123456789012/quick", True),
        ("https://sqs.us-west-2.amazonaws.com/123456789012/quick", False),
        ("http://localhost:4566/123456789012/quick.fifo", False),
        ("http://localhost:4566/123456789012/quick-dlq", False),
    ],
)
def test_which_urls_name_the_queue_of_an_arn(url: str, same: bool) -> None:
    assert names_queue_of(url, FAKE_QUEUE_ARN) is same
