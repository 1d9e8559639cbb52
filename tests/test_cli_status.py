"""``jobqueues status`` on ``tests/ops_app`` deployed to the emulator (Stages, FIFO + KMS, a Lambda, a queue name
of its own): one row per job type, whose counts follow what is in the queues.

The deployment is shared by the test process: every test leaves the queues empty (and the ECS service at 0).
The pure parts (metric queries, services, the table, a watch's failed refresh) also run on fake clients.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from emulator_fixtures import NEEDS_CDK, Deployment
from rich.console import Console
from support.cli_runs import as_from_a_terminal

from jobqueues.cli import main
from jobqueues.cli.status_table import table, watch_view
from jobqueues.emulator.server import LocalServer
from jobqueues.marker_format import QUEUE_MARKER
from jobqueues.ops.discovery import EcsConsumer, JobType, LambdaConsumer, StackTemplate, discover, discover_templates
from jobqueues.ops.status import JobTypeStatus, job_status, metric_queries, read_metrics, read_services

JOBQUEUES = Path(sys.executable).parent / "jobqueues"
ROW_KEYS = {
    "name", "job_type", "stack", "fifo", "visible", "in_flight", "delayed", "oldest_age_s", "dead_letter",
    "visibility_timeout_s", "max_receive_count", "consumer", "ecs_running", "ecs_desired", "lambda_errors",
    "lambda_throttles", "note", "in_flight_share", "fair", "noisy_groups",
}  # fmt: skip

#: What a note says of a queue deleted outside its stack: a deploy does not bring it back.
DELETED = (
    'deleted outside its stack, which a deploy does not undo: see "A queue deleted outside its stack" in docs/cli.md'
)


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
    # the emulator publishes no queue metric: the oldest message's age is unknown, never zero; a function not
    # invoked in the window (nothing ran it since the deploy) has no error and no throttle, read as 0
    assert invoices["oldest_age_s"] is None
    assert (receipts["lambda_errors"], receipts["lambda_throttles"]) == (0, 0)
    # a job type named, as send and dlq take it: its row alone
    named = status_json(ops_deployment, capsys, "Emails", "Prod-Billing/Invoices")
    assert sorted(named) == ["OpsShared/Emails", "Prod-Billing/Invoices"]


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
    # (the stack's id in its Stage: the stack is named)
    assert capsys.readouterr().err == (
        "error: no deployed stack Billing in region us-east-1, account 123456789012 (stacks there: CDKToolkit, "
        "OpsShared, Prod-Billing); Billing is in the construct path of stack Prod-Billing: --stack Prod-Billing\n"
    )


@NEEDS_CDK
def test_the_table_and_watch_through_the_console_script(ops_deployment: Deployment) -> None:
    command = [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "status"]
    once = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert once.returncode == 0, once
    assert "Prod-Billing/Invoices (FIFO)" in once.stdout and "ECS 0/0 tasks" in once.stdout
    # --watch refreshes until Ctrl-C, which ends it with 0
    environment = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # a SIGABRT prints where it waits (below)
    watch = subprocess.Popen(
        [*command, "--watch", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )
    assert watch.stdout is not None
    # off a terminal (here a pipe) each refresh prints the table again: a CI log shows every one
    seen, deadline = "", time.monotonic() + 120
    while seen.count("jobqueues status") < 2 and time.monotonic() < deadline:
        seen += watch.stdout.readline()
    assert seen.count("jobqueues status") == 2 and "OpsShared/Emails" in seen
    watch.send_signal(signal.SIGINT)
    try:
        _, err = watch.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        watch.send_signal(signal.SIGABRT)
        _, err = watch.communicate(timeout=30)
        raise AssertionError(f"Ctrl-C did not end the watch; where it was:\n{err}") from None
    assert watch.returncode == 0, err
    assert "Traceback" not in err


def test_a_queue_that_does_not_exist_is_a_note_that_says_the_way_back() -> None:
    # GIVEN a job type whose queue is gone (deleted outside its stack), and one adopted whose queue was never created
    owned = JobType("Gone", "S", "S/Gone", "https://sqs.us-east-1.amazonaws.com/1/Gone", None)
    adopted = replace(owned, adopted=True)
    # WHEN their status is read THEN each note says how that queue comes back: not by a deploy (CloudFormation
    # compares templates, not queues) but as the docs say, or by its owner
    row = job_status(0, owned, None, None, {}, {})
    assert isinstance(row, JobTypeStatus) and row.visible is None
    assert row.note == f"its queue Gone does not exist ({DELETED})"
    assert job_status(0, adopted, None, None, {}, {}).note == (
        "its queue Gone does not exist (adopted with JobQueue.from_queue_attributes: its owner creates it)"
    )


def test_a_function_without_a_datapoint_in_the_window_had_no_error_and_no_throttle() -> None:
    # GIVEN a Lambda job type, and a metric read that succeeded (a failed one is the command's error line)
    job = JobType("Fn", "S", "S/Fn", "https://q/S-Fn", None, consumer=LambdaConsumer("fn", None))
    # WHEN CloudWatch had no datapoint for its function in the window (Lambda publishes Errors and Throttles only
    # when the function is invoked; an idle function, or one just deployed, has none)
    row = job_status(0, job, {}, None, {}, {})
    # THEN it had no error and no throttle: 0, not "-", which says a figure could not be read, with no note
    assert (row.lambda_errors, row.lambda_throttles, row.note) == (0, 0, None)
    assert "Lambda, errors 0, throttles 0" in text_of(table([row]))
    # AND a datapoint is counted as before
    assert job_status(0, job, {}, None, {"errors0": 2.0, "throttles0": 1.0}, {}).lambda_errors == 2


def test_lambda_errors_and_throttles_are_whole_counts_in_json() -> None:
    # GIVEN a Lambda job type whose function had 2 errors and 1 throttle (CloudWatch's sums are floats: 2.0, 1.0)
    job = JobType("Fn", "S", "S/Fn", "https://q/S-Fn", None, consumer=LambdaConsumer("fn", None))
    row = job_status(0, job, {}, None, {"errors0": 2.0, "throttles0": 1.0}, {})
    # WHEN --json prints the row
    printed = json.loads(json.dumps(row.as_dict()))
    # THEN they are counts, as the message counts are (2, not 2.0), with or without a datapoint
    assert (printed["lambda_errors"], printed["lambda_throttles"]) == (2, 1)
    assert all(type(printed[key]) is int for key in ("lambda_errors", "lambda_throttles"))
    idle = job_status(0, job, {}, None, {}, {}).as_dict()
    assert type(idle["lambda_errors"]) is int and type(idle["lambda_throttles"]) is int
    # AND the table writes them as it writes the other counts (1,234,567, not 1.23457e+06)
    many = job_status(0, job, {}, None, {"errors0": 1234567.0, "throttles0": 12000.0}, {})
    assert "Lambda, errors 1,234,567, throttles 12,000" in text_of(table([many]))


def test_a_dead_letter_queue_that_does_not_exist_is_a_note_too() -> None:
    # GIVEN a job type whose queue is there and whose DLQ was deleted outside its stack, WHEN its status is read,
    # THEN its DLQ column is unknown and a note says why, as for its queue
    job = JobType("Orders", "S", "S/Orders", "https://q/S-Orders", "https://sqs.us-east-1.amazonaws.com/1/S-Orders-dlq")
    row = job_status(0, job, {"ApproximateNumberOfMessages": "3", "VisibilityTimeout": "30"}, None, {}, {})
    assert (row.visible, row.dead_letter) == (3, None)
    assert row.note == f"its dead-letter queue S-Orders-dlq does not exist ({DELETED})"
    # a job type without a DLQ has no such note
    assert job_status(0, replace(job, dead_letter_queue_url=None), {}, None, {}, {}).note is None


@NEEDS_CDK
def test_the_ecs_columns_are_the_services_counts_which_local_up_sets(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # `jobqueues local up` reflects its workers with UpdateService desiredCount
    # (jobqueues.emulator.consumers.ecs_workers); the emulator then reports as many running: status shows the local
    # workers.
    invoices = discover(ops_deployment.server.client("cloudformation")).find("Invoices")
    assert isinstance(invoices.consumer, EcsConsumer) and invoices.consumer.service
    ecs = ops_deployment.server.client("ecs")
    service = {"cluster": invoices.consumer.cluster or "default", "service": invoices.consumer.service}
    try:
        ecs.update_service(**service, desiredCount=2)
        row = status_json(ops_deployment, capsys, "--stack", "Prod-Billing")["Prod-Billing/Invoices"]
        assert (row["ecs_running"], row["ecs_desired"], row["note"]) == (2, 2, None)
    finally:
        ecs.update_service(**service, desiredCount=0)


@NEEDS_CDK
def test_json_and_watch_together_is_a_usage_error(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--endpoint-url", ops_deployment.server.endpoint, "status", "--json", "--watch"]) == 2
    assert capsys.readouterr().err == "error: --json prints once: drop --watch (or run it in a loop)\n"


def test_an_unreachable_endpoint_is_one_error_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--endpoint-url", "http://localhost:1", "status"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach http://localhost:1") and err.count("\n") == 1, err


# --- the pure parts, on fake clients ------------------------------------------------------------------------------


def lambda_job(i: int) -> JobType:
    url = f"https://sqs.us-east-1.amazonaws.com/1/Q{i}"
    return JobType(f"J{i}", "S", f"S/J{i}", url, url + "-dlq", consumer=LambdaConsumer(f"fn{i}", None))


class FakeCloudWatch:
    """Answers every query with ``values[query id]``, ``page`` queries a page (NextToken between pages)."""

    def __init__(self, values: dict[str, list[float]], page: int = 500) -> None:
        self.values, self.page, self.calls = values, page, []  # type: list[dict[str, Any]]

    def get_metric_data(self, **request: Any) -> dict[str, Any]:
        self.calls.append(request)
        start = int(request.get("NextToken", 0))
        queries = request["MetricDataQueries"][start : start + self.page]
        results = [{"Id": q["Id"], "Values": self.values.get(q["Id"], [])} for q in queries]
        more = start + self.page < len(request["MetricDataQueries"])
        return {"MetricDataResults": results, **({"NextToken": str(start + self.page)} if more else {})}


def test_one_metric_query_set_for_every_job_type() -> None:
    ecs = JobType("E", "S", "S/E", "https://sqs.us-east-1.amazonaws.com/1/E.fifo", None, fifo=True,
                  consumer=EcsConsumer("arn:svc/E", "c", None, None))  # fmt: skip
    elsewhere = JobType("X", "S", "S/X", None, None)  # another stack's queue: nothing to ask
    queries = {q["Id"]: q["MetricStat"] for q in metric_queries([lambda_job(0), ecs, elsewhere])}
    assert sorted(queries) == ["age0", "age1", "errors0", "throttles0"]
    assert queries["age1"]["Metric"]["Dimensions"] == [{"Name": "QueueName", "Value": "E.fifo"}]
    assert (queries["age1"]["Stat"], queries["age1"]["Period"]) == ("Maximum", 60)
    assert queries["errors0"]["Metric"] == {
        "Namespace": "AWS/Lambda", "MetricName": "Errors", "Dimensions": [{"Name": "FunctionName", "Value": "fn0"}]
    }  # fmt: skip
    assert (queries["throttles0"]["Stat"], queries["throttles0"]["Period"]) == ("Sum", 300)


def test_metrics_are_one_call_of_at_most_500_queries_and_follow_next_token() -> None:
    jobs = [lambda_job(i) for i in range(200)]  # 600 queries
    cloudwatch = FakeCloudWatch({"age3": [42.0, 99.0], "errors3": [1, 2], "throttles7": [5]}, page=200)
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    values = read_metrics(cloudwatch, jobs, now)
    # the newest age (TimestampDescending: first), the errors' sum; ids without data absent, never 0
    assert values == {"age3": 42.0, "errors3": 3.0, "throttles7": 5.0}
    assert [len(c["MetricDataQueries"]) for c in cloudwatch.calls] == [500, 500, 500, 100]
    assert [c.get("NextToken") for c in cloudwatch.calls] == [None, "200", "400", None]
    assert all(c["EndTime"] - c["StartTime"] == datetime.timedelta(minutes=5) for c in cloudwatch.calls)


class FakeEcs:
    def __init__(self, missing_clusters: set[str]) -> None:
        self.missing, self.calls = missing_clusters, []  # type: set[str], list[tuple[str, list[str]]]

    def describe_services(self, cluster: str, services: list[str]) -> dict[str, Any]:
        self.calls.append((cluster, services))
        if cluster in self.missing:
            raise ClientError({"Error": {"Code": "ClusterNotFoundException", "Message": "gone"}}, "DescribeServices")
        # a service deleted outside its stack is still listed for a while, INACTIVE
        return {"services": [
            {"serviceArn": s, "serviceName": s.rsplit("/", 1)[-1], "runningCount": 1, "desiredCount": 2,
             "status": "INACTIVE" if s.endswith("deleted") else "ACTIVE"}
            for s in services
        ]}  # fmt: skip


def ecs_job(i: int, cluster: str, service: str | None = None) -> JobType:
    url = f"https://sqs.us-east-1.amazonaws.com/1/E{i}"
    return JobType(
        f"E{i}", "S", f"S/E{i}", url, None, consumer=EcsConsumer(service or f"arn:svc/s{i}", cluster, None, None)
    )


def test_services_ten_a_call_per_cluster_and_a_missing_one_is_a_note() -> None:
    jobs = [ecs_job(i, "c1") for i in range(12)] + [ecs_job(12, "gone"), ecs_job(13, "c1", "arn:svc/deleted")]
    fake = FakeEcs({"gone"})
    services = read_services(fake, jobs)
    assert [(cluster, len(names)) for cluster, names in fake.calls] == [("c1", 10), ("c1", 3), ("gone", 1)]
    assert services["arn:svc/s0"] == {"running": 1, "desired": 2}
    rows = [job_status(i, job, {}, None, {}, services) for i, job in enumerate(jobs)]
    assert (rows[11].consumer, rows[11].ecs_running, rows[11].ecs_desired, rows[11].note) == ("ecs", 1, 2, None)
    for row in (rows[12], rows[13]):
        assert (row.ecs_running, row.note) == (None, "the ECS service was not found")


def text_of(renderable: Any) -> str:
    console = Console(width=300, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_table_shows_the_quota_share_from_1_percent_and_what_could_not_be_read() -> None:
    near = JobTypeStatus(
        "S/Near", "Near", "S", True, visible=3, in_flight=1_200, delayed=0, dead_letter=4,
        visibility_timeout_s=30, max_receive_count=5, consumer="lambda", lambda_errors=2,
    )  # fmt: skip
    low = JobTypeStatus(
        "S/Low", "Low", "S", False, visible=0, in_flight=1_199, oldest_age_s=150.0, dead_letter=0,
        consumer="ecs", ecs_running=1, ecs_desired=3,
    )  # fmt: skip
    gone = job_status(0, JobType("Gone", "S", "S/Gone", None, None), None, None, {}, {})
    cells = {
        row[0].split()[0]: row
        for line in text_of(table([near, low, gone])).splitlines()
        if "S/" in line and (row := [cell.strip() for cell in line.split("│")[1:-1]])
    }
    assert cells["S/Near"] == [
        "S/Near (FIFO)", "3", "1,200 (1% of quota)", "0", "-", "4", "30 s", "5", "Lambda, errors 2, throttles -"
    ]  # fmt: skip
    assert cells["S/Low"] == ["S/Low", "0", "1,199", "-", "2 min", "0", "-", "-", "ECS 1/3 tasks"]
    assert cells["S/Gone"] == ["S/Gone", *["-"] * 7, "none (note below)"]  # the note under the table (status_view)
    # a DLQ with messages is red, an empty one is not
    red = Console(width=300, record=True, force_terminal=True, color_system="standard")
    red.print(table([near]))
    assert "\x1b[1;31m4" in red.export_text(styles=True)
    red.print(table([low]))
    assert "\x1b[1;31m" not in red.export_text(styles=True)


#: When the tests' watches read their table.
READ_AT = datetime.datetime(2026, 11, 29, 14, 2, 31)


def test_a_failed_refresh_keeps_the_last_table_and_says_why_and_how_old_it_is() -> None:
    # GIVEN a table read at 14:02:31, WHEN a later refresh fails
    row = JobTypeStatus("S/J", "J", "S", False, visible=7)
    shown = text_of(watch_view([row], "cannot reach http://x (is it running?) [x]", 2, READ_AT))
    # THEN the table is kept, with why the refresh failed and when the table kept was read (a network down for
    # ten minutes would otherwise show a ten-minute-old backlog as the present one)
    assert "S/J" in shown and "refresh failed: cannot reach http://x (is it running?) [x]" in shown
    assert "(the table is the last one read, at 14:02:31)" in shown
    assert "refreshed every 2 s" in text_of(watch_view([row], None, 2, READ_AT))
    assert "14:02:31" not in text_of(watch_view([row], None, 2, READ_AT))  # a fresh table needs no time


@NEEDS_CDK
def test_watch_survives_a_failed_refresh(
    ops_deployment: Deployment, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import EndpointConnectionError

    import jobqueues.cli.status as cli_status

    reads = iter(["rows", "fails", "rows"])
    sleeps = iter([None, None, KeyboardInterrupt()])

    def read_status(job_types: list[JobType], *clients: Any) -> list[JobTypeStatus]:
        if next(reads) == "fails":
            raise EndpointConnectionError(endpoint_url="http://sqs.down")
        return [JobTypeStatus(job.name, job.job_type, job.stack, job.fifo) for job in job_types]

    def wait(stop: Any, seconds: float) -> bool:
        assert seconds == 2
        if isinstance(interrupt := next(sleeps), BaseException):
            raise interrupt
        return False

    shown: list[str | None] = []

    read_at: list[datetime.datetime] = []

    def view(rows: list[JobTypeStatus], failure: str | None, every_s: float, read: datetime.datetime) -> Any:
        shown.append(failure)
        read_at.append(read)
        return watch_view(rows, failure, every_s, read)

    monkeypatch.setattr(cli_status, "read_status", read_status)
    monkeypatch.setattr(cli_status, "watch_view", view)
    monkeypatch.setattr(cli_status, "_wait", wait)
    clock = iter([READ_AT, READ_AT + datetime.timedelta(seconds=4)])  # read when each successful read returned
    monkeypatch.setattr(cli_status, "_now", lambda: next(clock))
    assert main(["--endpoint-url", ops_deployment.server.endpoint, "status", "--watch", "2"]) == 0
    # the failed refresh kept the table and said why; the next one cleared it
    assert shown == [None, "cannot reach http://sqs.down (is it running?)", None]
    # ... and the failed refresh's view gave the time of the table it kept, the first one's
    assert read_at == [READ_AT, READ_AT, READ_AT + datetime.timedelta(seconds=4)]
    assert "OpsShared/Emails" in capsys.readouterr().out


def test_the_table_s_lines_end_without_padding() -> None:
    # GIVEN a row of a long name, WHEN the table is printed as off a terminal (200 columns)
    row = JobTypeStatus("Prod-Billing/Invoices", "Invoices", "Prod-Billing", fifo=True, consumer="ecs")
    lines = text_of(table([row])).splitlines()
    # THEN the title is its own line, and no line is padded with trailing blanks to the table's width
    assert lines[0] == "jobqueues status"
    assert [line for line in lines if line != line.rstrip()] == []


# --- fair queues: the noisy groups ----------------------------------------------------------------------------------


def fair_job(i: int) -> JobType:
    url = f"https://sqs.us-east-1.amazonaws.com/1/F{i}"
    return JobType(f"F{i}", "S", f"S/F{i}", url, None, fair=True, consumer=LambdaConsumer(f"fn{i}", None))


def test_a_fair_queue_is_read_from_its_marker() -> None:
    resources = {
        f"Q{i}": {"Type": "AWS::SQS::Queue", "Metadata": {QUEUE_MARKER: {"version": 1, "job_type": f"J{i}",
                  "path": f"S/J{i}", **extra}}}
        for i, extra in enumerate([{"fair": True}, {"fair": False}, {}])
    }  # fmt: skip
    found = discover_templates([StackTemplate("S", {"Resources": resources})]).job_types
    assert [(job.job_type, job.fair) for job in found] == [("J0", True), ("J1", False), ("J2", False)]


def test_a_fair_queue_asks_for_its_noisy_groups_and_gets_the_latest_count() -> None:
    # GIVEN a fair job type beside a plain one
    jobs = [lambda_job(0), fair_job(1)]
    queries = {q["Id"]: q["MetricStat"] for q in metric_queries(jobs)}
    # THEN only the fair one asks for ApproximateNumberOfNoisyGroups, its one-minute maximum
    assert sorted(q for q in queries if q.startswith("noisy")) == ["noisy1"]
    assert queries["noisy1"]["Metric"] == {
        "Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfNoisyGroups",
        "Dimensions": [{"Name": "QueueName", "Value": "F1"}],
    }  # fmt: skip
    assert (queries["noisy1"]["Stat"], queries["noisy1"]["Period"]) == ("Maximum", 60)
    # and its value is the latest datapoint (TimestampDescending: the first), not a sum over the window
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    assert read_metrics(FakeCloudWatch({"noisy1": [3.0, 1.0]}), jobs, now) == {"noisy1": 3.0}
    row = job_status(1, jobs[1], {}, None, {"noisy1": 3.0}, {})
    assert (row.fair, row.noisy_groups) == (True, 3.0)
    assert job_status(0, jobs[0], {}, None, {"noisy1": 3.0}, {}).noisy_groups is None


def test_the_table_shows_a_fair_queue_s_noisy_groups_or_says_unknown() -> None:
    # GIVEN a fair queue with a datapoint, one without (the emulator publishes none), and a plain queue
    counted = JobTypeStatus("S/Counted", "Counted", "S", False, fair=True, noisy_groups=2.0)
    unknown = JobTypeStatus("S/Unknown", "Unknown", "S", False, fair=True)
    plain = JobTypeStatus("S/Plain", "Plain", "S", False)
    lines = text_of(table([counted, unknown, plain])).splitlines()
    header = next(line for line in lines if "job type" in line)
    assert "noisy groups" in header
    cells = {
        row[0].split()[0]: row
        for line in lines
        if "S/" in line and (row := [cell.strip() for cell in line.split("│")[1:-1]])
    }
    # THEN the count, one word for no datapoint (never an invented 0), nothing for a queue that is not fair
    column = [cell.strip() for cell in header.split("┃")[1:-1]].index("noisy groups")
    assert cells["S/Counted"][0] == "S/Counted (fair)" and cells["S/Counted"][column] == "2"
    assert cells["S/Unknown"][column] == "unknown"
    assert cells["S/Plain"][0] == "S/Plain" and cells["S/Plain"][column] == ""
    assert counted.as_dict()["noisy_groups"] == 2.0 and unknown.as_dict()["noisy_groups"] is None


def test_ctrl_c_during_a_read_drops_the_reads_not_started_and_returns_at_once() -> None:
    import threading

    from jobqueues.ops.status import read_status

    # GIVEN 40 queues whose reads block until released, and Ctrl-C (a KeyboardInterrupt) arriving in the first read
    release, started = threading.Event(), []
    lock = threading.Lock()

    class SlowSqs:
        def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
            with lock:
                started.append(QueueUrl)
                first = len(started) == 1
            if first:
                raise KeyboardInterrupt
            release.wait()
            return {"Attributes": {}}

    job_types = [
        JobType(f"J{i}", "S", f"S/J{i}", f"https://sqs.us-east-1.amazonaws.com/1/q{i}", None) for i in range(40)
    ]
    interrupted = threading.Event()

    def read() -> None:
        try:
            read_status(job_types, SlowSqs(), None, None)
        except KeyboardInterrupt:
            interrupted.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # WHEN the interrupt reaches the caller THEN it returns while the 7 reads under way still wait (a bound
    # on failure only: the old pool waited for all 40 reads, which wait for the release)
    returned_first = interrupted.wait(timeout=30)
    release.set()
    reader.join(timeout=30)
    assert returned_first, "read_status waited for every read before the Ctrl-C reached its caller"
    # ... and the reads not started when it came were dropped: the 8 threads' first, and the one the interrupted
    # thread took next
    assert len(started) <= 9, len(started)


def test_ctrl_c_ends_a_watch_started_in_the_background(local_aws: LocalServer) -> None:
    # GIVEN a watch started as a script starts a command in the background: with SIGINT ignored
    def ignore_ctrl_c() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    watch = subprocess.Popen(
        [str(JOBQUEUES), "--endpoint-url", local_aws.endpoint, "status", "--watch", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_ctrl_c,
    )
    assert watch.stdout is not None
    seen, deadline = "", time.monotonic() + 120
    while seen.count("jobqueues status") < 2 and time.monotonic() < deadline:
        seen += watch.stdout.readline()
    # WHEN Ctrl-C is pressed THEN it ends the watch, status 0, as in the foreground
    watch.send_signal(signal.SIGINT)
    try:
        _, err = watch.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        watch.kill()
        raise AssertionError("Ctrl-C did not end a watch whose SIGINT came ignored") from None
    assert watch.returncode == 0, err


def test_a_ctrl_c_that_lands_in_a_destructor_still_ends_the_watch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    import jobqueues.cli.status as status_command

    # GIVEN a watch whose third refresh drops an object whose destructor is running when Ctrl-C comes (Python
    # ignores an exception raised in a destructor: a KeyboardInterrupt raised there is lost)
    class Dropped:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs here, between bytecodes of the destructor
                pass

    refreshes: list[int] = []

    def read_status(*args: Any) -> list[JobTypeStatus]:
        refreshes.append(len(refreshes))
        if len(refreshes) == 3:
            Dropped()
        if len(refreshes) > 20:
            raise AssertionError("the watch went on after Ctrl-C")
        return []

    monkeypatch.setattr(status_command, "read_status", read_status)
    monkeypatch.setattr(status_command.Aws, "discover", lambda self, stacks: SimpleNamespace(job_types=[]))
    # WHEN it runs THEN the Ctrl-C ends it, status 0, at the next look
    assert main(["--endpoint-url", "http://localhost:1", "status", "--watch", "1"]) == 0
    assert len(refreshes) <= 4, refreshes
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["status", "--watch"], 0),  # a watch only reads: Ctrl-C is how it ends, mid-request too
        (["status"], 130),
        (["dlq", "list", "Invoices"], 130),
        (["drift", "--profiles", "{profiles}"], 130),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_one_ctrl_c_ends_a_command_waiting_on_an_endpoint_that_never_answers(
    arguments: list[str], expected: int, tmp_path: Path
) -> None:
    from support.not_aws import not_aws

    from jobqueues.ops.timeouts import READ_TIMEOUT_S

    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": 2, "deployments": {}}))
    credentials = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    environment = {**os.environ, **credentials, "AWS_MAX_ATTEMPTS": "3"}
    environment.pop("AWS_ENDPOINT_URL", None)
    # GIVEN a command whose first request reached a server that reads requests and never answers
    with not_aws("no answer") as server:
        argv = [a.replace("{profiles}", str(profiles)) for a in arguments]
        command = subprocess.Popen(
            [str(JOBQUEUES), "--endpoint-url", server.url, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
            preexec_fn=as_from_a_terminal,  # as a terminal starts it, whatever this process's SIGINT disposition
        )
        deadline = time.monotonic() + 60
        while not server.scopes and time.monotonic() < deadline and command.poll() is None:
            time.sleep(0.05)
        assert server.scopes, "the command's first request never reached the server"
        # WHEN one Ctrl-C is pressed while that request waits
        command.send_signal(signal.SIGINT)
        pressed = time.monotonic()
        try:
            out, err = command.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            command.kill()
            raise AssertionError(f"one Ctrl-C did not end `jobqueues {' '.join(arguments)}`") from None
        took = time.monotonic() - pressed
    # THEN it ends at once with its documented status, without the request's timeout error. Not a race: the
    # request was read by the server (which never answers) before the press, so a command that waits for it
    # cannot end before its read timeout (10 s per attempt, 3 attempts); ending comes 0.1 s after the press.
    assert READ_TIMEOUT_S >= 10
    assert command.returncode == expected, (out, err)
    assert took < 8, f"ended {took:.1f} s after Ctrl-C: it waited for the request"
    assert "error:" not in err and "Traceback" not in err, err
    assert err.strip() == ("" if expected == 0 else "interrupted"), err


def test_a_row_s_note_is_printed_under_the_table_and_leaves_every_column_readable() -> None:
    # GIVEN a healthy job type and one whose DLQ does not exist (a long note: a docs-only trial saw it squeeze every
    # column of the table to a few letters, healthy rows included)
    from rich.console import Console

    from jobqueues.cli.status_table import status_view

    job = JobType("Orders", "Trial", "Trial/Orders", "https://q/Trial-Orders", "https://q/Trial-Orders-dlq")
    healthy = job_status(0, replace(job, job_type="Emails"), {"VisibilityTimeout": "30"}, {}, {}, {})
    gone = job_status(1, job, {"VisibilityTimeout": "30"}, None, {}, {})
    # WHEN the table is printed 120 columns wide
    console = Console(width=120, record=True)
    console.print(status_view([healthy, gone]))
    text = console.export_text()
    # THEN every name and VT is whole, and the note follows the table, naming its row
    assert "Trial/Emails" in text and "Trial/Orders" in text and text.count("30 s") == 2, text
    assert f"Trial/Orders: {gone.note}" in " ".join(text.split()), text


def test_on_a_narrow_terminal_every_name_and_figure_is_whole_and_a_job_type_without_consumer_says_none() -> None:
    # GIVEN a two-Stage app's rows: long names, a Lambda consumer's long cell (two docs-only trials' app: on an
    # 80-column terminal the DLQ and VT columns shrank to nothing, at 60 whole columns were dropped, and names were
    # split mid-word at 100)
    from jobqueues.cli.status_table import status_view, table_width

    rows = [
        JobTypeStatus(
            f"{stage}-Media/{job}", job, f"{stage}-Media", fifo, visible=12_345, in_flight=0, delayed=0,
            dead_letter=7, visibility_timeout_s=180, max_receive_count=5, consumer=consumer,
        )
        for stage in ("Staging", "Live")
        for job, fifo, consumer in (("Thumbnails", False, "lambda"), ("Transcode", True, "ecs"))
    ]  # fmt: skip
    rows.append(JobTypeStatus("Shared/Emails", "Emails", "Shared", False, visible=0, dead_letter=0, consumer="none"))
    for width in (140, table_width(rows), 80, 60, 40):
        # WHEN the status is printed that wide
        console = Console(width=width, record=True, color_system=None)
        console.print(status_view(rows))
        text = console.export_text()
        lines = text.splitlines()
        # THEN no line is wider, nothing is cut short, and every name and figure is whole
        assert max(len(line) for line in lines) <= width and "…" not in text, text
        for row in rows:
            assert any(row.name in line for line in lines), (width, row.name, text)
        assert text.count("12,345") == 4 and text.count("180 s") == 4 and text.count(" 7 ") >= 4, text
        for label in ("visible", "flight", "delayed", "oldest", "DLQ", "VT", "rcv", "consumer", "throttles"):
            assert label in text, (width, label, text)
        # AND the table while it fits (its headers may wrap), else a block per job type
        assert ("┃" in text) == (width >= table_width(rows)), (width, text)
    # AND a job type without a consumer says none, where "-" is a figure that could not be read
    emails = next(line for line in text_of(table(rows)).splitlines() if "Shared/Emails" in line)
    assert emails.rstrip().rstrip("│").rstrip().endswith("none"), emails


def test_a_watch_names_every_dead_letter_count_above_what_a_short_terminal_crops() -> None:
    # GIVEN job types of which two hold dead letters (a trial's 80x24 watch cropped the last block, its red DLQ
    # count with it, and the footer)
    rows = [JobTypeStatus(f"S/J{i}", f"J{i}", "S", False, visible=i, dead_letter=i % 3) for i in range(1, 7)]
    # WHEN the watch's view is drawn on a short terminal
    console = Console(width=80, height=12, record=True, color_system=None)
    console.print(watch_view(rows, "throttled", 2, READ_AT))
    first = console.export_text().splitlines()[:3]
    # THEN its first lines, which a crop keeps, say how it refreshes, the failure, and each DLQ that holds messages
    assert first[0].startswith("refreshed every 2 s; Ctrl-C ends"), first
    assert "refresh failed: throttled" in " ".join(first), first
    # (each count before its job type's name: wrapped anywhere, each part reads right; a no-break space between a
    # name and its count kept neither together, rich wraps at it, nor a copy of the name clean)
    assert "dead letters: 1 in S/J1, 2 in S/J2, 1 in S/J4, 2 in S/J5" in " ".join(first), first
    assert "\u00a0" not in console.export_text()


def test_the_watch_s_first_line_wraps_without_trailing_blanks() -> None:
    # GIVEN a failed refresh and dead letters: a first line longer than the terminal (a docs-only trial's copy of
    # it at 80 columns ended its lines in blanks where rich wrapped them)
    rows = [JobTypeStatus(f"S/J{i}", f"J{i}", "S", False, visible=i, dead_letter=i) for i in range(1, 4)]
    for width in (80, 60):
        console = Console(width=width, record=True, color_system=None)
        console.print(watch_view(rows, "cannot reach http://localhost:42209/ (is it running?)", 2, READ_AT))
        lines = console.export_text().splitlines()
        # THEN it wraps, and no line ends in blanks
        assert lines[0].startswith("refreshed every 2 s; Ctrl-C ends;") and len(lines[0]) <= width, lines
        assert [line for line in lines if line != line.rstrip()] == [], lines


def test_a_stacked_name_too_long_for_the_terminal_breaks_after_its_stack() -> None:
    from jobqueues.cli.status_table import stacked

    row = JobTypeStatus(
        "Eu-Platform/NightlyInvoiceReconciliationJob", "NightlyInvoiceReconciliationJob", "Eu-Platform", False
    )
    console = Console(width=40, record=True, color_system=None)
    console.print(stacked([row], 40))
    assert console.export_text().splitlines()[1:3] == ["Eu-Platform/", "NightlyInvoiceReconciliationJob"]


def test_the_blocks_lines_end_without_padding() -> None:
    # GIVEN job types whose figures differ in width, WHEN status is shown on a terminal too narrow for the table
    from jobqueues.cli.status_table import status_view

    rows = [
        JobTypeStatus("Prod-Billing/Invoices", "Invoices", "Prod-Billing", True, visible=12_345, dead_letter=2),
        JobTypeStatus("OpsShared/Emails", "Emails", "OpsShared", False, visible=7, consumer="lambda"),
    ]
    for width in (60, 40):
        console = Console(width=width, record=True, color_system=None)
        console.print(status_view(rows))
        lines = console.export_text().splitlines()
        # THEN they are blocks, and no line ends in blanks (a grid pads each cell to its column's width)
        assert "┃" not in "".join(lines) and "Prod-Billing/Invoices (FIFO)" in lines, lines
        assert [line for line in lines if line != line.rstrip()] == [], lines


def test_a_lambda_consumers_figures_stay_beside_their_labels_when_the_cell_wraps() -> None:
    row = JobTypeStatus("S/F", "F", "S", False, consumer="lambda", lambda_errors=2)
    console = Console(width=100, record=True, color_system=None)
    console.print(table([row], 60))
    text = console.export_text()
    assert "errors 2," in text and "throttles -" in text, text


def test_the_docs_example_of_the_table_and_its_blocks_is_what_status_prints() -> None:
    # GIVEN the rows of docs/cli.md's example
    from jobqueues.cli.status_table import status_view

    rows = [  # in the order status gives them: by job type, then stack
        JobTypeStatus(
            "OpsShared/Emails", "Emails", "OpsShared", False, visible=7, in_flight=0, delayed=0, dead_letter=0,
            visibility_timeout_s=10, max_receive_count=5, consumer="none",
        ),
        JobTypeStatus(
            "Prod-Billing/Invoices", "Invoices", "Prod-Billing", True, visible=42, in_flight=3, delayed=0,
            oldest_age_s=95, dead_letter=2, visibility_timeout_s=10, max_receive_count=2, consumer="ecs",
            ecs_running=2, ecs_desired=2,
        ),
        JobTypeStatus(
            "Prod-Billing/Receipts", "Receipts", "Prod-Billing", False, visible=0, in_flight=0, delayed=0,
            dead_letter=0, visibility_timeout_s=18, max_receive_count=5, consumer="lambda", lambda_errors=0,
            lambda_throttles=0,
        ),
    ]  # fmt: skip
    docs = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    example = docs[docs.index("For example, on a terminal of 120 columns") :]
    blocks = [block.split("\n", 1)[1] for block in example.split("```console")[1:3]]
    for width, block in zip((120, 80), blocks, strict=True):
        # WHEN it is printed that wide, THEN it is the docs' block (the 120's after its `$ jobqueues status` line)
        console = Console(width=width, record=True, color_system=None)
        console.print(status_view(rows))
        printed = [line.rstrip() for line in console.export_text().splitlines()]
        shown = block.split("```")[0].splitlines()
        assert printed == [line for line in shown if not line.startswith("$ ")], (width, printed)
