"""``jobqueues send`` on ``tests/ops_app`` deployed to the emulator: one message or a file of them, FIFO groups
and deduplication ids, refused entries reported. The deployment is shared: every test empties what it filled.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from emulator_fixtures import NEEDS_CDK, Deployment
from support.moto_queues import take_all

from jobqueues.cli import main
from jobqueues.cli.context import Aws
from jobqueues.ops.discovery import NOT_HERE, Discovery, JobType, discover
from jobqueues.ops.errors import BadInput, NotFound
from jobqueues.ops.send import BATCH_BYTES, batches, bodies_from_lines, send

JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def job(deployment: Deployment, name: str) -> JobType:
    return discover(deployment.server.client("cloudformation")).find(name)


def jq(deployment: Deployment, *args: str) -> int:
    return int(main(["--endpoint-url", deployment.server.endpoint, *args]))


@NEEDS_CDK
def test_a_file_goes_in_batches_keeping_the_fifo_group(
    ops_deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invoices = job(ops_deployment, "Invoices")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"id": f"send-{i}"}) + "\n" + ("\n" if i % 5 == 0 else "") for i in range(23)))
    assert jq(ops_deployment, "send", "Invoices", "--file", str(jobs), "--group", "customer-7", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sent"] == 23 and result["failed"] == [] and len(set(result["message_ids"])) == 23
    received = take_all(ops_deployment.server.client("sqs"), invoices.queue_url or "")
    assert [json.loads(m["Body"])["id"] for m in received] == [f"send-{i}" for i in range(23)]  # in order
    assert {m["Attributes"]["MessageGroupId"] for m in received} == {"customer-7"}
    # no content-based deduplication on this queue: the SHA-256 of group and body is the deduplication id
    first = received[0]
    expected = hashlib.sha256(f"customer-7\n{first['Body']}".encode()).hexdigest()
    assert first["Attributes"]["MessageDeduplicationId"] == expected


@NEEDS_CDK
def test_the_same_body_to_two_groups_is_two_messages(ops_deployment: Deployment) -> None:
    # GIVEN one body, sent to two FIFO groups (SQS deduplicates across the whole queue)
    invoices = job(ops_deployment, "Invoices")
    body = json.dumps({"id": "same-body-two-groups"})
    for group in ("customer-1", "customer-2"):
        assert jq(ops_deployment, "send", "Invoices", "--body", body, "--group", group) == 0
    # WHEN the queue is read THEN both arrived, one per group
    received = take_all(ops_deployment.server.client("sqs"), invoices.queue_url or "")
    assert sorted(m["Attributes"]["MessageGroupId"] for m in received) == ["customer-1", "customer-2"]


@NEEDS_CDK
def test_a_group_on_a_standard_queue_names_the_tenant_of_each_message(
    ops_deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a standard queue (a fair queue is one: the message group names the tenant)
    emails = job(ops_deployment, "Emails")
    assert not emails.fifo
    jobs = tmp_path / "flood.jsonl"
    jobs.write_text("".join(json.dumps({"id": f"flood-{i}"}) + "\n" for i in range(12)))
    # WHEN a file goes to one tenant and a body to another
    assert jq(ops_deployment, "send", "Emails", "--file", str(jobs), "--group", "tenant-noisy", "--json") == 0
    assert json.loads(capsys.readouterr().out)["sent"] == 12
    assert jq(ops_deployment, "send", "Emails", "--body", '{"id": "quiet-1"}', "--group", "tenant-quiet") == 0
    assert capsys.readouterr().out == "sent 1 message to OpsShared/Emails\n"
    # THEN each message carries its tenant, and none a deduplication id (a standard queue has none)
    received = take_all(ops_deployment.server.client("sqs"), emails.queue_url or "")
    tenants = {json.loads(m["Body"])["id"]: m["Attributes"]["MessageGroupId"] for m in received}
    assert tenants == {**{f"flood-{i}": "tenant-noisy" for i in range(12)}, "quiet-1": "tenant-quiet"}
    assert not any("MessageDeduplicationId" in m["Attributes"] for m in received)


@NEEDS_CDK
def test_fifo_needs_a_group_and_standard_refuses_a_dedup_id(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # bad input is status 2 (docs/cli.md's exit statuses), and nothing is sent
    assert jq(ops_deployment, "send", "Invoices", "--body", "{}") == 2
    assert (
        capsys.readouterr().err
        == "error: the queue of Prod-Billing/Invoices is FIFO: pass --group GROUP (the message group to send to)\n"
    )
    assert jq(ops_deployment, "send", "Emails", "--body", "{}", "--dedup-id", "d") == 2
    assert capsys.readouterr().err == (
        "error: --dedup-id is for FIFO queues; the queue of OpsShared/Emails is a standard one (--group names a "
        "tenant there)\n"
    )
    jobs = tmp_path / "one.jsonl"
    jobs.write_text('{"n": 1}\n')
    assert jq(ops_deployment, "send", "Invoices", "--file", str(jobs), "--group", "g", "--dedup-id", "d") == 2
    assert "--dedup-id names one message" in capsys.readouterr().err
    assert jq(ops_deployment, "send", "Emails") == 2  # neither --body nor --file
    assert jq(ops_deployment, "send", "Nope", "--body", "x") == 2
    assert "job types: OpsShared/Emails, Prod-Billing/Invoices, Prod-Billing/Receipts" in capsys.readouterr().err
    # the consumer's function, as the Lambda console names it, names its job type
    function = getattr(job(ops_deployment, "Receipts").consumer, "function_name", None)
    assert function is not None and jq(ops_deployment, "send", function, "--body", "x") == 2
    assert capsys.readouterr().err == (
        f"error: {function} names a Lambda function, not a job type: it is the Lambda function of "
        "Prod-Billing/Receipts\n"
    )


@NEEDS_CDK
def test_a_refused_entry_is_reported_and_the_rest_sent(
    ops_deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emails = job(ops_deployment, "Emails")
    jobs = tmp_path / "jobs.txt"
    jobs.write_text("first\n" + "x" * (BATCH_BYTES + 1) + "\nlast\n")
    assert jq(ops_deployment, "send", "Emails", "--file", str(jobs)) == 1
    out = capsys.readouterr()
    assert out.out == "sent 2 messages to OpsShared/Emails\n"
    assert out.err == (
        "refused: line 2: MessageTooLong: 262,145 bytes; the queue takes 262,144: give the job type a payload bucket "
        "(payload_bucket=...) to send it through S3\n"
    )
    assert sorted(m["Body"] for m in take_all(ops_deployment.server.client("sqs"), emails.queue_url or "")) == [
        "first",
        "last",
    ]


@NEEDS_CDK
def test_one_message_through_the_console_script(ops_deployment: Deployment) -> None:
    receipts = job(ops_deployment, "Receipts")
    done = subprocess.run(
        [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "send", "Receipts", "--body", '{"id": 1}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "sent 1 message to Prod-Billing/Receipts\n"), done
    assert [m["Body"] for m in take_all(ops_deployment.server.client("sqs"), receipts.queue_url or "")] == ['{"id": 1}']


def test_batches_hold_10_messages_and_256_kib() -> None:
    lines = [(i, "a" * 100_000) for i in range(5)] + [(i, "b") for i in range(5, 30)]
    sizes = [len(b) for b in batches(lines)]
    assert sizes == [2, 2, 10, 10, 6]  # 3 x 100 kB would pass 256 KiB
    assert list(bodies_from_lines(["a\n", "\n", "  \n", "b\r\n"])) == [(1, "a"), (4, "b")]


class Refusing:
    """The emulator's SQS client, but SQS refuses entry ``entry`` of batch ``batch`` (1-based), or, with
    ``error``, the whole request of that batch."""

    def __init__(self, sqs: Any, batch: int, entry: str = "", error: str = "") -> None:
        self.sqs, self.batch, self.entry, self.error, self.batches = sqs, batch, entry, error, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sqs, name)

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        self.batches += 1
        if self.batches != self.batch:
            return self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)
        if self.error:
            raise ClientError({"Error": {"Code": self.error, "Message": "slow down"}}, "SendMessageBatch")
        kept = [e for e in Entries if e["Id"] != self.entry]
        response = self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=kept)
        response["Failed"] = [
            {"Id": self.entry, "SenderFault": True, "Code": "InvalidMessageContents", "Message": "no"}
        ]
        return response


@NEEDS_CDK
def test_a_refused_fifo_entry_stops_the_send_after_its_batch(
    ops_deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    invoices = job(ops_deployment, "Invoices")
    original = Aws.client
    refusing = Refusing(ops_deployment.server.client("sqs"), batch=2, entry="3")
    monkeypatch.setattr(Aws, "client", lambda self, service: refusing if service == "sqs" else original(self, service))
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"id": f"r-{i}"}) + "\n" for i in range(1, 26)))
    try:
        assert jq(ops_deployment, "send", "Invoices", "--file", str(jobs), "--group", "g-1") == 1
        out = capsys.readouterr()
        assert out.out == "sent 19 messages to Prod-Billing/Invoices\n"
        # entry 3 of the second batch is line 14; the third batch (lines 21 to 25) is not sent
        assert out.err == ("refused: line 14: InvalidMessageContents: no\nstopped: nothing sent from line 21 on\n")
    finally:
        received = take_all(ops_deployment.server.client("sqs"), invoices.queue_url or "")
    assert [json.loads(m["Body"])["id"] for m in received] == [f"r-{i}" for i in range(1, 21) if i != 14]


@NEEDS_CDK
def test_a_refused_request_reports_its_entries_and_stops(ops_deployment: Deployment) -> None:
    emails = job(ops_deployment, "Emails")
    sqs = ops_deployment.server.client("sqs")
    lines = [(n, f"mail {n}") for n in range(1, 31)]
    try:
        result = send(Refusing(sqs, batch=2, error="KMS.ThrottlingException"), emails.queue_url or "", lines)
    finally:
        received = take_all(sqs, emails.queue_url or "")
    assert len(result.message_ids) == 10 and sorted(m["Body"] for m in received) == sorted(
        f"mail {n}" for n in range(1, 11)
    )
    assert [(f.line, f.code, f.message) for f in result.failed] == [
        (n, "KMS.ThrottlingException", "slow down") for n in range(11, 21)
    ]
    assert result.stopped_at_line == 21
    assert result.as_dict()["stopped_at_line"] == 21


def test_an_empty_body_is_refused_before_anything_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN `--body ''` (SQS refuses an empty message), WHEN sent to an endpoint nothing listens on
    status = main(["send", "Emails", "--body", "", "--endpoint-url", "http://localhost:1"])
    # THEN one line, status 2, before any request (an unreachable endpoint would be status 3)
    assert (status, capsys.readouterr().err) == (2, "error: --body is empty: SQS takes no empty message\n")


@pytest.mark.parametrize(
    "command",
    [
        ["send", "EmailSend", "--body", "x"],
        ["dlq", "list", "EmailSend"],
        ["dlq", "redrive", "EmailSend"],
        ["dlq", "purge", "EmailSend", "--yes"],
    ],
)
def test_stack_given_twice_is_refused_before_any_request(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN --stack twice (a purge of the last one's job type would act on it alone), WHEN run against an endpoint
    # nothing listens on
    status = main(
        [*command, "--stack", "CDKToolkit", "--stack", "JobQueuesExample", "--endpoint-url", "http://localhost:1"]
    )
    # THEN one line and status 2, before any request
    err = capsys.readouterr().err
    assert status == 2 and "--stack given 2 times (CDKToolkit, JobQueuesExample): give one stack" in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("given", "said"),
    [(["--body", "x", "--file", "f"], "both were given"), ([], "neither was given")],
)
def test_body_and_file_say_which_mistake_it_is(given: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN both --body and --file, or neither, WHEN sent to an endpoint nothing listens on
    status = main(["send", "Nope", *given, "--endpoint-url", "http://localhost:1"])
    # THEN one line naming which, status 2, before any request
    err = capsys.readouterr().err
    assert status == 2 and f"pass exactly one of --body TEXT or --file FILE ({said})" in err, err


@NEEDS_CDK
def test_a_stack_not_in_the_region_asked_is_said_so(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the ops app deployed in us-east-1, WHEN a job is sent to STACK/JOB_TYPE in another region
    assert jq(ops_deployment, "send", "Prod-Billing/Receipts", "--body", "x", "--region", "eu-west-1") == 2
    # THEN the line says the stack is not in the region searched, not that the stack has no such job type
    assert capsys.readouterr().err == (
        "error: no stack Prod-Billing in region eu-west-1 (stacks there: none): pass the --region or --profile "
        "it is deployed with\n"
    )


def test_a_stack_of_no_job_type_and_a_stack_not_found_are_told_apart() -> None:
    receipts = JobType("Receipts", "Prod-Billing", "Prod/Billing/Receipts", None, None)
    found = Discovery(
        [receipts],
        ["CDKToolkit", "Prod-Billing"],
        where="region us-east-1, account 123456789012",
        not_here=NOT_HERE,
    )
    with pytest.raises(NotFound) as missing:
        found.find("Staging/Receipts")
    assert str(missing.value) == (
        "no stack Staging in region us-east-1, account 123456789012 (stacks there: CDKToolkit, Prod-Billing); "
        "Receipts is in: Prod-Billing/Receipts; or pass the --region or --profile it is deployed with"
    )
    # a typo's stack gets the name it is closest to, and still the advice of a stack elsewhere
    with pytest.raises(NotFound) as typo:
        found.find("Prod-Billng/Receipts")
    assert str(typo.value).endswith(
        "; did you mean Prod-Billing/Receipts? or pass the --region or --profile it is deployed with"
    )
    with pytest.raises(NotFound) as none_here:
        found.find("CDKToolkit/Receipts")
    assert str(none_here.value) == (
        "no job type Receipts in stack CDKToolkit (it has none); Receipts is in: Prod-Billing/Receipts"
    )


def test_a_stack_not_found_names_where_the_job_type_is_and_a_case_slip() -> None:
    # GIVEN the example app's job types deployed in one region
    jobs = [
        JobType("EmailSend", "JobQueuesExample", "JobQueuesExample/EmailSend", None, None),
        JobType("Transcode", "JobQueuesExample", "JobQueuesExample/Transcode", None, None),
    ]
    found = Discovery(
        jobs,
        ["CDKToolkit", "JobQueuesExample"],
        where="region us-east-1",
        not_here=NOT_HERE,
    )
    # WHEN a stack not deployed here names a job type that is, THEN the line says where it is, then the region hint
    with pytest.raises(NotFound) as elsewhere:
        found.find("Staging/EmailSend")
    assert str(elsewhere.value) == (
        "no stack Staging in region us-east-1 (stacks there: CDKToolkit, JobQueuesExample); EmailSend is in: "
        "JobQueuesExample/EmailSend; or pass the --region or --profile it is deployed with"
    )
    # WHEN the name's case slipped, THEN the line names the job type as it is spelled
    for slip in ("jobqueuesexample/emailsend", "JobQueuesExample/emailSend"):
        with pytest.raises(NotFound) as case:
            found.find(slip)
        assert str(case.value).endswith("; did you mean JobQueuesExample/EmailSend? (names are case-sensitive)")
    # WHEN a part is empty, THEN the line says how a job type is named, not that a stack "" is missing
    for empty in ("JobQueuesExample/", "/EmailSend", "/"):
        with pytest.raises(BadInput) as part:
            found.find(empty)
        assert (
            str(part.value) == f"{empty!r}: name a job type JOB_TYPE or STACK/JOB_TYPE, one slash, neither part empty"
        )


def test_the_stack_given_twice_or_by_option_is_looked_up_as_in_the_name() -> None:
    # GIVEN the example app's job types deployed in one region
    jobs = [JobType("EmailSend", "JobQueuesExample", "JobQueuesExample/EmailSend", None, None)]
    found = Discovery(jobs, ["CDKToolkit", "JobQueuesExample"], "region us-east-1", NOT_HERE)
    # WHEN the stack is in the name and in --stack alike, THEN it is found
    assert found.find("JobQueuesExample/EmailSend", "JobQueuesExample") is jobs[0]
    # WHEN they differ, THEN the line says so rather than look up a name with a slash in it
    with pytest.raises(BadInput) as twice:
        found.find("JobQueuesExample/EmailSend", "CDKToolkit")
    assert str(twice.value) == (
        "'JobQueuesExample/EmailSend' names stack JobQueuesExample and --stack CDKToolkit: give the stack once"
    )
    # WHEN --stack has a case slip, or names a stack without the job type, THEN the line is the name's line
    with pytest.raises(NotFound) as slip:
        found.find("EmailSend", "jobqueuesexample")
    assert str(slip.value).endswith("; did you mean JobQueuesExample/EmailSend? (names are case-sensitive)")
    with pytest.raises(NotFound) as wrong:
        found.find("EmailSend", "CDKToolkit")
    assert (
        str(wrong.value)
        == "no job type EmailSend in stack CDKToolkit (it has none); EmailSend is in: JobQueuesExample/EmailSend"
    )
    # WHEN --stack is empty, or a name has a stack with a slash, THEN it is refused as a name
    for name, stack, said in (
        ("EmailSend", "", "--stack '': give a stack's name"),
        ("A//EmailSend", None, "name a job type JOB_TYPE or STACK/JOB_TYPE"),
    ):
        with pytest.raises(BadInput, match=said):
            found.find(name, stack)
    # WHEN a name is empty or has spaces around a part, THEN the line says so, the value quoted
    for name, stack, said in (
        ("", None, "'': an empty name"),
        (" EmailSend", None, "' EmailSend': spaces around a name"),
        ("JobQueuesExample /EmailSend", None, "'JobQueuesExample /EmailSend': spaces around a name"),
        ("EmailSend", "JobQueuesExample ", "--stack 'JobQueuesExample ': spaces around a name"),
    ):
        with pytest.raises(BadInput) as spaced:
            found.find(name, stack)
        assert str(spaced.value).startswith(said), str(spaced.value)
    # WHEN the stack's case slipped and the job type is also wrong, THEN the stack is named as it is spelled
    with pytest.raises(NotFound) as both:
        found.find("jobqueuesexample/EmailSnd")
    assert str(both.value).endswith("; did you mean stack JobQueuesExample? (names are case-sensitive)")
    # WHEN a bare name's case slipped, THEN the line names it as spelled
    with pytest.raises(NotFound) as bare:
        found.find("emailsend")
    assert str(bare.value).endswith("; did you mean EmailSend? (names are case-sensitive)")
    # WHEN the region searched has no stack at all, THEN the line says where it looked
    with pytest.raises(NotFound) as empty:
        Discovery([], [], "region eu-west-1", NOT_HERE).find("EmailSend")
    assert str(empty.value) == (
        "no job type EmailSend: no stacks in region eu-west-1: pass the --region or --profile it is deployed with"
    )


def test_an_app_synthesized_is_not_told_to_change_region() -> None:
    # GIVEN the job types of an app synthesized, not deployed (drift --app, jobqueues local)
    found = Discovery([JobType("Orders", "Dev-Jobs", "Dev/Jobs/Orders", None, None)], ["Dev-Jobs"], "the app")
    # WHEN a stack is mistyped, or not there, THEN its line has no --region advice
    with pytest.raises(NotFound) as typo:
        found.find("Dev-Job/Orders")
    assert str(typo.value) == "no stack Dev-Job in the app (stacks there: Dev-Jobs); did you mean Dev-Jobs/Orders?"
    with pytest.raises(NotFound) as elsewhere:
        found.find("Prod/Orders")
    assert str(elsewhere.value) == "no stack Prod in the app (stacks there: Dev-Jobs); Orders is in: Dev-Jobs/Orders"


def test_an_unknown_name_in_a_stack_lists_that_stacks_job_types_not_every_stacks() -> None:
    # GIVEN two stacks of job types, one of them Dev's copy of Prod's
    jobs = [
        JobType("Receipts", "Prod-Billing", "Prod/Billing/Receipts", None, None),
        JobType("Invoices", "Prod-Billing", "Prod/Billing/Invoices", None, None),
        JobType("Receipts", "Dev-Billing", "Dev/Billing/Receipts", None, None),
        JobType("Emails", "OpsShared", "OpsShared/Emails", None, None),
    ]
    found = Discovery(jobs, ["Dev-Billing", "OpsShared", "Prod-Billing"])
    # WHEN a name is mistyped in one stack, THEN only that stack's job types are listed
    with pytest.raises(NotFound) as typo:
        found.find("Prod-Billing/Reciepts")
    assert str(typo.value) == (
        "no job type Reciepts in stack Prod-Billing; its job types: Invoices, Receipts; did you mean "
        "Prod-Billing/Receipts?"
    )
    # WHEN a job type is named in a stack that does not run it, THEN the stacks that do are named
    with pytest.raises(NotFound) as elsewhere:
        found.find("OpsShared/Receipts")
    assert str(elsewhere.value) == (
        "no job type Receipts in stack OpsShared; its job types: Emails; Receipts is in: Dev-Billing/Receipts, "
        "Prod-Billing/Receipts"
    )


class CtrlC:
    """The emulator's SQS client, but the user presses Ctrl-C ``presses`` times as batch ``batch`` (1-based) is sent,
    before it leaves: a real SIGINT to this process, which the command's handler receives."""

    def __init__(self, sqs: Any, batch: int, presses: int) -> None:
        self.sqs, self.batch, self.presses, self.batches = sqs, batch, presses, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sqs, name)

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        self.batches += 1
        if self.batches == self.batch:
            for _ in range(self.presses):
                os.kill(os.getpid(), signal.SIGINT)
        return self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)


@NEEDS_CDK
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_ctrl_c_during_a_file_reports_what_was_sent_and_where_to_resume(
    ops_deployment: Deployment,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    as_json: bool,
) -> None:
    # GIVEN a file of 50 jobs, and a Ctrl-C while the third batch of 10 is being sent
    emails = job(ops_deployment, "Emails")
    original = Aws.client
    pressing = CtrlC(ops_deployment.server.client("sqs"), batch=3, presses=1)
    monkeypatch.setattr(Aws, "client", lambda self, service: pressing if service == "sqs" else original(self, service))
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(f"mail {n}\n" for n in range(1, 51)))
    try:
        # WHEN it is sent
        status = jq(ops_deployment, "send", "Emails", "--file", str(jobs), *(["--json"] if as_json else []))
        out = capsys.readouterr()
    finally:
        received = take_all(ops_deployment.server.client("sqs"), emails.queue_url or "")
    # THEN the batch in hand finishes, nothing after it is sent, and the report says how many and where to resume
    assert sorted(m["Body"] for m in received) == sorted(f"mail {n}" for n in range(1, 31))
    assert status == 130, out
    assert "stopping: the batch in hand finishes (Ctrl-C again to interrupt at once)" in out.err
    if as_json:
        result = json.loads(out.out)
        assert (result["sent"], result["interrupted"], result["stopped_at_line"]) == (30, True, 31)
        assert result["unconfirmed_lines"] is None
    else:
        assert out.out == "sent 30 messages to OpsShared/Emails\n"
        assert out.err.endswith("interrupted: nothing sent from line 31 on: send the file from line 31 to go on\n"), (
            out.err
        )


@NEEDS_CDK
def test_a_second_ctrl_c_names_the_lines_it_left_unconfirmed(
    ops_deployment: Deployment, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN two Ctrl-C at once as the third batch is sent: it is interrupted before SQS answered
    emails = job(ops_deployment, "Emails")
    original = Aws.client
    pressing = CtrlC(ops_deployment.server.client("sqs"), batch=3, presses=2)
    monkeypatch.setattr(Aws, "client", lambda self, service: pressing if service == "sqs" else original(self, service))
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(f"mail {n}\n" for n in range(1, 51)))
    try:
        status = jq(ops_deployment, "send", "Emails", "--file", str(jobs))
        out = capsys.readouterr()
    finally:
        received = take_all(ops_deployment.server.client("sqs"), emails.queue_url or "")
    # THEN the lines of the batch in the air are named as unconfirmed (SQS may or may not have taken them)
    assert status == 130 and len(received) == 20, out
    assert out.out == "sent 20 messages to OpsShared/Emails\n"
    assert out.err.endswith(
        "interrupted: lines 21 to 30 were being sent, unconfirmed (SQS may have taken them); nothing sent from line "
        "31 on: send the file from line 21 to go on (a standard queue may then get those lines twice)\n"
    ), out.err
