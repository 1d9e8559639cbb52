"""The chaos report's definitions on hand-made EMF lines, and the proxy's message ledger on hand-made exchanges.

A row is a deployment (``STACK/JOB_TYPE``): its queue's messages, received or not."""

from __future__ import annotations

import json
import re

from jobqueues.emulator.chaos.ledger import MessageLedger, Observations
from jobqueues.emulator.chaos.report import QueueState, build_report
from jobqueues.emulator.chaos.runs import parse_runs

URL = "http://localhost:4566/123456789012/Prod-Invoices"


def line(
    message_id: str,
    outcome: str,
    end_ms: int,
    processing_ms: float,
    job_type: str = "Invoices",
    stack: str = "Prod",
    queue: str = "Prod-Invoices",
) -> str:
    return json.dumps(
        {
            "_aws": {"Timestamp": end_ms, "CloudWatchMetrics": []},
            "JobType": job_type,
            "Stack": stack,
            "Queue": queue,
            "MessageId": message_id,
            "ProcessingTime": processing_ms,
            "Outcome": outcome,
        }
    )


def report(streams: dict, received: tuple[str, ...] = (), queued: tuple[str, ...] = (), dead: tuple[str, ...] = ()):
    observations = Observations(received=dict.fromkeys(received, "Prod-Invoices"))
    state = [QueueState("Prod/Invoices", URL, frozenset(queued), frozenset(dead))]
    return build_report(parse_runs(streams), observations, state)


def test_ran_twice_is_more_than_one_success_line() -> None:
    result = report(
        {
            "w1": [line("m1", "success", 1_000, 100), line("m2", "failure", 1_000, 100)],
            "w2": [line("m1", "success", 9_000, 100), line("m2", "success", 9_000, 100)],
        }
    )
    (row,) = result.job_types
    assert row.ran_twice == ("m1",)
    assert (row.received, row.completed, row.lost) == (2, 2, ())
    assert result.ran_twice == 1


def test_two_live_handlers_are_overlapping_runs_of_one_message() -> None:
    result = report(
        {
            "w1": [
                line("overlap", "success", 10_000, 5_000),  # ran 5,000..10,000
                line("same-process", "failure", 10_000, 5_000),
                line("same-process", "success", 11_000, 5_000),  # two handler threads of one worker
                line("touching", "failure", 10_000, 5_000),
                line("released", "success", 10_000, 5_000),
            ],
            "w2": [
                line("overlap", "lost", 12_000, 4_000),  # 8,000..12,000: overlaps by 2 s
                line("touching", "success", 15_000, 5_000),  # starts when the other ended
                line("released", "released", 9_000, 3_000),  # never ran, whatever its ProcessingTime says
            ],
            "w3": [],
        }
    )
    (row,) = result.job_types
    assert row.two_live_handlers == ("overlap", "same-process")
    assert result.two_live_handlers == 2


def test_overlap_within_the_timestamps_resolution_is_not_counted() -> None:
    streams = {"w1": [line("m", "failure", 10_000, 1_000)], "w2": [line("m", "success", 11_000, 1_001)]}
    assert report(streams).two_live_handlers == 0  # 1 ms: the resolution of _aws.Timestamp
    streams["w2"] = [line("m", "success", 11_000, 1_003)]
    assert report(streams).two_live_handlers == 1


def test_lost_is_received_never_completed_and_in_neither_queue() -> None:
    streams = {
        "w1": [
            line("failed-then-gone", "failure", 1_000, 10),
            line("failed-still-queued", "failure", 1_000, 10),
            line("sent-to-dlq-by-sqslease", "dead_lettered", 1_000, 10),
            line("done", "success", 1_000, 10),
        ]
    }
    received = ("never-ran", "never-ran-in-dlq", "never-ran-queued", "done")
    result = report(streams, received, queued=("never-ran-queued", "failed-still-queued"), dead=("never-ran-in-dlq",))
    (row,) = result.job_types
    assert row.lost == ("failed-then-gone", "never-ran")
    assert (row.received, row.completed, row.dead_lettered, row.still_queued) == (7, 1, 2, 2)
    assert result.lost == 2 and row.never_received == ()


def test_a_message_sent_but_never_received_is_counted_as_such() -> None:
    # GIVEN a queue whose consumer stopped receiving (its poller died): two messages still in it, never handed out
    streams = {"w1": [line("done", "success", 1_000, 10)]}
    result = report(streams, received=("done",), queued=("stuck-1", "stuck-2"))
    # THEN the report counts them in their deployment's row: queued, never received
    (row,) = result.job_types
    assert row.never_received == ("stuck-1", "stuck-2") and row.still_queued == 2
    assert (row.received, row.completed, row.lost) == (1, 1, ())
    assert result.never_received == 2
    assert "Prod/Invoices never received: stuck-1, stuck-2" in result.format()


def test_never_received_says_stuck_only_of_a_consumer_that_stopped_receiving() -> None:
    # GIVEN messages left in the queue, never handed out, after a normal stop (their consumer had not polled yet)
    streams = {"w1": [line("done", "success", 1_000, 10)]}
    observations = Observations(received=dict.fromkeys(["done"], "Prod-Invoices"))
    state = [QueueState("Prod/Invoices", URL, frozenset({"late-1", "late-2"}))]
    normal = build_report(parse_runs(streams), observations, state).format()
    # THEN the report says what is known: they were not received before the stop; nothing says "stuck"
    assert "Prod/Invoices never received: late-1, late-2 (not received before the stop)" in normal
    assert "stuck" not in normal
    # GIVEN instead a consumer that stopped receiving (its poller failed) while they waited THEN they are stuck
    why = "its poller failed: RuntimeError('boom')"
    stopped = build_report(parse_runs(streams), observations, state, stopped_receiving={"Prod/Invoices": why})
    assert (
        "Prod/Invoices never received: late-1, late-2 (stuck: its consumer stopped receiving: "
        "its poller failed: RuntimeError('boom'))" in stopped.format()
    )


def test_a_message_s_row_is_the_deployment_whose_queue_handed_it_out() -> None:
    # GIVEN one job type deployed by a Dev and a Prod stack: the same JobType on both stacks' lines
    dev_url, prod_url = "http://x/123/Dev-Invoices", URL
    observations = Observations(received={"d": "Dev-Invoices", "p": "Prod-Invoices", "c": "other-queue"})
    state = [
        QueueState("Dev/Invoices", dev_url),
        QueueState("Prod/Invoices", prod_url),
        QueueState("Prod/Receipts", "http://x/123/Prod-Receipts"),
    ]
    streams = {
        "dev": [line("d", "success", 1, 1, stack="Dev", queue="Dev-Invoices")],
        "prod": [line("p", "failure", 1, 1)],
        # a message the proxy did not see handed out: its lines' queue, else their stack and job type
        "other": [
            line("x", "success", 1, 1, stack="Dev", queue="Dev-Invoices"),
            line("y", "success", 1, 1, stack="Old", queue="gone"),
        ],
    }
    result = build_report(parse_runs(streams), observations, state)
    rows = {row.name: row for row in result.job_types}
    # THEN each counts in its own deployment's row, never in the other stack's
    assert sorted(rows) == ["Dev/Invoices", "Old/Invoices", "Prod/Invoices", "Prod/Receipts", "other-queue"]
    assert (rows["Dev/Invoices"].received, rows["Dev/Invoices"].completed) == (2, 2)
    assert (rows["Prod/Invoices"].received, rows["Prod/Invoices"].lost) == (1, ("p",))
    assert rows["Old/Invoices"].completed == 1 and rows["other-queue"].lost == ("c",)
    assert rows["Prod/Receipts"].received == 0  # a deployment with nothing received still gets its row


def test_parse_runs_skips_other_lines_and_takes_parsed_objects() -> None:
    streams = {
        "w1": [
            "INFO starting",
            "",
            "{not json",
            '["a list"]',
            '{"MessageId": "no-outcome"}',
            line("m", "success", 5, 2),
        ],
        "w2": [json.loads(line("m", "failure", 9, 4))],
    }
    runs = sorted(parse_runs(streams), key=lambda run: run.stream)
    assert [(run.stream, run.outcome, run.start_ms, run.end_ms) for run in runs] == [
        ("w1", "success", 3.0, 5.0),
        ("w2", "failure", 5.0, 9.0),
    ]


def test_format_and_json() -> None:
    observations = Observations(received={"lost-one": "Prod-Invoices"})
    state = [QueueState("Prod/Invoices", URL, queued=frozenset({"stuck"}))]
    runs = parse_runs({"w1": [line("m", "success", 10, 5)], "w2": [line("m", "success", 12, 5)]})
    result = build_report(runs, observations, state, faults={"throttle": 3, "hold": 1}, sqs_requests=20, kills=2)
    text = result.format()
    assert "4 of 20 SQS requests faulted (20.0 %: 1 hold, 3 throttle); 2 kill -9, 0 SIGTERM" in text
    assert "Prod/Invoices lost: lost-one" in text and "Prod/Invoices two live: m" in text
    assert re.search(r"^Prod/Invoices +2 +1 +0 +1 +1 +1 +1 +1$", text, re.MULTILINE), text
    data = result.as_dict()
    assert data["job_types"][0] == {
        "name": "Prod/Invoices",
        "received": 2,
        "completed": 1,
        "dead_lettered": 0,
        "still_queued": 1,
        "lost": ["lost-one"],
        "ran_twice": ["m"],
        "two_live_handlers": ["m"],
        "never_received": ["stuck"],
    }
    json.dumps(data)


def exchange(ledger: MessageLedger, operation: str, request: dict, response: dict, status: int = 200) -> None:
    ledger(operation, json.dumps(request).encode(), status, json.dumps(response).encode())


def test_ledger_records_what_the_server_handed_out_and_deleted() -> None:
    ledger = MessageLedger()
    messages = [{"MessageId": f"m{i}", "ReceiptHandle": f"h{i}", "Body": "{}"} for i in range(4)]
    exchange(ledger, "ReceiveMessage", {"QueueUrl": URL}, {"Messages": messages[:3]})
    exchange(ledger, "ReceiveMessage", {"QueueUrl": "http://proxy:1/123/other"}, {"Messages": messages[3:]})
    exchange(ledger, "ReceiveMessage", {"QueueUrl": URL}, {"Messages": [{"MessageId": "m0", "ReceiptHandle": "h0b"}]})
    exchange(ledger, "ReceiveMessage", {"QueueUrl": URL}, {})  # an empty long poll
    exchange(ledger, "DeleteMessage", {"QueueUrl": URL, "ReceiptHandle": "h0b"}, {})
    entries = [{"Id": "0", "ReceiptHandle": "h1"}, {"Id": "1", "ReceiptHandle": "h2"}]
    exchange(ledger, "DeleteMessageBatch", {"QueueUrl": URL, "Entries": entries}, {"Successful": [{"Id": "0"}]})
    exchange(ledger, "DeleteMessage", {"QueueUrl": URL, "ReceiptHandle": "h3"}, {"__type": "x"}, status=400)
    exchange(ledger, "DeleteMessage", {"QueueUrl": URL, "ReceiptHandle": "unknown"}, {})
    ledger("ReceiveMessage", b"not json", 200, b"<xml/>")
    seen = ledger.snapshot()
    assert seen.received == {"m0": "Prod-Invoices", "m1": "Prod-Invoices", "m2": "Prod-Invoices", "m3": "other"}
    assert seen.receives == {"m0": 2, "m1": 1, "m2": 1, "m3": 1}
    assert seen.deleted == {"m0", "m1"}  # m2's entry failed, m3's delete was refused
