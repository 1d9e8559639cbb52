"""Every measurement keyed by what was deployed: ``tests/team_stages_app`` (Stages ``Dev`` and ``Prod``, each a stack
``TeamC`` with the same two job types, ``Exports`` on ECS and ``Refunds`` on Lambda) under
``jobqueues local up --chaos 0.2``, then jobstats on the run's EMF lines (the session's SparkSession) and
``jobqueues drift`` on the two-Stage deployment, while it runs.

GIVEN short jobs sent to Dev's Exports, long ones to Prod's Exports and a few to Dev's Refunds only (nothing to Prod's
Refunds), WHEN the consumers ran them through the fault proxy, THEN each deployment's lines name their stack, its
logs are kept apart, jobstats profiles each deployment on its own lines, drift compares each with its own profile,
and the summary and the chaos report count each deployment's own jobs, none of them never received.

One ``local up`` run (one deploy) for all of it, ended with SIGTERM. Bounds are generous; no assertion depends on
timing or on which requests the chaos faulted: the durations differ by 20 x between the stages.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import NEEDS_CDK
from support.cli_runs import depth, start, until
from test_local_chaos_example import report_rows, send

from jobqueues.emulator.server import Emulator, free_port
from jobqueues.ops.discovery import discover
from jobqueues.ops.drift import NO_PROFILE
from jobqueues.ops.errors import EXIT_INTERRUPTED

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

APP_DIR = Path(__file__).resolve().parent / "team_stages_app"
JOBQUEUES = Path(sys.executable).parent / "jobqueues"
#: (stack, job type) -> (jobs sent, seconds each): Dev's Exports 20 x shorter than Prod's; Prod's Refunds gets none.
SENT = {
    ("Dev-TeamC", "Exports"): (10, 0.05),
    ("Prod-TeamC", "Exports"): (4, 1.0),
    ("Dev-TeamC", "Refunds"): (4, 0.05),
}


@dataclass
class StagesRun:
    """What the run left: its output, exit status, logs, jobstats' document and drift's rows (by name)."""

    text: str
    exit_status: int | None
    logs: Path
    profiles: dict[str, Any]
    drift: dict[str, dict[str, Any]]
    port: int  # the emulator's


@pytest.fixture(scope="module")
def stages_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StagesRun]:
    from jobstats.pipeline import profile
    from jobstats.profiles import write_document

    port = free_port()
    logs = tmp_path_factory.mktemp("stages-logs")
    run = start(
        "local", "up", "--port", str(port), "--chaos", "0.2", "--scale-in-after", "2", "--logs", str(logs), cwd=APP_DIR
    )
    try:
        run.wait_for_line("consumers running", timeout_s=300)
        emulator = Emulator(f"http://localhost:{port}")
        found = discover(emulator.client("cloudformation"))
        urls = []
        for (stack, job_type), (count, work_s) in SENT.items():
            url = found.find(job_type, stack).queue_url
            assert url is not None
            send(emulator, url, [{"id": f"{stack}-{job_type}-{i}", "work_s": work_s} for i in range(count)])
            urls.append(url)
        until(lambda: all(depth(emulator, url) == 0 for url in urls), 240, "every queue empty")
        # jobstats on the run's EMF lines, and drift against the deployment, while it runs
        path = logs / "profiles.json"
        write_document(profile(spark, [str(logs / "emf")], min_samples=1), path)
        drift = subprocess.run(
            [str(JOBQUEUES), "--endpoint-url", emulator.endpoint, "drift", "--profiles", str(path), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert drift.returncode in (0, 1), drift
        run.process.send_signal(signal.SIGTERM)  # as Ctrl-C: drained, then the summary and the chaos report
        until(lambda: run.process.poll() is not None, 240, "local up to stop")
        yield StagesRun(
            run.text(),
            run.process.returncode,
            logs,
            json.loads(path.read_text()),
            {row["name"]: row for row in json.loads(drift.stdout)},
            port,
        )
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


@NEEDS_CDK
def test_each_line_names_its_stack_and_each_deployment_logs_apart(stages_run: StagesRun) -> None:
    for stack in ("Dev-TeamC", "Prod-TeamC"):
        lines = [
            json.loads(line)
            for f in (stages_run.logs / "emf" / stack).rglob("*.log")
            for line in f.read_text().splitlines()
        ]
        assert lines and {line["Stack"] for line in lines} == {stack}, stack
    assert list((stages_run.logs / "Dev-TeamC" / "Refunds").glob("*.log"))
    assert list((stages_run.logs / "Prod-TeamC" / "Exports").glob("*.log"))
    assert not (stages_run.logs / "Exports").exists() and not (stages_run.logs / "Refunds").exists()


@NEEDS_CDK
def test_jobstats_profiles_each_deployment_on_its_own_lines(stages_run: StagesRun) -> None:
    profiles = stages_run.profiles["deployments"]
    assert sorted(profiles) == ["Dev-TeamC/Exports", "Dev-TeamC/Refunds", "Prod-TeamC/Exports"]
    dev, prod = profiles["Dev-TeamC/Exports"], profiles["Prod-TeamC/Exports"]
    assert (dev["stack"], dev["job_type"], prod["stack"], prod["job_type"]) == (
        "Dev-TeamC",
        "Exports",
        "Prod-TeamC",
        "Exports",
    )
    # a run per job at least (a delete lost to the chaos runs one again); Dev's 50 ms jobs, Prod's 1 s ones
    assert dev["count"] >= 10 and prod["count"] >= 4
    assert dev["p99_ms"] < 500 <= 1000 <= prod["p99_ms"]


@NEEDS_CDK
def test_drift_compares_each_deployment_with_its_own_profile(stages_run: StagesRun) -> None:
    rows = stages_run.drift
    assert rows["Dev-TeamC/Exports"]["measured_p99_s"] < 0.5 <= 1.0 <= rows["Prod-TeamC/Exports"]["measured_p99_s"]
    assert rows["Dev-TeamC/Exports"]["samples"] != rows["Prod-TeamC/Exports"]["samples"]
    assert rows["Dev-TeamC/Refunds"]["profile"] == "Dev-TeamC/Refunds"
    assert rows["Prod-TeamC/Refunds"]["status"] == NO_PROFILE and rows["Prod-TeamC/Refunds"]["samples"] is None


@NEEDS_CDK
def test_the_summary_and_the_chaos_report_count_each_deployment_s_own_jobs(stages_run: StagesRun) -> None:
    text = stages_run.text
    # SIGTERM (a `kill`, a CI timeout) stopped the run as Ctrl-C does: workers drained, the emulator stopped
    assert stages_run.exit_status == EXIT_INTERRUPTED, text
    assert "interrupted: draining the workers" in text, text
    with pytest.raises(OSError):
        socket.create_connection(("localhost", stages_run.port), timeout=2).close()
    assert "summary Prod-TeamC/Refunds: no message processed" in text, text
    for (stack, job_type), (count, _) in SENT.items():
        ran = re.search(rf"^summary {stack}/{job_type}: (\d+) success", text, re.MULTILINE)
        assert ran and int(ran[1]) >= count, text
    rows = report_rows(text)
    assert set(rows) == {"Dev-TeamC/Exports", "Dev-TeamC/Refunds", "Prod-TeamC/Exports", "Prod-TeamC/Refunds"}, text
    for (stack, job_type), (count, _) in SENT.items():
        assert rows[f"{stack}/{job_type}"][0] == count, text  # received: the distinct messages its queue handed out
    assert rows["Prod-TeamC/Refunds"][0] == 0, text
    for name, row in rows.items():
        lost, two_live, never_received = row[4], row[6], row[7]
        assert (lost, two_live, never_received) == (0, 0, 0), f"{name}: {text}"
