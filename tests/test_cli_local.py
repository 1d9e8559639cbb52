"""``jobqueues local deploy`` and ``jobqueues local up`` on ``tests/ops_app``, through the console script, run in
the app's own directory (its cdk.json applies).

One ``up`` run: it starts with no worker; 12 Invoices jobs (FIFO, 4 message groups) start workers, scaled within
max_tasks=3; every job is processed; the workers' lines reach the deployed log group in the emulator's CloudWatch
Logs; the workers stop when idle; a Receipts job runs on the Lambda driver; a poison Invoices job fails on the real
sqslease worker until it is dead-lettered, and ``dlq list`` shows it with the error its handler raised, found in the
consumer's log group; ``--until-idle`` ends the run.
Timeouts are generous (a deploy takes ~15 s); no assertion depends on timing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, OPS_APP_DIR
from support.cli_runs import JOBQUEUES, Run, depth, start, until

from jobqueues.cli import main
from jobqueues.emulator.server import Emulator, free_port
from jobqueues.ops.discovery import NOT_HERE, EcsConsumer, JobType, discover

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)


@dataclass
class UpRun:
    run: Run
    emulator: Emulator
    invoices: JobType
    receipts: JobType
    logs_dir: Path
    max_desired: int = 0
    invoice_ids: set[str] = field(default_factory=set)
    receipt_id: str = ""
    exit_status: int | None = None
    poison_id: str = ""  # an Invoices job that fails every time (its own group): dead-lettered by the worker
    poison_error: str = ""
    dlq_rows: list[dict] = field(default_factory=list)  # `dlq list Invoices --json` once it came with its error
    dlq_table: subprocess.CompletedProcess[str] | None = None  # `dlq list Invoices`, the table


def desired(emulator: Emulator, consumer: EcsConsumer) -> int:
    services = emulator.client("ecs").describe_services(cluster=consumer.cluster, services=[consumer.service])
    return int(services["services"][0]["desiredCount"])


def log_messages(emulator: Emulator, group: str) -> list[tuple[str, str]]:
    """(stream, message) of every event in ``group``."""
    logs = emulator.client("logs")
    found = []
    for stream in logs.describe_log_streams(logGroupName=group)["logStreams"]:
        events = logs.get_log_events(logGroupName=group, logStreamName=stream["logStreamName"])["events"]
        found += [(stream["logStreamName"], e["message"]) for e in events]
    return found


#: What the handlers print from their environment: a local-only setting (`--env`), and one of the shell's.
ECHOED = ["LOCAL_GREETING", "SHELL_ONLY"]


@pytest.fixture(scope="module")
def up_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpRun]:
    """``jobqueues local up`` on the ops app, driven through its whole life (see the module docstring)."""
    port = free_port()
    logs_dir = tmp_path_factory.mktemp("local-up-logs")
    run = start(
        *("local", "up", "--port", str(port), "--until-idle", "20", "--scale-in-after", "2", "--logs", str(logs_dir)),
        *("--env", "LOCAL_GREETING=everyone", "--env", "Invoices:LOCAL_GREETING=invoices only"),
        env={"SHELL_ONLY": "from the shell"},
    )
    try:
        run.wait_for_line("consumers running", timeout_s=420)  # generous: a loaded machine took over 180 s
        emulator = Emulator(f"http://localhost:{port}")
        found = discover(emulator.client("cloudformation"))
        up = UpRun(run, emulator, found.find("Invoices"), found.find("Receipts"), logs_dir)
        consumer = up.invoices.consumer
        assert isinstance(consumer, EcsConsumer)
        assert desired(emulator, consumer) == 0  # no worker before a message
        assert "workers (backlog" not in run.text()

        sqs = emulator.client("sqs")
        entries = []
        for i in range(12):
            job_id = f"invoice-{i}-{uuid.uuid4().hex[:6]}"
            entries.append(
                {
                    "Id": str(i),
                    "MessageBody": json.dumps({"id": job_id, "work_s": 1.5, "echo_env": ECHOED}),
                    "MessageGroupId": f"customer-{i % 4}",
                    "MessageDeduplicationId": job_id,
                }
            )
        for chunk in (entries[:10], entries[10:]):
            sent = sqs.send_message_batch(QueueUrl=up.invoices.queue_url, Entries=chunk)
            assert not sent.get("Failed")
            up.invoice_ids |= {s["MessageId"] for s in sent["Successful"]}
        up.receipt_id = sqs.send_message(
            QueueUrl=up.receipts.queue_url, MessageBody=json.dumps({"id": "receipt", "work_s": 0.2, "echo_env": ECHOED})
        )["MessageId"]
        up.poison_error = f"card declined {uuid.uuid4().hex[:8]}"
        up.poison_id = sqs.send_message(
            QueueUrl=up.invoices.queue_url,
            MessageBody=json.dumps({"id": "poison", "fail": up.poison_error}),
            MessageGroupId="poison",
            MessageDeduplicationId=f"poison-{uuid.uuid4().hex[:6]}",
        )["MessageId"]

        def drained() -> bool:
            up.max_desired = max(up.max_desired, desired(emulator, consumer))
            return depth(emulator, up.invoices.queue_url) == 0 and depth(emulator, up.receipts.queue_url) == 0

        until(drained, 120, "both queues empty")
        up.max_desired = max(up.max_desired, desired(emulator, consumer))
        up.dlq_rows, up.dlq_table = dead_lettered_poison(emulator)
        yield up
    finally:
        if run.process.poll() is None:
            try:
                run.exit_status = run.wait(180)
            except subprocess.TimeoutExpired:
                run.process.kill()
                run.process.wait()


def dead_lettered_poison(emulator: Emulator) -> tuple[list[dict], subprocess.CompletedProcess[str]]:
    """``dlq list Invoices`` (the JSON once a row has its error from the logs, then the table) while the run is up."""
    rows: list[dict] = []

    def listed() -> bool:
        nonlocal rows
        done = subprocess.run(
            [str(JOBQUEUES), "--endpoint-url", emulator.endpoint, "dlq", "list", "Invoices", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done
        rows = json.loads(done.stdout)
        return any(row["error"] for row in rows)

    until(listed, 120, "the poison message in the DLQ with its error")
    table = subprocess.run(
        [str(JOBQUEUES), "--endpoint-url", emulator.endpoint, "dlq", "list", "Invoices"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return rows, table


@NEEDS_CDK
def test_dlq_list_shows_the_last_error_of_a_poison_message(up_run: UpRun) -> None:
    # GIVEN a real poison message, dead-lettered by the real worker under `jobqueues local up`
    [row] = up_run.dlq_rows
    assert row["source_message_id"] == up_run.poison_id and row["group"] == "poison"
    assert (row["error_type"], row["error"], row["error_source"]) == ("RuntimeError", up_run.poison_error, "log")
    assert json.loads(row["body"])["id"] == "poison"
    # the table, through the console script
    done = up_run.dlq_table
    assert done is not None and done.returncode == 0 and f"RuntimeError: {up_run.poison_error}" in done.stdout, done
    # ... shows the id the message was sent with (the one the logs use), not its dead-letter copy's
    assert up_run.poison_id in done.stdout and row["message_id"] not in done.stdout, done


@NEEDS_CDK
def test_local_up_scales_processes_logs_and_stops_when_idle(up_run: UpRun) -> None:
    emulator, run = up_run.emulator, up_run.run
    consumer = up_run.invoices.consumer
    assert isinstance(consumer, EcsConsumer) and consumer.log_group is not None

    # scaled out beyond one worker on the backlog, never beyond max_tasks=3
    assert 1 < up_run.max_desired <= consumer.max_tasks == 3
    counts = [int(n) for n in re.findall(r"-> (\d+) workers", run.text())]
    assert counts and max(counts) <= 3 and 0 < counts[0]

    # every job's EMF line, in the deployed log group, on streams named like ECS's <prefix>/<container>/<task id>
    def invoice_lines() -> dict[str, str]:
        outcomes = {}
        for stream, message in log_messages(emulator, consumer.log_group or ""):
            if message.startswith("{") and json.loads(message).get("MessageId") in up_run.invoice_ids:
                assert re.fullmatch(r"Invoices/Worker/[0-9a-f]{32}", stream), stream
                outcomes[json.loads(message)["MessageId"]] = json.loads(message)["Outcome"]
        return outcomes

    until(lambda: len(invoice_lines()) == 12, 60, "12 Invoices lines in CloudWatch Logs")
    assert set(invoice_lines().values()) == {"success"}

    # the Lambda job ran, its line in the function's log group on a stream named like Lambda's
    receipts = up_run.receipts.consumer
    assert receipts is not None and receipts.log_group is not None
    until(
        lambda: any(up_run.receipt_id in m for _, m in log_messages(emulator, receipts.log_group or "")),
        60,
        "the Receipts line in CloudWatch Logs",
    )
    streams = {s for s, m in log_messages(emulator, receipts.log_group) if up_run.receipt_id in m}
    assert all(re.fullmatch(r"\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}", s) for s in streams), streams

    # idle: the workers stop (scale in to min_tasks=0), then --until-idle ends the run with a summary
    until(lambda: desired(emulator, consumer) == 0, 90, "the workers to stop")
    until(lambda: run.process.poll() is not None, 120, "--until-idle to end the run")
    assert run.wait(30) == 0, run.text()
    text = run.text()
    assert re.search(r"\d+ -> 0 workers", text)
    invoices = re.search(r"^summary Prod-Billing/Invoices: (.*?)(;|$)", text, re.MULTILINE)
    assert invoices and "12 success" in invoices[1].split(", "), text  # and the poison's runs
    assert "1 dead_lettered" in invoices[1].split(", "), text
    assert "summary Prod-Billing/Receipts: 1 success" in text
    # ... and a local copy of each worker's output, under its stack and job type
    worker_logs = up_run.logs_dir / "Prod-Billing" / "Invoices"
    local = [line for f in worker_logs.glob("*.log") for line in f.read_text().splitlines()]
    assert sum('"Outcome":"success"' in line for line in local) == 12
    # ... and the EMF lines alone under emf/, what jobstats reads; the Lambda code is kept apart from the logs
    emf_logs = up_run.logs_dir / "emf" / "Prod-Billing" / "Invoices"
    emf = [line for f in emf_logs.glob("*.log") for line in f.read_text().splitlines()]
    assert emf and all(json.loads(line)["JobType"] == "Invoices" for line in emf)
    assert all(json.loads(line)["Stack"] == "Prod-Billing" for line in emf)
    assert sum(json.loads(line)["Outcome"] == "success" for line in emf) == 12
    assert all(f.stat().st_size > 0 for f in (up_run.logs_dir / "emf").rglob("*.log"))  # no empty file for jobstats
    assert not (up_run.logs_dir / "lambda-code").exists()
    assert (OPS_APP_DIR / ".jobqueues" / "lambda-code" / "Prod-Billing" / "Receipts").is_dir()


@NEEDS_CDK
def test_consumers_get_local_settings_and_not_the_shell_s(up_run: UpRun) -> None:
    # GIVEN `local up --env LOCAL_GREETING=everyone --env Invoices:LOCAL_GREETING="invoices only"`, run from a
    # shell with SHELL_ONLY set, WHEN the handlers print those variables
    until(lambda: up_run.run.process.poll() is not None, 240, "the run to end")
    printed = {
        line.strip()
        for path in up_run.logs_dir.rglob("*.log")
        if "emf" not in path.parts
        for line in path.read_text().splitlines()
        if " env " in line
    }
    # THEN the job type's own value wins on its workers, the every-consumer one reaches the Lambda function, and
    # neither consumer sees the shell's environment (only its deployed one)
    assert printed == {
        "invoices env LOCAL_GREETING=invoices only",
        "invoices env SHELL_ONLY=<unset>",
        "receipts env LOCAL_GREETING=everyone",
        "receipts env SHELL_ONLY=<unset>",
    }


def test_env_values_are_parsed_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "up", "--env", "GREETING"]) == 2
    assert "--env 'GREETING': not NAME=VALUE (every consumer) or JOB_TYPE:NAME=VALUE" in capsys.readouterr().err


def test_env_of_an_unknown_job_type_or_one_without_a_consumer_is_refused() -> None:
    from jobqueues.emulator.consumers.local_env import environments, parse_env
    from jobqueues.ops.discovery import Discovery, LambdaConsumer
    from jobqueues.ops.errors import BadInput, NotFound

    lambda_ = LambdaConsumer(None, None)
    receipts = JobType("Receipts", "Prod-Billing", "Prod-Billing/Receipts", None, None, consumer=lambda_)
    emails = JobType("Emails", "OpsShared", "OpsShared/Emails", None, None)
    found = Discovery([receipts, emails], ["Prod-Billing", "OpsShared"])
    consumed = ["Prod-Billing/Receipts"]
    assert environments(parse_env(["A=1", "Prod-Billing/Receipts:A=2", "B=3"]), found, consumed) == {
        "Prod-Billing/Receipts": {"A": "2", "B": "3"}
    }
    with pytest.raises(NotFound, match="no job type Receipt in 2 stacks searched; job types: Prod-Billing/Receipts"):
        environments(parse_env(["Receipt:A=1"]), found, consumed)
    # a name with an empty part is refused as the values are parsed, before anything starts
    with pytest.raises(BadInput, match="'Prod-Billing/': name a job type JOB_TYPE or STACK/JOB_TYPE"):
        parse_env(["Prod-Billing/:A=1"])
    with pytest.raises(BadInput, match="OpsShared/Emails has no consumer that runs locally"):
        environments(parse_env(["Emails:A=1"]), found, consumed)


def test_env_of_a_job_type_two_stages_deploy_applies_to_both() -> None:
    from jobqueues.emulator.consumers.local_env import environments, parse_env
    from jobqueues.ops.discovery import Discovery, LambdaConsumer
    from jobqueues.ops.errors import NotFound

    # GIVEN Orders deployed by a Dev and a Prod Stage, both consumed locally
    orders = [
        JobType("Orders", stack, f"{stack}/Orders", None, None, consumer=LambdaConsumer(None, None))
        for stack in ("Dev-Jobs", "Prod-Jobs")
    ]
    # (found on the emulator as on AWS, whose advice for a stack not found is no option of local up)
    found = Discovery(orders, ["Dev-Jobs", "Prod-Jobs"], not_here=NOT_HERE)
    consumed = ["Dev-Jobs/Orders", "Prod-Jobs/Orders"]
    # WHEN --env names the job type alone THEN both deployments get it; STACK/JOB_TYPE one of them
    assert environments(parse_env(["Orders:A=1", "Prod-Jobs/Orders:A=2"]), found, consumed) == {
        "Dev-Jobs/Orders": {"A": "1"},
        "Prod-Jobs/Orders": {"A": "2"},
    }
    # ... and an unknown one names the job types, never an option `local up` does not have
    with pytest.raises(NotFound) as unknown:
        environments(parse_env(["Prod-Job/Orders:A=1"]), found, consumed)
    assert str(unknown.value) == (
        "--env Prod-Job/Orders:...: no stack Prod-Job in the stacks searched (stacks there: Dev-Jobs, Prod-Jobs); "
        "did you mean Prod-Jobs/Orders?"
    )


def test_no_cdk_json_and_no_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["local", "up"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: no cdk.json in {tmp_path}") and '--app "python app.py"' in err


def test_missing_moto_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)
    assert main(["local", "deploy"]) == 1
    assert capsys.readouterr().err == "error: the local emulator needs moto: pip install 'cdk-jobqueues[local]'\n"


def test_a_lambda_error_is_reported_once_per_kind_with_its_log(tmp_path: Path) -> None:
    from jobqueues.emulator.consumers.runner import ConsumerRunner

    class Run:  # the two things the runner reads of a LambdaConsumerRun
        log_file = tmp_path / "Receipts" / "stream.log"

        def __init__(self) -> None:
            self.pending: list[str] = []

        def take_errors(self) -> list[str]:
            taken, self.pending = self.pending, []
            return taken

    job = JobType("Receipts", "Prod-Billing", "Prod-Billing/Receipts", None, None)
    runner = ConsumerRunner.__new__(ConsumerRunner)  # no emulator: only the error bookkeeping runs
    runner._last_error = {}
    run = Run()
    import_error = "Runtime.InitError: No module named 'boto3'"
    # GIVEN a function that fails every invocation the same way, then another way
    run.pending = [import_error, import_error]
    first = runner._new_errors(job, run)  # type: ignore[arg-type]
    run.pending = [import_error]
    second = runner._new_errors(job, run)  # type: ignore[arg-type]
    run.pending = ["ValueError: bad", import_error]
    third = runner._new_errors(job, run)  # type: ignore[arg-type]
    # THEN each change of error is one line naming the job type, the error and where the log is
    assert first == [f"Prod-Billing/Receipts: invocation failed: {import_error} (log: {run.log_file})"]
    assert second == []
    reported = [line.split(": invocation failed: ")[1].split(" (log")[0] for line in third]
    assert reported == ["ValueError: bad", import_error]


def test_a_lambda_poller_that_failed_is_a_consumer_that_stopped_receiving() -> None:
    from jobqueues.emulator.consumers.runner import ConsumerRunner

    class Driver:
        def __init__(self, failure: BaseException | None) -> None:
            self.failure = failure

    class Run:  # what the runner reads of a LambdaConsumerRun: its driver
        def __init__(self, failure: BaseException | None) -> None:
            self.driver = Driver(failure)

    runner = ConsumerRunner.__new__(ConsumerRunner)  # no emulator: only the bookkeeping runs
    runner.lambdas = {"Prod-Billing/Receipts": Run(RuntimeError("boom")), "Dev-Billing/Receipts": Run(None)}  # type: ignore[dict-item]
    assert runner.stopped_receiving() == {"Prod-Billing/Receipts": "its poller failed: RuntimeError('boom')"}


def test_the_summary_counts_each_deployment_s_own_lines() -> None:
    from jobqueues.emulator.deployments import outcome_counts

    # GIVEN Exports deployed by a Dev and a Prod Stage: one job ran in Dev, four in Prod, one of them failed first
    jobs = [
        JobType("Exports", stack, f"{stack}/Exports", f"http://localhost:1/123456789012/{stack}-Exports", None)
        for stack in ("Dev-TeamC", "Prod-TeamC")
    ]

    def line(stack: str, outcome: str, **fields: str) -> str:
        record = {"_aws": {"Timestamp": 1}, "JobType": "Exports", "Stack": stack, "Queue": f"{stack}-Exports"}
        return json.dumps({**record, "MessageId": "m", "Outcome": outcome, **fields})

    lines = {
        "dev-worker": [line("Dev-TeamC", "success"), "INFO not an EMF line"],
        "prod-worker": [line("Prod-TeamC", outcome) for outcome in ("success", "failure", "success", "success")],
        # a line that names no stack: its queue says whose it is
        "prod-older": [json.dumps({"JobType": "Exports", "Queue": "Prod-TeamC-Exports", "Outcome": "success"})],
    }
    # WHEN the summary counts the outcomes THEN each deployment gets its own
    counts = outcome_counts(lines.values(), jobs)
    assert counts == {"Dev-TeamC/Exports": {"success": 1}, "Prod-TeamC/Exports": {"success": 4, "failure": 1}}


def test_a_logs_directory_that_cannot_be_made_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN --logs under a regular file (a typo'd path): it used to fail after the deploy, with a traceback
    (tmp_path / "notes.txt").write_text("")
    logs = tmp_path / "notes.txt" / "logs"
    # WHEN local up starts, THEN one line, status 2, and no emulator started, no cdk run
    assert main(["local", "up", "--app", "python no_such_app.py", "--logs", str(logs)]) == 2
    error = f"error: --logs {logs}: cannot make it a directory: {tmp_path / 'notes.txt'} is a file\n"
    assert capsys.readouterr() == ("", error)


def test_the_local_up_table_s_lines_end_without_padding() -> None:
    from rich.console import Console

    from jobqueues.cli.local_view import status_table
    from jobqueues.emulator.consumers.runner import Row

    class Runner:  # what the table reads of a ConsumerRunner: its rows
        def rows(self) -> list[Row]:
            return [Row("Prod-Billing/Invoices", "ecs", visible=3, workers=2), Row("Dev-Billing/Receipts", "none")]

    # WHEN the table is printed as off a terminal (200 columns)
    console = Console(width=200, record=True, color_system=None)
    console.print(status_table(Runner()))  # type: ignore[arg-type]
    lines = console.export_text().splitlines()
    # THEN the title is its own line, and no line is padded with trailing blanks to the table's width
    assert lines[0] == "jobqueues local up"
    assert [line for line in lines if line != line.rstrip()] == []
