"""jobstats keys every profile by what was deployed: a job type deployed by a Dev and a Prod stack gets a profile per
stack (``STACK/JOB_TYPE``), from lines of the real sqslease EMF logger, on the session's SparkSession.

GIVEN Dev's and Prod's lines of one job type (different counts and durations) in the same files WHEN jobstats
profiles them THEN ``profiles.json`` (schema version 2) holds one profile per deployment, each with its own
samples; lines that name no stack (an older sqslease, a consumer not told its stack) keep the job type alone.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from jobstats.__main__ import main
from jobstats.plots import plot_file_name
from sqslease.emf import EmfLogger

START_MS = 1_795_000_000_000


def lines(job_type: str, stack: str | None, durations_ms: list[float], queue: str) -> str:
    out = io.StringIO()
    logger = EmfLogger(out)
    for i, duration in enumerate(durations_ms):
        logger.record(
            job_type=job_type,
            stack=stack,
            queue=queue,
            message_id=f"{stack}-{job_type}-{i}",
            processing_ms=duration,
            outcome="success",
            receive_count=1,
            extensions=0,
            lease_lost=False,
            timestamp_ms=START_MS + i * 1000,
        )
    return out.getvalue()


def test_each_deployment_of_a_job_type_gets_its_own_profile(spark: Any, tmp_path: Path, capsys: Any) -> None:
    # GIVEN one file with Dev's and Prod's Reports lines interleaved, and an older consumer's lines in another
    dev = lines("Reports", "Dev-TeamC", [10.0 + i % 20 for i in range(300)], "Dev-TeamC-Reports")
    prod = lines("Reports", "Prod-TeamC", [6_000.0 + i % 400 for i in range(519)], "Prod-TeamC-Reports")
    mixed = [line for pair in zip(dev.splitlines(), prod.splitlines(), strict=False) for line in pair]
    mixed += prod.splitlines()[len(dev.splitlines()) :]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "consumers.log").write_text("\n".join(mixed) + "\n")
    (logs / "older.log").write_text(lines("Reports", None, [50.0] * 7, "Reports"))
    out = tmp_path / "profiles.json"
    # WHEN jobstats profiles them
    args = ["profile", str(logs), "--min-samples", "100", "--cache", str(tmp_path / "cache")]
    assert main([*args, "--out", str(out), "--plots", str(tmp_path / "plots")]) == 0
    document = json.loads(out.read_text())
    # THEN one profile per deployment, each on its own samples
    assert document["schema_version"] == 2 and "job_types" not in document
    profiles = document["deployments"]
    assert sorted(profiles) == ["Dev-TeamC/Reports", "Prod-TeamC/Reports", "Reports"]
    dev_profile, prod_profile, older = (profiles[k] for k in ("Dev-TeamC/Reports", "Prod-TeamC/Reports", "Reports"))
    assert (dev_profile["stack"], dev_profile["job_type"], dev_profile["count"]) == ("Dev-TeamC", "Reports", 300)
    assert (prod_profile["stack"], prod_profile["job_type"], prod_profile["count"]) == ("Prod-TeamC", "Reports", 519)
    assert (older["stack"], older["job_type"], older["count"]) == (None, "Reports", 7)
    assert dev_profile["max_ms"] == 29.0 and prod_profile["p50_ms"] >= 6_000
    assert dev_profile["recommended_visibility_timeout_s"] == 10 < prod_profile["recommended_visibility_timeout_s"]
    assert "queues" not in dev_profile  # one queue per deployment: no breakdown
    # ... a plot per deployment, and a line per deployment at the end of the run
    for name in profiles:
        assert (tmp_path / "plots" / plot_file_name(name)).exists()
    printed = capsys.readouterr().out
    assert "Dev-TeamC/Reports: 300 messages" in printed and "Prod-TeamC/Reports: 519 messages" in printed
    # ... and the same profiles again from --cache's partials, the files not read again
    assert main([*args, "--out", str(tmp_path / "again.json")]) == 0
    assert json.loads((tmp_path / "again.json").read_text())["deployments"] == profiles


def test_a_deployment_whose_lines_name_two_queues_gets_each_queues_profile(spark: Any, tmp_path: Path) -> None:
    # GIVEN one deployment's lines from two queues (a queue renamed by a deploy, say), and another's from one
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text(
        lines("Reports", "Prod", [100.0] * 150, "Prod-Reports-old")
        + lines("Reports", "Prod", [2_000.0] * 120, "Prod-Reports")
        + lines("Emails", "Prod", [50.0] * 130, "Prod-Emails")
    )
    out = tmp_path / "profiles.json"
    # WHEN jobstats profiles them
    assert main(["profile", str(logs), "--min-samples", "100", "--out", str(out)]) == 0
    profiles = json.loads(out.read_text())["deployments"]
    # THEN the two-queue deployment has a profile per queue beside its own, and the one-queue deployment none
    queues = profiles["Prod/Reports"]["queues"]
    assert sorted(queues) == ["Prod-Reports", "Prod-Reports-old"]
    assert (queues["Prod-Reports-old"]["count"], queues["Prod-Reports"]["count"]) == (150, 120)
    assert queues["Prod-Reports"]["max_ms"] == 2_000.0 and profiles["Prod/Reports"]["count"] == 270
    assert "queues" not in profiles["Prod/Emails"]
