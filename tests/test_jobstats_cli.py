"""The `jobstats profile` command (its `main`, on the session's SparkSession) on files written by the real sqslease
EMF logger; the command in a process of its own runs in the demo (`tests/test_demo.py`)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest

from jobstats.__main__ import main
from jobstats.plots import plot_file_name
from sqslease.emf import EmfLogger

DAY_MS = 86_400_000
START_MS = 1_793_000_000_000  # 2026-10-26T06:53:20Z


def write_logs(directory: Path) -> dict[str, np.ndarray]:
    """Email (1,500 messages, p99 known), Rare (20 messages) across a plain, a gzip and a CloudWatch export file."""
    rng = np.random.default_rng(5)
    email = rng.lognormal(np.log(300), 0.5, size=1_500)
    rare = rng.uniform(1_000, 2_000, size=20)
    directory.mkdir(parents=True, exist_ok=True)
    plain, zipped, export = io.StringIO(), io.StringIO(), io.StringIO()
    for i, ms in enumerate(email):
        stream = (plain, zipped, export)[i % 3]
        line = EmfLogger(stream).record(
            job_type="Email",
            queue="q-email",
            message_id=f"e{i}",
            processing_ms=float(ms),
            outcome="failure" if i % 50 == 0 else "success",
            receive_count=2 if i % 25 == 0 else 1,
            extensions=0,
            lease_lost=False,
            timestamp_ms=START_MS + i * 1000 + (2 * DAY_MS if i >= 750 else 0),
        )
        assert line["JobType"] == "Email"
    for i, ms in enumerate(rare):
        EmfLogger(plain).record(
            job_type="Rare",
            queue="q-rare",
            message_id=f"r{i}",
            processing_ms=float(ms),
            outcome="success",
            receive_count=1,
            extensions=1,
            lease_lost=False,
            timestamp_ms=START_MS + i,
        )
    (directory / "consumer-a.log").write_text(plain.getvalue() + "this line is not JSON\n")
    with gzip.open(directory / "consumer-b.log.gz", "wt") as f:
        f.write(zipped.getvalue())
    # CloudWatch Logs export to S3: a timestamp before each JSON object.
    (directory / "export.txt").write_text(
        "".join(f"2026-10-26T06:53:20.000Z {line}\n" for line in export.getvalue().splitlines())
    )
    (directory / "notes.txt").write_text("a file with\nno records at all\n")
    return {"Email": email, "Rare": rare}


def test_cli_profiles_every_format_and_writes_plots(
    spark,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``main`` as ``python -m jobstats`` calls it, on the session's SparkSession (a JVM of its own costs about 13 s
    of CPU; the demo runs the command itself, ``tests/test_demo.py``, and a cluster runs the shipped entry point,
    ``tests/test_jobstats_cluster.py``)."""
    values = write_logs(tmp_path / "logs")
    out = tmp_path / "profiles.json"
    monkeypatch.chdir(tmp_path)
    argv = ["profile", str(tmp_path / "logs"), "--out", str(out), "--plots", str(tmp_path / "plots")]
    assert main(argv) == 0
    document = json.loads(out.read_text())
    email = document["deployments"]["Email"]
    assert email["count"] == 1_500
    exact_p99 = float(np.quantile(values["Email"], 0.99, method="inverted_cdf"))
    assert abs(email["p99_ms"] - exact_p99) / exact_p99 <= 0.005
    assert email["failure_rate"] == pytest.approx(30 / 1500) and email["redelivery_rate"] == pytest.approx(60 / 1500)
    assert email["recommended_visibility_timeout_s"] == max(10, -(-int(np.ceil(exact_p99)) * 2 // 1000))
    assert {"p50_ms", "p90_ms", "p999_ms", "max_ms", "window", "what_if"} <= set(email)
    rare = document["deployments"]["Rare"]
    assert rare["recommended_visibility_timeout_s"] is None and "only 20 messages" in rare["refused"]
    report = document["input_report"]
    assert report["malformed_lines"] == 3 and "this line is not JSON" in report["malformed_sample"]
    assert report["files_without_records"] == [f"file://{tmp_path / 'logs' / 'notes.txt'}"]
    assert "no well-formed record in" in caplog.text and "notes.txt" in caplog.text
    plots = tmp_path / "plots"
    assert (plots / plot_file_name("Email")).stat().st_size > 10_000 and (plots / plot_file_name("Rare")).exists()
    printed = capsys.readouterr().out
    assert "Email: 1,500 messages" in printed and "Rare: 20 messages" in printed


def test_since_keeps_only_later_records(spark, tmp_path: Path) -> None:
    write_logs(tmp_path / "logs")
    out = tmp_path / "p.json"
    assert main(["profile", str(tmp_path / "logs"), "--out", str(out), "--since", "2026-10-27"]) == 0
    assert json.loads(out.read_text())["deployments"]["Email"]["count"] == 750


INPUT_SPELLINGS = {
    # The same four files of write_logs, named as users name them: each file is read once, by one name.
    "glob": ["{logs}/*"],
    "file: URIs": ["file:{logs}/*.log*", "file:{logs}/export.txt", "file://{logs}/notes.txt"],
    "relative": ["logs/*.log", "logs/consumer-b.log.gz", "./logs/../logs", "logs/notes.txt"],
}


@pytest.mark.parametrize("spelling", INPUT_SPELLINGS)
def test_globs_uris_and_relative_paths_name_files_as_spark_does(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """Hadoop names a globbed local file ``file:/x``, Spark ``file:///x``; a relative path is the caller's."""
    logs = tmp_path / "logs"
    write_logs(logs)
    monkeypatch.chdir(tmp_path)  # not the JVM's working directory: relative paths must still mean this one
    inputs = [pattern.format(logs=logs) for pattern in INPUT_SPELLINGS[spelling]]
    out = tmp_path / "p.json"
    assert main(["profile", *inputs, "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["deployments"]["Email"]["count"] == 1_500
    report = document["input_report"]
    assert report["files"] == 4 and report["files_without_records"] == [f"file://{logs / 'notes.txt'}"]


def test_empty_input_is_an_error(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.log").write_text("")
    assert main(["profile", str(tmp_path / "empty.log"), "--out", str(tmp_path / "p.json")]) == 2
    assert "no log lines" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_missing_path_and_only_garbage_are_errors(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", str(tmp_path / "nope"), "--out", str(tmp_path / "p.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "junk.log").write_text("junk\nmore junk\n")
    assert main(["profile", str(tmp_path / "junk.log"), "--out", str(tmp_path / "p.json")]) == 2
    assert "no well-formed records" in capsys.readouterr().err
    assert main(["profile", str(tmp_path / "junk.log"), "--out", "x", "--since", "yesterday"]) == 2


def test_cache_reads_each_file_once_and_rereads_changed_ones(
    spark, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    write_logs(tmp_path / "logs")
    args = ["profile", str(tmp_path / "logs"), "--cache", str(tmp_path / "cache")]
    caplog.set_level(logging.INFO, logger="jobstats")
    assert main([*args, "--out", str(tmp_path / "a.json")]) == 0
    assert "read 4 of 4 files (0 from the cache)" in caplog.text
    caplog.clear()
    assert main([*args, "--out", str(tmp_path / "b.json")]) == 0
    assert "read 0 of 4 files (4 from the cache)" in caplog.text
    first, second = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert first["deployments"] == second["deployments"] and first["input_report"] == second["input_report"]
    with (tmp_path / "logs" / "consumer-a.log").open("a") as f:  # a log file grows
        EmfLogger(f).record(
            job_type="Late",
            queue="q",
            message_id="x",
            processing_ms=5.0,
            outcome="success",
            receive_count=1,
            extensions=0,
            lease_lost=False,
        )
    caplog.clear()
    assert main([*args, "--out", str(tmp_path / "c.json")]) == 0
    assert "read 1 of 4 files (3 from the cache)" in caplog.text
    assert json.loads((tmp_path / "c.json").read_text())["deployments"]["Late"]["count"] == 1
