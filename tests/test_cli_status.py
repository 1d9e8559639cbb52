"""``jobqueues status`` on ``tests/ops_app`` deployed to the emulator (Stages, FIFO + KMS, a Lambda, a queue name
of its own): one row per job type, whose counts follow what is in the queues.

The deployment is shared by the test process: every test leaves the queues empty.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.cli import main
from jobqueues.ops.discovery import JobType, discover
from jobqueues.ops.status import JobTypeStatus, job_status

JOBQUEUES = Path(sys.executable).parent / "jobqueues"
ROW_KEYS = {
    "name", "job_type", "stack", "fifo", "visible", "in_flight", "delayed", "oldest_age_s", "dead_letter",
    "visibility_timeout_s", "max_receive_count", "consumer", "ecs_running", "ecs_desired", "lambda_errors",
    "lambda_throttles", "note", "in_flight_share",
}  # fmt: skip


def status_json(deployment: Deployment, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, Any]]:
    assert main(["--endpoint-url", deployment.server.endpoint, "status", "--json", *args]) == 0
    return {row["name"]: row for row in json.loads(capsys.readouterr().out)}


def drain(sqs: Any, url: str) -> None:
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages"):
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )


@NEEDS_CDK
def test_one_row_per_job_type_with_what_the_stacks_declared(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = status_json(ops_deployment, capsys)
    assert sorted(rows) == ["OpsShared/Emails", "Prod-Billing/Invoices", "Prod-Billing/Receipts"]
    assert all(set(row) == ROW_KEYS for row in rows.values())
    invoices, receipts, emails = rows["Prod-Billing/Invoices"], rows["Prod-Billing/Receipts"], rows["OpsShared/Emails"]
    assert (invoices["fifo"], invoices["visibility_timeout_s"], invoices["max_receive_count"]) == (True, 10, 2)
    assert (invoices["consumer"], invoices["ecs_running"], invoices["ecs_desired"]) == ("ecs", 0, 0)
    assert (receipts["consumer"], receipts["visibility_timeout_s"]) == ("lambda", 18)  # 6 x 3 s
    assert (emails["consumer"], emails["visibility_timeout_s"], emails["max_receive_count"]) == ("none", 10, 5)
    # the emulator publishes no CloudWatch metrics: unknown, never zero
    assert invoices["oldest_age_s"] is None and receipts["lambda_errors"] is None


@NEEDS_CDK
def test_counts_follow_the_queues(ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    found = discover(ops_deployment.server.client("cloudformation"))
    emails = found.find("Emails")
    assert emails.queue_url and emails.dead_letter_queue_url
    sqs = ops_deployment.server.client("sqs")
    try:
        for i in range(5):
            sqs.send_message(QueueUrl=emails.queue_url, MessageBody=f"status {i}")
        sqs.send_message(QueueUrl=emails.queue_url, MessageBody="later", DelaySeconds=60)
        sqs.send_message(QueueUrl=emails.dead_letter_queue_url, MessageBody="dead")
        sqs.receive_message(QueueUrl=emails.queue_url, MaxNumberOfMessages=2, VisibilityTimeout=60)
        row = status_json(ops_deployment, capsys, "--stack", "OpsShared")["OpsShared/Emails"]
        assert (row["visible"], row["in_flight"], row["delayed"], row["dead_letter"]) == (3, 2, 1, 1)
        assert row["in_flight_share"] == 2 / 120_000
    finally:
        sqs.purge_queue(QueueUrl=emails.queue_url)  # the delayed and in-flight ones too
        drain(sqs, emails.dead_letter_queue_url)


@NEEDS_CDK
def test_stack_narrows_and_an_unknown_one_names_those_that_exist(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    assert list(status_json(ops_deployment, capsys, "--stack", "Prod-Billing")) == [
        "Prod-Billing/Invoices",
        "Prod-Billing/Receipts",
    ]
    assert main(["--endpoint-url", ops_deployment.server.endpoint, "status", "--stack", "Billing"]) == 2
    assert capsys.readouterr().err == "error: no deployed stack Billing; stacks: CDKToolkit, OpsShared, Prod-Billing\n"


@NEEDS_CDK
def test_the_table_and_watch_through_the_console_script(ops_deployment: Deployment) -> None:
    command = [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "status"]
    once = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert once.returncode == 0, once
    assert "Prod-Billing/Invoices (FIFO)" in once.stdout and "ECS 0/0 tasks" in once.stdout
    # --watch refreshes until Ctrl-C, which ends it with 0
    watch = subprocess.Popen([*command, "--watch", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    watch.send_signal(signal.SIGINT)
    out, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    assert "OpsShared/Emails" in out and "Traceback" not in err


def test_a_queue_deleted_outside_its_stack_is_a_note() -> None:
    job = JobType("Gone", "S", "S/Gone", "https://sqs.us-east-1.amazonaws.com/1/Gone", None)
    row = job_status(0, job, None, None, {}, {})
    assert isinstance(row, JobTypeStatus) and row.visible is None
    assert row.note == "its queue Gone does not exist: deleted outside its stack?"
