"""jobstats pointed at ``jobqueues local up``'s whole logs directory, where each consumer's EMF lines are stored
twice: in its own log (with its logging lines) and under ``emf/``. Each line counts once."""

from __future__ import annotations

import io
import itertools
import json
import os
from pathlib import Path

import boto3
from moto import mock_aws

from jobqueues.emulator.consumers.log_shipper import EMF_DIR, LogShipper
from jobstats.__main__ import main
from jobstats.duplicates import duplicate_files
from jobstats.pipeline import profile
from sqslease.emf import EmfLogger

START_MS = 1_793_000_000_000


def local_up_logs(logs_dir: Path, workers: int = 2, jobs: int = 40) -> int:
    """What ``local up`` leaves in its logs directory after ``workers`` consumers each processed ``jobs`` messages
    (written through the real log shipper, against moto's CloudWatch Logs in process); returns the EMF lines."""
    with mock_aws():
        shipper = LogShipper(boto3.client("logs", region_name="us-east-1"), logs_dir, clock_ms=lambda: START_MS)
        for worker in range(workers):
            read, write = os.pipe()
            name = f"Transcode-worker-{worker}"
            shipper.attach(os.fdopen(read, "rb"), "/ecs/Transcode", name, f"{name}.log")
            with os.fdopen(write, "w") as out:
                out.write(f"INFO sqslease.worker: {name} started\n")
                for job in range(jobs):
                    EmfLogger(out).record(
                        job_type="Transcode",
                        stack="JobQueuesExample",
                        queue="JobQueuesExample-Transcode",
                        message_id=f"{worker}-{job}",
                        processing_ms=100.0 + 37 * job + worker,
                        outcome="success",
                        receive_count=1,
                        extensions=0,
                        lease_lost=False,
                        timestamp_ms=START_MS + 1000 * job,
                    )
        shipper.close()
    return workers * jobs


def test_the_logs_directory_counts_each_emf_line_once(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lines = local_up_logs(tmp_path / "logs")
    whole = profile(spark, [str(tmp_path / "logs")], min_samples=1)
    emf_only = profile(spark, [str(tmp_path / "logs" / EMF_DIR)], min_samples=1)

    assert emf_only["input_report"]["total_lines"] == lines
    assert whole["input_report"]["total_lines"] == lines
    assert whole["deployments"] == emf_only["deployments"]
    assert whole["deployments"]["JobQueuesExample/Transcode"]["count"] == lines
    # the copies are named, each with the file whose lines it repeats
    copies = whole["input_report"]["duplicate_files"]
    assert sorted(Path(copy).name for copy in copies) == ["Transcode-worker-0.log", "Transcode-worker-1.log"]
    assert all(Path(original).parent.name == EMF_DIR for original in copies.values())


def test_the_summary_line_says_how_many_files_were_copies(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    lines = local_up_logs(tmp_path / "logs")
    out = tmp_path / "profiles.json"
    assert main(["profile", str(tmp_path / "logs"), "--out", str(out), "--min-samples", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    copies = "2 files repeating another's records counted once"
    assert first.startswith(f"{lines} lines from 4 files, 0 malformed, {copies}")


def test_files_that_agree_on_their_totals_but_not_their_cells_are_no_copies() -> None:
    # GIVEN two files with the same lines, first and last timestamps per key, but other durations, and a true copy
    def row(file: str, cells: dict[int, int]) -> dict:
        return {
            "file": file, "reason": None, "day": 20_752, "stack": "Prod", "job_type": "Render", "queue": "q",
            "count": 3, "released": 0, "first_ms": 1, "last_ms": 9, "sum_us": sum(cells), "cells": cells,
        }  # fmt: skip

    rows = {
        "a.log": [row("a.log", {5_000: 3})],
        "b.log": [row("b.log", {5_000: 2, 5_004: 1})],
        "emf/a.log": [row("emf/a.log", {5_000: 3})],
    }
    # WHEN the duplicate check runs
    copies = duplicate_files(rows)
    # THEN only the true copy is one: agreeing totals alone make no copy
    assert copies == {"emf/a.log": "a.log"}


def test_the_malformed_sample_comes_from_the_files_counted(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a worker's EMF lines under emf/, the same lines among 20 logging lines in its own log (a copy), and a
    # log of another process with 3 logging lines only
    out = io.StringIO()
    for job in range(30):
        EmfLogger(out).record(
            job_type="Resize", stack="Team", queue="Team-Resize", message_id=f"m{job}", processing_ms=10.0 + job,
            outcome="success", receive_count=1, extensions=0, lease_lost=False, timestamp_ms=START_MS + 1000 * job,
        )  # fmt: skip
    emf = out.getvalue().splitlines()
    logs = tmp_path / "logs"
    (logs / EMF_DIR).mkdir(parents=True)
    (logs / EMF_DIR / "w1.log").write_text("\n".join(emf) + "\n")
    chatter = [f"INFO sqslease.worker: poll {i}" for i in range(20)]
    mixed = [line for pair in itertools.zip_longest(chatter, emf) for line in pair if line is not None]
    (logs / "w1.log").write_text("\n".join(mixed) + "\n")
    other = ["INFO idle worker start", "INFO idle worker polling", "INFO idle worker stop"]
    (logs / "w2.log").write_text("\n".join(other) + "\n")
    # WHEN the whole directory is profiled
    assert main(["profile", str(logs), "--out", str(tmp_path / "profiles.json"), "--min-samples", "1"]) == 0
    report = json.loads((tmp_path / "profiles.json").read_text())["input_report"]
    # THEN the copy counts once, and the malformed lines counted are the other log's, each in the sample
    assert list(report["duplicate_files"]) == [(logs / "w1.log").as_uri()]
    assert report["malformed_lines"] == 3
    assert report["malformed_sample"] == other
    assert ", 3 malformed, 1 file repeating another's records counted once;" in capsys.readouterr().out
