"""Fair queues end to end, on ``tests/fair_app`` (an ECS and a Lambda job type, both fair) under ``jobqueues local
up``, through the console script in the app's own directory:

- the deploy checks the fair queues' resources: each has its quiet-group oldest-age alarm, at the threshold the
  plan derived (``max_queue_time`` when declared, else the oldest-message-age alarm's);
- ``jobqueues status`` marks them fair and says ``unknown`` for their noisy groups (the emulator publishes no SQS
  metric: no number is invented);
- a flood from one tenant and jobs from quiet tenants, sent with ``jobqueues send --group``, are all handled, and
  every EMF line names its message's tenant (``MessageGroupId``);
- ``python -m jobstats tenants`` on those lines names the flooding tenant noisy.

The emulator does not emulate the fairness itself (docs/emulator.md): nothing here measures who waited less.
Timeouts are generous (the machine may be shared: minutes, for what takes seconds); no assertion depends on
timing. The run ends with Ctrl-C once both queues are empty.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK
from support.cli_runs import Run, depth, start, until

from jobqueues.emulator.server import Emulator, free_port
from jobqueues.ops.discovery import discover
from sqslease.emf_text import GROUP_FIELD

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

FAIR_APP_DIR = Path(__file__).resolve().parent / "fair_app"
QUIET_TENANTS = ("quiet-1", "quiet-2", "quiet-3")
#: Jobs per job type: the flood's, and each quiet tenant's.
FLOOD, QUIET = {"Reports": 30, "Alerts": 15}, {"Reports": 2, "Alerts": 1}


@dataclass
class FairRun:
    run: Run
    endpoint: str
    logs_dir: Path
    status_rows: dict[str, dict] = field(default_factory=dict)
    status_table: str = ""
    sent: dict[str, dict[str, str]] = field(default_factory=dict)  # job type -> message id -> tenant
    exit_status: int | None = None


JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def jobqueues(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script, run to its end."""
    return subprocess.run([str(JOBQUEUES), *args], capture_output=True, text=True, timeout=300, check=False)


def send(endpoint: str, job_type: str, tenant: str, bodies: list[str], tmp: Path) -> dict:
    """``jobqueues send JOB_TYPE --file ... --group TENANT --json``; its JSON result."""
    jobs = tmp / f"{job_type}-{tenant}.jsonl"
    jobs.write_text("".join(body + "\n" for body in bodies))
    done = jobqueues("--endpoint-url", endpoint, "send", job_type, "--file", str(jobs), "--group", tenant, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def fair_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FairRun]:
    port = free_port()
    logs_dir = tmp_path_factory.mktemp("fair-logs")
    jobs_dir = tmp_path_factory.mktemp("fair-jobs")
    run = start("local", "up", "--port", str(port), "--scale-in-after", "2", "--logs", str(logs_dir), cwd=FAIR_APP_DIR)
    endpoint = f"http://localhost:{port}"
    point = ("--endpoint-url", endpoint)
    fair = FairRun(run, endpoint, logs_dir)
    try:
        run.wait_for_line("consumers running", timeout_s=600)
        emulator = Emulator(endpoint)
        found = discover(emulator.client("cloudformation"))
        # status before any job: each fair job type marked, its noisy groups unknown
        fair.status_rows = {row["job_type"]: row for row in json.loads(jobqueues(*point, "status", "--json").stdout)}
        fair.status_table = jobqueues(*point, "status").stdout
        for job_type in ("Reports", "Alerts"):
            sent: dict[str, str] = {}
            plan = [("flood", FLOOD[job_type])] + [(tenant, QUIET[job_type]) for tenant in QUIET_TENANTS]
            for tenant, count in plan:
                bodies = [
                    json.dumps({"id": f"{tenant}-{i}-{uuid.uuid4().hex[:6]}", "work_s": 0.05}) for i in range(count)
                ]
                result = send(endpoint, job_type, tenant, bodies, jobs_dir)
                assert result["sent"] == count and result["failed"] == []
                sent.update(dict.fromkeys(result["message_ids"], tenant))
            fair.sent[job_type] = sent
        urls = [found.find(job_type).queue_url or "" for job_type in ("Reports", "Alerts")]
        until(lambda: all(depth(emulator, url) == 0 for url in urls), 600, "both fair queues empty")
        run.process.send_signal(signal.SIGINT)  # Ctrl-C: the workers drain and the run ends with 130
        fair.exit_status = run.wait(300)
        yield fair
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


def emf_lines(fair: FairRun, job_type: str) -> list[dict]:
    directory = fair.logs_dir / "emf" / "Tenants" / job_type
    return [json.loads(line) for f in sorted(directory.glob("*.log")) for line in f.read_text().splitlines()]


@NEEDS_CDK
def test_the_deploy_checks_each_fair_queue_s_quiet_group_alarm(fair_run: FairRun) -> None:
    text = fair_run.run.text()
    # the deploy's report lists each queue's alarms, the quiet-group age among them, at its derived threshold:
    # Alerts' max_queue_time (2 min), Reports' oldest-message-age threshold (5 min: the default's floor)
    alarm_lines = [line.strip() for line in text.splitlines() if "ApproximateAgeOfOldestMessageInQuietGroups" in line]
    assert alarm_lines == [
        "alarm ApproximateAgeOfOldestMessageInQuietGroups Maximum > 120",
        "alarm ApproximateAgeOfOldestMessageInQuietGroups Maximum > 300",
    ], text
    assert "properties match their templates" in text


@NEEDS_CDK
def test_status_marks_the_fair_queues_and_invents_no_noisy_group_count(fair_run: FairRun) -> None:
    for job_type in ("Reports", "Alerts"):
        row = fair_run.status_rows[job_type]
        assert (row["fair"], row["fifo"], row["noisy_groups"]) == (True, False, None)
    assert "Tenants/Reports (fair)" in fair_run.status_table
    assert "noisy groups" in fair_run.status_table and "unknown" in fair_run.status_table


@NEEDS_CDK
def test_a_flood_and_quiet_tenants_are_all_handled_each_line_naming_its_tenant(fair_run: FairRun) -> None:
    assert fair_run.exit_status == 130  # ended with Ctrl-C, as documented
    for job_type in ("Reports", "Alerts"):
        lines = emf_lines(fair_run, job_type)
        # every job sent ran once to success, and its line names the tenant it was sent for
        succeeded = {line["MessageId"]: line[GROUP_FIELD] for line in lines if line["Outcome"] == "success"}
        assert succeeded == fair_run.sent[job_type], job_type
        assert all(GROUP_FIELD in line for line in lines)
        assert {line[GROUP_FIELD] for line in lines} == {"flood", *QUIET_TENANTS}


@NEEDS_CDK
def test_jobstats_names_the_flooding_tenant_noisy(fair_run: FairRun, tmp_path: Path) -> None:
    out = tmp_path / "tenants.json"
    done = subprocess.run(
        [sys.executable, "-m", "jobstats", "tenants", str(fair_run.logs_dir / "emf"), "--out", str(out),
         "--master", "local[1]"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())["deployments"]
    for job_type in ("Reports", "Alerts"):
        entry = report[f"Tenants/{job_type}"]
        assert entry["noisy"] == ["flood"] and entry["tenants"] == 4
        assert entry["groups"]["flood"]["messages"] == FLOOD[job_type]
    assert "Tenants/Reports: 4 tenants" in done.stdout
