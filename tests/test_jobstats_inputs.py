"""`python -m jobstats profile` on logs nobody cleaned: non-finite and zero durations, odd JSON types, blank
lines, unicode job type names, and the directory layout of a CloudWatch Logs export to S3.

Each test reproduces a defect found by running jobstats on logs written independently of this repo (issue 10):
it failed before the fix. Every profiles.json is read back with a strict JSON parser.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from jobstats.__main__ import main
from jobstats.plots import font_families
from sqslease.emf import EmfLogger

START_MS = 1_793_000_000_000  # 2026-10-26T07:33:20Z
DAY_MS = 86_400_000


def emf_lines(job_type: str, durations_ms: list[float], start_ms: int = START_MS) -> list[str]:
    """Lines as the real EmfLogger writes them, one second apart."""
    out = io.StringIO()
    for i, ms in enumerate(durations_ms):
        EmfLogger(out).record(
            job_type=job_type,
            queue=f"q-{job_type}",
            message_id=f"m{i}",
            processing_ms=ms,
            outcome="success",
            receive_count=1,
            extensions=0,
            lease_lost=False,
            timestamp_ms=start_ms + i * 1000,
        )
    return out.getvalue().splitlines()


def with_duration(line: str, json_value: str) -> str:
    """``line`` with its ProcessingTime replaced by the raw JSON text ``json_value`` (``NaN``, ``1e400``, ...)."""
    head, _, tail = line.partition('"ProcessingTime":')
    return head + '"ProcessingTime":' + json_value + tail[tail.index(",") :]


def strict_json(path: Path) -> dict[str, Any]:
    def reject(token: str) -> None:
        raise ValueError(f"{path} holds {token}, which is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=reject)


def run(tmp_path: Path, *inputs: str | Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    out = tmp_path / "profiles.json"
    assert main(["profile", *map(str, inputs), "--out", str(out), *extra]) == 0
    return strict_json(out)


DURATIONS = [100.0 + i % 400 for i in range(1_000)]
GOOD = emf_lines("Email", DURATIONS)


def test_nan_durations_are_malformed_lines_not_records(spark, tmp_path: Path) -> None:
    late = emf_lines("Email", [5.0, 6.0], start_ms=START_MS + 10 * DAY_MS)  # would move the window
    bad = [with_duration(late[0], "NaN"), with_duration(late[1], '"NaN"')]
    (tmp_path / "a.log").write_text("\n".join(GOOD + bad) + "\n")

    document = run(tmp_path, tmp_path / "a.log")
    email = document["deployments"]["Email"]
    assert email["count"] == 1_000 and email["mean_ms"] == sum(DURATIONS) / 1_000
    assert email["window"]["to"] == "2026-10-26T07:49:59.000Z"  # the last good line, 999 s after the first
    report = document["input_report"]
    assert report["malformed_lines"] == 2
    # Spark's JSON parser read these lines, so the sample shows what it read, with the MessageId to find them by.
    assert [json.loads(line, parse_constant=str)["ProcessingTime"] for line in report["malformed_sample"]] == [
        "NaN",
        "NaN",
    ]
    assert all('"MessageId":"m' in line for line in report["malformed_sample"])
    assert list(report["malformed_reasons"].values()) == [2]
    assert "not finite" in next(iter(report["malformed_reasons"]))


def test_infinite_durations_are_malformed_lines_not_a_crash(spark, tmp_path: Path) -> None:
    tokens = ["Infinity", "-Infinity", '"Infinity"', "1e400", "-1e400"]
    bad = [with_duration(GOOD[0], token) for token in tokens]
    (tmp_path / "a.log").write_text("\n".join(GOOD + bad) + "\n")

    document = run(tmp_path, tmp_path / "a.log")
    assert document["deployments"]["Email"]["count"] == 1_000
    assert document["deployments"]["Email"]["max_ms"] == 499.0
    assert document["input_report"]["malformed_lines"] == len(tokens)


def test_a_job_type_of_zero_ms_durations_gets_the_floor_vt_and_a_note(spark, tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("\n".join(GOOD + emf_lines("Noop", [0.0] * 1_000)) + "\n")

    noop = run(tmp_path, tmp_path / "a.log", extra=("--min-samples", "1000"))["deployments"]["Noop"]
    assert (noop["p50_ms"], noop["p99_ms"], noop["max_ms"], noop["mean_ms"]) == (0, 0, 0, 0)
    assert noop["recommended_processing_p99_s"] == 0.001 and noop["recommended_visibility_timeout_s"] == 10
    assert noop["refused"] is None and "p99 is 0 ms" in noop["note"]
    assert all(row["overrun_share"] == 0 for row in noop["what_if"])


def test_a_cloudwatch_logs_export_prefix_is_read_recursively(spark, tmp_path: Path) -> None:
    """The layout `aws logs create-export-task --destination-prefix exported` writes to S3."""
    prefix = tmp_path / "exported"
    prefix.mkdir()
    (prefix / "aws-logs-write-test").write_text("Permission Check Successful")
    streams = {
        "0f1e2d3c-task/2026/10/26/[$LATEST]0123abcd": GOOD[:400],  # a Lambda log stream
        "0f1e2d3c-task/ecs/worker/7a8b9c": GOOD[400:700],  # an ECS log stream
        "9a8b7c6d-task/2026/10/27/[$LATEST]4567ef01": GOOD[700:],
    }
    for stream, lines in streams.items():
        (prefix / stream).mkdir(parents=True)
        with gzip.open(prefix / stream / "000000.gz", "wt") as f:
            f.write("".join(f"2026-10-26T06:53:20.000Z {line}\n" for line in lines))

    document = run(tmp_path, f"{prefix}/")
    assert document["deployments"]["Email"]["count"] == 1_000
    report = document["input_report"]
    assert report["files"] == 3 and report["malformed_lines"] == 0 and report["files_without_records"] == []


def test_plots_of_unicode_and_clashing_names_are_distinct_and_stable(
    spark, tmp_path: Path, recwarn: pytest.WarningsRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    names = ["日本語 ジョブ", "Ωμέγα δ", "A B", "A/B", "Email", "email"]
    lines = [line for name in names for line in emf_lines(name, [10.0, 20.0, 30.0])]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")

    pngs = []
    for run_dir in ("first", "second"):
        document = run(tmp_path, tmp_path / "a.log", extra=("--plots", str(tmp_path / run_dir)))
        assert sorted(document["deployments"]) == sorted(names)
        pngs.append(sorted(p.name for p in (tmp_path / run_dir).glob("*.png")))
    assert len(pngs[0]) == len(names) and len({name.lower() for name in pngs[0]}) == len(names)
    assert pngs[0] == pngs[1]
    # Glyphs no installed font has: one log line per plot that names the job type, no warning per glyph.
    assert not [w for w in recwarn if "missing from font" in str(w.message)]
    cjk_font = any("CJK" in family or "Fallback" in family for family in font_families())
    logged = [r.getMessage() for r in caplog.records if "no installed font draws" in r.getMessage()]
    expected = "plot of '日本語 ジョブ': no installed font draws 6 of its characters"  # Greek is in DejaVu Sans
    assert [m.startswith(expected) for m in logged] == ([] if cjk_font else [True, True])  # one per run


def test_whitespace_only_lines_are_blank_lines_not_malformed_ones(spark, tmp_path: Path) -> None:
    """A tab-only line was malformed while an empty one was ignored: every whitespace-only line is blank."""
    (tmp_path / "a.log").write_text("\n".join([*GOOD, "\t", "  \t  ", "", " "]) + "\n")

    report = run(tmp_path, tmp_path / "a.log")["input_report"]
    assert (report["total_lines"], report["malformed_lines"]) == (1_000, 0)


def test_a_job_type_must_be_a_json_string(spark, tmp_path: Path) -> None:
    """A JobType that is a number or an object is a malformed line, as a ProcessingTime that is a string is
    (and as CloudWatch treats it: EMF dimension values are strings)."""
    numeric = GOOD[0].replace('"JobType":"Email"', '"JobType":7')
    obj = GOOD[1].replace('"JobType":"Email"', '"JobType":{"name":"Email"}')
    (tmp_path / "a.log").write_text("\n".join([*GOOD, numeric, obj]) + "\n")

    document = run(tmp_path, tmp_path / "a.log")
    assert list(document["deployments"]) == ["Email"]
    report = document["input_report"]
    assert (report["total_lines"], report["malformed_lines"]) == (1_002, 2)
    assert [json.loads(line)["JobType"] for line in report["malformed_sample"]] == [7, {"name": "Email"}]


def test_released_lines_are_not_runs_and_leave_the_statistics_alone(spark, tmp_path: Path) -> None:
    # GIVEN 1,000 runs and 300 lines of messages a drain or a FIFO failure released unstarted (0 ms, receive 2)
    out = io.StringIO()
    for i in range(300):
        EmfLogger(out).record(
            job_type="Email",
            queue="q-Email",
            message_id=f"r{i}",
            processing_ms=0,
            outcome="released",
            receive_count=2,
            extensions=0,
            lease_lost=False,
            timestamp_ms=START_MS + i * 1000,
        )
    (tmp_path / "a.log").write_text("\n".join(GOOD + out.getvalue().splitlines()) + "\n")
    # WHEN jobstats profiles them THEN only the runs count: no 0 ms pulls the percentiles down, no redelivery
    document = run(tmp_path, tmp_path / "a.log")
    email = document["deployments"]["Email"]
    assert document["input_report"]["total_lines"] == 1_300  # read, and counted as lines
    (tmp_path / "alone").mkdir()
    alone = run(tmp_path / "alone", _write(tmp_path / "alone.log", GOOD))["deployments"]["Email"]
    assert email["count"] == 1_000 and email["redelivery_rate"] == 0
    assert (email["p50_ms"], email["p99_ms"], email["mean_ms"]) == (alone["p50_ms"], alone["p99_ms"], alone["mean_ms"])


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path
