"""``jobqueues dlq list|redrive|purge`` on ``tests/ops_app`` (Stages, FIFO + KMS, a Lambda).

- ``list``: a dead-letter copy shows the original's id, its error from the consumer's log group (found with one
  search per 25 messages); a real poison dead-lettered under ``jobqueues local up`` is in ``test_cli_local.py``.
- ``redrive``: FIFO keeps groups, deduplication ids and in-group order (move task and loop alike); a loop
  interrupted between its send and its delete loses nothing and a rerun finishes; ``--dry-run`` moves nothing.
- ``purge``: asks first.

Tests on the shared deployment (``ops_deployment``) fill the DLQs directly and leave every queue empty.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment
from rich.console import Console
from support.moto_queues import take_all

from jobqueues.cli import main
from jobqueues.cli.dlq import dead_letter_table
from jobqueues.ops.discovery import JobType, discover
from jobqueues.ops.dlq import DeadLetter, attribute_error, list_dead_letters
from jobqueues.ops.last_errors import LastError, any_term_patterns, parse_failure
from jobqueues.ops.redrive import RedriveResult, loop, redrive
from sqslease.emf import EmfLogger

JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def fill_fifo_dlq(sqs: Any, job: JobType, groups: int = 3, per_group: int = 5) -> list[tuple[str, str, str]]:
    """(body, group, dedup id) sent to ``job``'s FIFO DLQ, groups interleaved."""
    sent = []
    for n in range(per_group):
        for g in range(groups):
            body, group, dedup = (
                json.dumps({"id": f"{g}-{n}"}),
                f"customer-{g}",
                f"dedup-{g}-{n}-{uuid.uuid4().hex[:6]}",
            )
            sqs.send_message(
                QueueUrl=job.dead_letter_queue_url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=dedup
            )
            sent.append((body, group, dedup))
    return sent


def assert_redriven(sqs: Any, job: JobType, sent: list[tuple[str, str, str]]) -> None:
    moved = take_all(sqs, job.queue_url or "")
    assert sorted(
        (m["Body"], m["Attributes"]["MessageGroupId"], m["Attributes"]["MessageDeduplicationId"]) for m in moved
    ) == sorted(sent)
    for group in {g for _, g, _ in sent}:
        order = [json.loads(m["Body"])["id"] for m in moved if m["Attributes"]["MessageGroupId"] == group]
        assert order == [json.loads(b)["id"] for b, g, _ in sent if g == group], group
    assert take_all(sqs, job.dead_letter_queue_url or "") == []


def fifo_loop(sqs: Any, job: JobType, visibility_s: int = 60) -> RedriveResult:
    """The receive/send/delete redrive of ``job``'s FIFO DLQ, without progress or a stop request."""
    dlq, source = job.dead_letter_queue_url or "", job.queue_url or ""
    return loop(sqs, dlq, source, True, None, lambda moved, total: None, threading.Event(), visibility_s)


@pytest.fixture
def invoices(ops_deployment: Deployment) -> JobType:
    return discover(ops_deployment.server.client("cloudformation")).find("Invoices")


@NEEDS_CDK
@pytest.mark.parametrize("method", ["auto", "loop"])
def test_fifo_redrive_keeps_groups_dedup_ids_and_order(
    ops_deployment: Deployment, invoices: JobType, method: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = ops_deployment.server.client("sqs")
    sent = fill_fifo_dlq(sqs, invoices)
    url = ops_deployment.server.endpoint
    assert main(["--endpoint-url", url, "dlq", "redrive", "Invoices", "--method", method, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["method"], result["moved"], result["failed"]) == (
        "move-task" if method == "auto" else "loop",
        15,
        [],
    )
    assert_redriven(sqs, invoices, sent)


@NEEDS_CDK
def test_a_loop_killed_between_send_and_delete_loses_nothing(ops_deployment: Deployment, invoices: JobType) -> None:
    sqs = ops_deployment.server.client("sqs")
    sent = fill_fifo_dlq(sqs, invoices, groups=2, per_group=10)

    class KilledAfterSecondSend:
        """The client of a redrive killed right after its second batch was sent, before its delete; ``held``: the
        receipt handles of what it received and did not delete."""

        def __init__(self) -> None:
            self.sends = 0
            self.held: list[str] = []

        def __getattr__(self, name: str) -> Any:
            return getattr(sqs, name)

        def receive_message(self, **kwargs: Any) -> Any:
            answer = sqs.receive_message(**kwargs)
            self.held += [m["ReceiptHandle"] for m in answer.get("Messages", [])]
            return answer

        def delete_message_batch(self, **kwargs: Any) -> Any:
            if self.sends == 2:
                raise KeyboardInterrupt
            self.held = [h for h in self.held if h not in {e["ReceiptHandle"] for e in kwargs["Entries"]}]
            return sqs.delete_message_batch(**kwargs)

        def send_message_batch(self, **kwargs: Any) -> Any:
            self.sends += 1
            return sqs.send_message_batch(**kwargs)

    killed = KilledAfterSecondSend()
    with pytest.raises(KeyboardInterrupt):
        fifo_loop(killed, invoices)  # its batch in hand leased for 60 s
    # The second batch is in both queues, and in flight in the DLQ: a rerun at once finds both groups locked
    # and says so; once the batch is visible again, a rerun sends it again with the same deduplication ids,
    # which the FIFO queue drops, and finishes the rest.
    early = fifo_loop(sqs, invoices)
    assert (early.moved, early.in_flight_left) == (0, 10)
    entries = [{"Id": str(i), "ReceiptHandle": h, "VisibilityTimeout": 0} for i, h in enumerate(killed.held)]
    released = sqs.change_message_visibility_batch(QueueUrl=invoices.dead_letter_queue_url, Entries=entries)
    assert len(entries) == 10 and not released.get("Failed")  # the killed loop's lease runs out: visible again
    result = fifo_loop(sqs, invoices)
    assert result.moved == 10 and not result.failed
    assert_redriven(sqs, invoices, sent)


@NEEDS_CDK
def test_a_stop_request_ends_the_loop_after_its_batch(ops_deployment: Deployment, invoices: JobType) -> None:
    sqs = ops_deployment.server.client("sqs")
    sent = fill_fifo_dlq(sqs, invoices, groups=1, per_group=15)
    stop = threading.Event()
    first = redrive(
        sqs,
        invoices.dead_letter_queue_url or "",
        invoices.queue_url or "",
        True,
        "loop",
        None,
        lambda moved, total: stop.set() if moved else None,  # asked after the first batch
        stop,
    )
    assert first.stopped and first.moved == 10
    second = redrive(sqs, invoices.dead_letter_queue_url or "", invoices.queue_url or "", True, "loop")
    assert not second.stopped and second.moved == 5
    assert_redriven(sqs, invoices, sent)


@NEEDS_CDK
def test_dry_run_moves_nothing(
    ops_deployment: Deployment, invoices: JobType, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = ops_deployment.server.client("sqs")
    fill_fifo_dlq(sqs, invoices, groups=2, per_group=3)
    try:
        assert main(["--endpoint-url", ops_deployment.server.endpoint, "dlq", "redrive", "Invoices", "--dry-run"]) == 0
        assert capsys.readouterr().out == (
            "would move 6 messages from Prod-Billing/Invoices's DLQ to its queue (nothing moved)\n"
            "  group customer-0: 3\n  group customer-1: 3\n"
        )
        assert take_all(sqs, invoices.queue_url or "") == []
    finally:
        assert len(take_all(sqs, invoices.dead_letter_queue_url or "")) == 6


def fill_groups(sqs: Any, job: JobType, sizes: dict[str, int], interleaved: bool) -> list[tuple[str, str]]:
    """(group, body) sent to ``job``'s FIFO DLQ: each group's messages in a row, or the groups taking turns."""
    order = [(g, n) for g, size in sizes.items() for n in range(size)]
    if interleaved:
        order.sort(key=lambda item: item[1])
    sent = []
    for group, n in order:
        body = json.dumps({"id": f"{group}-{n}"})
        sqs.send_message(
            QueueUrl=job.dead_letter_queue_url,
            MessageBody=body,
            MessageGroupId=group,
            MessageDeduplicationId=f"{group}-{n}-{uuid.uuid4().hex[:6]}",
        )
        sent.append((group, body))
    return sent


#: DLQs the dry run once miscounted (it said 10 where 12 moved, 10 for 45, 30 for 36): groups and sizes, whether
#: the groups' messages take turns, and what the dry run says now: per group (``None``: a lower bound, 10), and
#: the messages it cannot place in a group. A FIFO receive shows at most 10 messages of a group without deleting.
DRY_RUNS = {
    "one group of 12": ({"a": 12}, False, {"a": 12}, 0),
    "one group of 30 and three of 5 taking turns": (
        {"big": 30, "g0": 5, "g1": 5, "g2": 5},
        True,
        {"big": 30, "g0": 5, "g1": 5, "g2": 5},
        0,
    ),
    "three groups of 12": ({"a": 12, "b": 12, "c": 12}, False, {"a": None, "b": None, "c": None}, 6),
    "three groups of 5 taking turns": ({"g0": 5, "g1": 5, "g2": 5}, True, {"g0": 5, "g1": 5, "g2": 5}, 0),
}


@NEEDS_CDK
@pytest.mark.parametrize("case", sorted(DRY_RUNS))
def test_a_fifo_dry_run_counts_every_message_and_each_group_it_can(
    ops_deployment: Deployment, invoices: JobType, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes, interleaved, expected, not_in_groups = DRY_RUNS[case]
    sqs = ops_deployment.server.client("sqs")
    sent = fill_groups(sqs, invoices, sizes, interleaved)
    try:
        # WHEN a dry run counts the DLQ
        url = ops_deployment.server.endpoint
        assert main(["--endpoint-url", url, "dlq", "redrive", "Invoices", "--dry-run", "--json"]) == 0
        counted = json.loads(capsys.readouterr().out)
        # THEN every message is counted, each group exactly where SQS lets a receive see it, the rest said so
        assert counted["messages"] == len(sent)
        assert counted["groups"] == {g: 10 if n is None else n for g, n in expected.items()}
        assert sorted(counted["at_least"]) == sorted(g for g, n in expected.items() if n is None)
        assert counted["not_in_groups"] == not_in_groups
        assert counted["messages"] == sum(counted["groups"].values()) + counted["not_in_groups"]
        # ... and the table says the same
        assert main(["--endpoint-url", url, "dlq", "redrive", "Invoices", "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"would move {len(sent)} messages from Prod-Billing/Invoices's DLQ"), out
        for group, n in expected.items():
            assert f"  group {group}: {'10 or more' if n is None else n}\n" in out, out
        assert (f"  {not_in_groups} more in the groups marked 'or more'" in out) == bool(not_in_groups), out
        assert take_all(sqs, invoices.queue_url or "") == []  # nothing moved
    finally:
        left = take_all(sqs, invoices.dead_letter_queue_url or "")
    # ... nothing consumed, every group still in order
    assert len(left) == len(sent)
    for group in sizes:
        assert [m["Body"] for m in left if m["Attributes"]["MessageGroupId"] == group] == [
            b for g, b in sent if g == group
        ]
    # ... each message received twice at most by each of the two dry runs (then once by take_all)
    assert max(int(m["Attributes"]["ApproximateReceiveCount"]) for m in left) <= 2 * 2 + 1


@NEEDS_CDK
def test_a_standard_dry_run_receives_nothing(ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    receipts = discover(ops_deployment.server.client("cloudformation")).find("Receipts")
    sqs = ops_deployment.server.client("sqs")
    for first in range(0, 25, 10):
        entries = [{"Id": str(i), "MessageBody": f"r-{first + i}"} for i in range(min(10, 25 - first))]
        sqs.send_message_batch(QueueUrl=receipts.dead_letter_queue_url, Entries=entries)
    try:
        url = ops_deployment.server.endpoint
        assert main(["--endpoint-url", url, "dlq", "redrive", "Receipts", "--dry-run", "--json"]) == 0
        counted = json.loads(capsys.readouterr().out)
        assert (counted["messages"], counted["groups"]) == (25, None)
    finally:
        left = take_all(sqs, receipts.dead_letter_queue_url or "")
    # SQS's counts, not a peek: no receive spent on any message (this take is each one's first)
    assert len(left) == 25 and {m["Attributes"]["ApproximateReceiveCount"] for m in left} == {"1"}


@NEEDS_CDK
def test_purge_asks_first(ops_deployment: Deployment) -> None:
    receipts = discover(ops_deployment.server.client("cloudformation")).find("Receipts")
    sqs = ops_deployment.server.client("sqs")
    for i in range(3):
        sqs.send_message(QueueUrl=receipts.dead_letter_queue_url, MessageBody=f"dead {i}")
    command = [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "dlq", "purge", "Receipts"]
    declined = subprocess.run(command, input="n\n", capture_output=True, text=True, timeout=60)
    assert declined.returncode == 1 and "delete the 3 messages of Prod-Billing/Receipts's DLQ" in declined.stdout
    assert declined.stdout.rstrip().endswith("nothing deleted")
    names = ["ApproximateNumberOfMessages"]

    def depth() -> int:
        attributes = sqs.get_queue_attributes(QueueUrl=receipts.dead_letter_queue_url, AttributeNames=names)
        return int(attributes["Attributes"][names[0]])

    assert depth() == 3
    # no input at all (a CI step without --yes): declined, not "interrupted"
    unanswered = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert unanswered.returncode == 1 and "nothing deleted; pass --yes" in unanswered.stdout, unanswered
    assert depth() == 3
    done = subprocess.run([*command, "--yes"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "purged Prod-Billing/Receipts's DLQ" in done.stdout, done
    assert depth() == 0
    # an empty DLQ: nothing to ask
    empty = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert empty.returncode == 0 and "is empty: nothing to purge" in empty.stdout, empty


@NEEDS_CDK
def test_purge_with_standard_input_closed_asks_nobody(ops_deployment: Deployment) -> None:
    # GIVEN a DLQ with a message, and `jobqueues dlq purge` run with its standard input closed (`<&-`)
    receipts = discover(ops_deployment.server.client("cloudformation")).find("Receipts")
    sqs = ops_deployment.server.client("sqs")
    sqs.send_message(QueueUrl=receipts.dead_letter_queue_url, MessageBody="dead")
    try:
        command = [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "dlq", "purge", "Receipts"]
        done = subprocess.run(command, preexec_fn=lambda: os.close(0), capture_output=True, text=True, timeout=60)
        # THEN nobody is asked: nothing deleted, status 1, as with an empty input (no AttributeError traceback)
        assert (done.returncode, done.stderr) == (1, ""), done
        assert "no answer (no input to read): nothing deleted; pass --yes" in done.stdout
    finally:
        assert len(take_all(sqs, receipts.dead_letter_queue_url or "")) == 1


# dlq list on a real poison message, dead-lettered by the real worker under `jobqueues local up`: in
# test_cli_local.py, on its `local up` run of the ops app (one deploy for both).


# dlq list on the shared deployment: failure lines written by sqslease's own EMF code, put in the consumer's log
# group; each message's latest error is found with one search per 25 messages, not one per message.


class CountingLogs:
    """A CloudWatch Logs client that counts its FilterLogEvents calls."""

    def __init__(self, logs: Any) -> None:
        self.logs, self.calls = logs, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.logs, name)

    def filter_log_events(self, **kwargs: Any) -> Any:
        self.calls += 1
        return self.logs.filter_log_events(**kwargs)


def emf_line(message_id: str, outcome: str, error: BaseException | None, at_ms: int) -> str:
    """The line sqslease writes for one processed Receipts message."""
    out = io.StringIO()
    EmfLogger(out).record(
        job_type="Receipts",
        queue="receipts",
        message_id=message_id,
        processing_ms=12.5,
        outcome=outcome,
        receive_count=1,
        extensions=0,
        lease_lost=False,
        timestamp_ms=at_ms,
        error=error,
    )
    return out.getvalue().rstrip("\n")


def put_lines(logs: Any, group: str, lines: list[tuple[int, str]]) -> None:
    """``lines`` ((timestamp ms, text)) into a new stream of ``group`` (made if the deploy did not)."""
    try:
        logs.create_log_group(logGroupName=group)
    except logs.exceptions.ResourceAlreadyExistsException:
        pass
    stream = f"test-{uuid.uuid4().hex}"
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    events = [{"timestamp": at, "message": text} for at, text in sorted(lines)]
    logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)


@NEEDS_CDK
@pytest.mark.parametrize("count", [3, 30])
def test_dlq_list_finds_each_message_s_latest_error_in_one_search_per_25(
    ops_deployment: Deployment, count: int
) -> None:
    receipts = discover(ops_deployment.server.client("cloudformation")).find("Receipts")
    assert receipts.consumer is not None and receipts.consumer.log_group
    sqs, logs = ops_deployment.server.client("sqs"), CountingLogs(ops_deployment.server.client("logs"))
    ids = [
        sqs.send_message(QueueUrl=receipts.dead_letter_queue_url, MessageBody=json.dumps({"id": n, "fail": "x"}))[
            "MessageId"
        ]
        for n in range(count)
    ]
    try:
        now = int(time.time() * 1000)
        lines = []
        for n, message_id in enumerate(ids):
            lines += [
                (now + 1, emf_line(message_id, "failure", RuntimeError(f"first try {n}"), now + 1)),
                # the latest failure, behind a Lambda-style prefix
                (
                    now + 3,
                    "[ERROR]\t2026-01-01T00:00:00Z\treq-1\t" + emf_line(message_id, "failure", KeyError(n), now + 3),
                ),
                (now + 2, f"message {message_id} failed with {{'retryable': True}}"),  # a log line, not EMF
            ]
        other = str(uuid.uuid4())
        lines.append((now + 4, emf_line(other, "failure", RuntimeError("another message"), now + 4)))
        put_lines(logs, receipts.consumer.log_group, lines)
        found = list_dead_letters(receipts, sqs, logs, limit=count)
        assert sorted(row.message_id for row in found.rows) == sorted(ids)
        for row in found.rows:
            n = ids.index(row.message_id)
            assert row.last_error == LastError("KeyError", str(n), now + 3, "log"), row
            assert row.receive_count == 0 and row.group is None and json.loads(row.body) == {"id": n, "fail": "x"}
        assert (found.no_log_reason, found.log_complete) == (None, True)
        assert logs.calls == found.log_calls == -(-count // 25)  # 1 search for 3 messages, 2 for 30
        # nothing consumed: every message is visible again, at once
        assert len(take_all(sqs, receipts.dead_letter_queue_url or "")) == count
    finally:
        take_all(sqs, receipts.dead_letter_queue_url or "")


@NEEDS_CDK
def test_a_job_type_without_a_consumer_says_why_no_error_is_shown(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    emails = discover(ops_deployment.server.client("cloudformation")).find("Emails")
    sqs = ops_deployment.server.client("sqs")
    sqs.send_message(QueueUrl=emails.dead_letter_queue_url, MessageBody="undeliverable")
    try:
        assert main(["--endpoint-url", ops_deployment.server.endpoint, "dlq", "list", "Emails", "--json"]) == 0
        out = capsys.readouterr()
        [row] = json.loads(out.out)
        assert (row["body"], row["error"], row["error_source"]) == ("undeliverable", None, None)
        assert out.err == (
            "note: no error from the log: OpsShared/Emails has no consumer in its stacks, so no log to search; "
            "an error shown is from sqslease's dead-letter copy\n"
        )
    finally:
        assert len(take_all(sqs, emails.dead_letter_queue_url or "")) == 1


@NEEDS_CDK
def test_on_a_narrow_terminal_the_title_and_notes_are_never_broken_into_lines(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a DLQ message of a job type without a consumer (its note names why no error is shown), and a terminal
    # of 40 columns (a docs-only trial there saw a job type's name and a log group's split mid-word: an operator
    # copies them)
    emails = discover(ops_deployment.server.client("cloudformation")).find("Emails")
    sqs = ops_deployment.server.client("sqs")
    sqs.send_message(QueueUrl=emails.dead_letter_queue_url, MessageBody="undeliverable")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("NO_COLOR", "1")
    try:
        # WHEN the DLQ is listed
        assert main(["--endpoint-url", ops_deployment.server.endpoint, "dlq", "list", "Emails"]) == 0
        lines = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out).splitlines()  # a terminal's bold figures
        # THEN the title and each note are one line each, for the terminal to wrap (a copy gets them whole), with
        # nothing after their last character, and the message's block follows
        assert lines[0] == "OpsShared/Emails's DLQ: 1 of about 1 message, peeked, not consumed", lines
        assert lines[1].startswith("note: no error from the log: OpsShared/Emails has no consumer"), lines
        assert lines[1].endswith("an error shown is from sqslease's dead-letter copy"), lines
        assert any(line.strip() == "body       undeliverable" for line in lines[2:]), lines
    finally:
        assert len(take_all(sqs, emails.dead_letter_queue_url or "")) == 1


@NEEDS_CDK
@pytest.mark.parametrize("subcommand", ["list", "purge"])
def test_an_unknown_job_type_exits_2_naming_those_that_exist(
    ops_deployment: Deployment, subcommand: str, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--yes"] if subcommand == "purge" else []
    assert main(["--endpoint-url", ops_deployment.server.endpoint, "dlq", subcommand, "Invoice", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no job type Invoice in ") and err.count("\n") == 1
    assert (
        "; job types: OpsShared/Emails, Prod-Billing/Invoices, Prod-Billing/Receipts; did you mean Invoices?\n" in err
    )


def test_a_failure_line_is_found_behind_a_prefix_and_only_a_failure_line() -> None:
    line = emf_line("m-1", "failure", RuntimeError("boom {x}"), 5)
    assert parse_failure(line) == json.loads(line)
    assert parse_failure("[ERROR]\t{not json} 2026-01-01\treq\t" + line + "\n") == json.loads(line)
    assert parse_failure(emf_line("m-1", "success", None, 5)) is None
    assert parse_failure("message m-1 failed with {'a': 1}") is None


def test_search_patterns_fit_the_api_s_1024_characters() -> None:
    ids = [str(uuid.uuid4()) for _ in range(60)]
    patterns = any_term_patterns(ids)
    assert [len(group) for group, _ in patterns] == [25, 25, 10]
    assert all(len(pattern) <= 1024 for _, pattern in patterns)
    assert patterns[0][1].startswith(f'?"{ids[0]}" ?"{ids[1]}"')
    assert any_term_patterns(ids[:1]) == [([ids[0]], f'"{ids[0]}"')]


def test_a_message_released_unrun_says_it_never_failed() -> None:
    from jobqueues.ops.last_errors import last_logged_errors

    # GIVEN a FIFO group-mate released twice after its group's earlier message failed, and a message that failed
    lines = [
        emf_line("mate", "released", None, 1),
        emf_line("mate", "released", None, 2),
        emf_line("poison", "failure", ValueError("bad order"), 1),
        emf_line("poison", "released", None, 2),
    ]

    class Logs:
        def filter_log_events(self, **request: Any) -> dict[str, Any]:
            return {"events": [{"message": line, "timestamp": 1000 + i} for i, line in enumerate(lines)]}

    # WHEN the log is searched for both
    errors = last_logged_errors(Logs(), "/group", {"mate": 0, "poison": 0}).errors
    # THEN the failed one shows its error, and the released one that it never failed, and why it was released
    assert (errors["poison"].error_type, errors["poison"].error) == ("ValueError", "bad order")
    assert errors["mate"].error_type == "released"
    assert errors["mate"].error.startswith("never failed: released unrun 2 times (FIFO: an earlier message")


def test_messages_beyond_the_groups_seen_are_placed_only_where_they_can_be() -> None:
    from jobqueues.ops.dry_run import place

    # every message seen: each group exact
    assert place({"a": 3, "b": 2}, set(), 5, complete=True).groups == {"a": 3, "b": 2}
    # one group may hold more: the rest is its own
    one = place({"a": 10, "b": 2}, {"a"}, 15, complete=True)
    assert (one.groups, one.at_least, one.not_in_groups) == ({"a": 13, "b": 2}, frozenset(), 0)
    # two may: each is a lower bound, the rest among them
    two = place({"a": 10, "b": 10, "c": 1}, {"a", "b"}, 26, complete=True)
    assert (two.groups, two.at_least, two.not_in_groups) == ({"a": 10, "b": 10, "c": 1}, frozenset({"a", "b"}), 5)
    # the receives stopped before every group was reached: the rest may be in groups never seen
    cut = place({"a": 10, "b": 3}, {"a"}, 20, complete=False)
    assert (cut.groups, cut.at_least, cut.not_in_groups) == ({"a": 10, "b": 3}, frozenset({"a"}), 7)


def test_the_table_shows_the_original_id_of_a_dead_letter_copy() -> None:
    # GIVEN a copy sqslease dead-lettered itself (a new message id), carrying the original's id
    error = LastError("RuntimeError", "card declined", None, "attribute")
    copy = DeadLetter("copy-id", "original-id", 2, 27.0, "poison", '{"id": 1}', 9, error)
    kept = DeadLetter("same-id", "same-id", 3, 30.0, None, "x", 1, None)  # dead-lettered by SQS: its own id
    # WHEN the table is printed
    console = Console(width=200, record=True, color_system=None)
    console.print(dead_letter_table([copy, kept]))
    text = console.export_text()
    # THEN the row shows the id the message was sent with, which its consumer's log lines name
    assert "original-id" in text and "copy-id" not in text and "same-id" in text


@pytest.mark.parametrize(
    ("written", "error_type", "text"),
    [
        ("RuntimeError('card declined')", "RuntimeError", "card declined"),
        ('ValueError("it\'s malformed")', "ValueError", "it's malformed"),
        ("KeyError('order')", "KeyError", "order"),
        ("TimeoutError()", "TimeoutError", ""),
        ("OSError(5, 'I/O error')", "OSError", "5, 'I/O error'"),
        ("RuntimeError('cut short at a thousand charac", "RuntimeError", "'cut short at a thousand charac"),
        ("no parenthesis", "error", "no parenthesis"),  # not written by sqslease: kept whole
    ],
)
def test_the_error_a_dead_letter_copy_carries_reads_as_its_type_and_its_text(
    written: str, error_type: str, text: str
) -> None:
    # GIVEN the error sqslease wrote on its DLQ copy: repr(error), at most 1,000 characters
    # WHEN dlq list reads it (no log line found) THEN the row says "type: text", not the type twice
    assert attribute_error(written) == LastError(error_type, text, None, "attribute")


def test_on_a_narrow_terminal_a_message_id_and_the_headers_are_never_split() -> None:
    # GIVEN dead letters of a FIFO queue (a trial at 80 columns saw each id split at a hyphen, so it could not be
    # copied, and at 40 ids in 3-letter pieces and headers as "mes/sag/e id")
    from jobqueues.cli.dlq import dead_letters_view

    error = LastError("RuntimeError", "card declined for order 7 after three tries", None, "attribute")
    ids = ["0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7"]
    rows = [DeadLetter(i, i, 3, 62.0, "customer-7", '{"order": 7, "card": "4242"}', 28, error) for i in ids]
    for width in (200, 80, 60, 40):
        # WHEN they are listed that wide
        console = Console(width=width, record=True, color_system=None)
        console.print(dead_letters_view(rows))
        text = console.export_text()
        # THEN no line is wider, each id is whole on a line, and so is each header or label
        assert max(len(line) for line in text.splitlines()) <= width and "…" not in text, text
        for message_id in ids:
            assert any(message_id in line for line in text.splitlines()), (width, text)
        for label in ("receives", "age", "group", "body"):
            assert label in text, (width, label, text)
        assert "last" in text and "error" in text and "card declined" in text
        # AND no line, table or block, ends in blanks (a grid pads each cell to its column: a copied line got them)
        assert [line for line in text.splitlines() if line != line.rstrip()] == [], (width, text)


def test_a_fifo_group_is_never_split_and_a_short_body_is_not_wrapped() -> None:
    # GIVEN FIFO dead letters of a long group and a short JSON body (a trial at 100-120 columns saw the group split
    # as another group's name, and a 14-character body wrapped)
    from jobqueues.cli.dlq import dead_letters_view

    group = "customer-with-a-long-group-name-0001"
    rows = [DeadLetter("0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-469f-a165-70867728950e", 2, 5.0,
                       group, '{"order": 500}', 14, None)]  # fmt: skip
    # (a docs-only trial at 40 columns saw a 31-character group folded at a hyphen in the blocks' value column:
    # a group longer than that column is on a line of its own, under its label)
    for width in (200, 120, 100, 80, 60, 40):
        console = Console(width=width, record=True, color_system=None)
        console.print(dead_letters_view(rows))
        text = console.export_text()
        assert any(group in line for line in text.splitlines()), (width, text)
        assert any('{"order": 500}' in line for line in text.splitlines()), (width, text)
