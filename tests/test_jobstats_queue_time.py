"""jobstats measures ``QueueTime`` (sent to started) per job type beside the processing time, on the session's
local Spark: p50/p99 in its output and as optional ``profiles.json`` fields that readers without them ignore."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import random
from pathlib import Path

import pytest
from cdk_helpers import new_stack

from jobqueues import JobQueue, MeasuredProfiles
from jobqueues.ops.profiles import load_profiles
from jobstats.__main__ import main as jobstats_main
from jobstats.files import list_files
from jobstats.histogram import MAX_RELATIVE_ERROR
from jobstats.parse import MALFORMED_REASONS, read_json, records
from jobstats.stats import partial_aggregate, summarize
from sqslease.emf import EmfLogger

STARTED = int(dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp() * 1000)
NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def line(ms: float = 10.0, queued: object = None, outcome: str = "success", job: str = "Email") -> str:
    """An EMF line as sqslease writes it; ``queued`` is its ``QueueTime`` (left out when ``None``)."""
    record: dict[str, object] = {
        "_aws": {"Timestamp": STARTED, "CloudWatchMetrics": []},
        "JobType": job,
        "Queue": f"q-{job}",
        "ProcessingTime": ms,
        "Outcome": outcome,
        "ReceiveCount": 1,
        "Extensions": 0,
        "LeaseLost": 0,
    }
    if queued is not None:
        record["QueueTime"] = queued
    return json.dumps(record)


def rows_of(spark, directory: Path, lines: list[str]) -> list[dict]:  # type: ignore[no-untyped-def]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "a.log").write_text("".join(f"{text}\n" for text in lines))
    files = list_files(spark, [str(directory)])
    return [r.asDict() for r in partial_aggregate(records(read_json(spark, files.values()))).collect()]


def test_a_bad_queue_time_makes_the_line_malformed_and_an_absent_one_does_not(spark, tmp_path: Path) -> None:
    # GIVEN lines with a QueueTime, without one (older sqslease), and with impossible ones
    lines = [line(queued=1500.5), line(), line(queued=-1), line(queued=float("nan")), line(queued=15 * 86_400_000)]
    (directory := tmp_path / "logs").mkdir()
    (directory / "a.log").write_text("".join(f"{text}\n" for text in lines))
    parsed = [r.asDict() for r in records(read_json(spark, list_files(spark, [str(directory)]).values())).collect()]
    # THEN the first two are records (the second with no queue time); the rest are malformed (the 7th reason)
    assert [(r["reason"], r["queue_ms"]) for r in parsed] == [(None, 1500.5), (None, None)] + [(6, None)] * 3
    assert MALFORMED_REASONS[6].startswith("QueueTime negative, not finite or above 14 days")


def test_queue_time_percentiles_come_beside_unchanged_processing_statistics(spark, tmp_path: Path) -> None:
    # GIVEN 100 runs queued 1..100 s, 50 runs of older consumers without a QueueTime, and released lines
    timed = [line(ms=float(i % 7 + 1), queued=1000.0 * (i + 1)) for i in range(100)]
    untimed = [line(ms=float(i % 7 + 1)) for i in range(50)]
    released = [line(ms=0.0, outcome="released") for _ in range(5)]
    # WHEN jobstats aggregates them, and the same lines stripped of their QueueTime
    (summary,) = summarize(rows_of(spark, tmp_path / "with", timed + untimed + released)).values()
    stripped = [line(ms=float(i % 7 + 1)) for i in range(100)]
    (plain,) = summarize(rows_of(spark, tmp_path / "without", stripped + untimed + released)).values()
    # THEN the queue-time percentiles are those of the 100 timed runs (within the histogram's bound)
    assert summary.queue_count == 100
    for p, exact in ((0.5, 50_000.0), (0.99, 99_000.0)):
        measured = summary.queue_percentile(p)
        assert measured is not None and abs(measured - exact) / exact <= MAX_RELATIVE_ERROR
    assert (summary.queue_min_ms, summary.queue_max_ms) == (1000.0, 100_000.0)
    # AND the processing statistics are exactly what they are without queue times (nothing counted twice)
    assert (summary.count, summary.sum_us, summary.histogram) == (plain.count, plain.sum_us, plain.histogram)
    assert summary.count == 150 and plain.queue_percentile(0.99) is None


def test_profiles_json_and_the_summary_line_carry_the_queue_time_p50_and_p99(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN lines an sqslease consumer wrote (Email, with queue times) and lines of an older one (Resize: none)
    lines, rng = io.StringIO(), random.Random(3)
    emf = EmfLogger(lines)
    queued = []
    for i in range(1200):
        queued.append(rng.uniform(200, 30_000))
        common = {"outcome": "success", "receive_count": 1, "extensions": 0, "lease_lost": False}
        emf.record(
            job_type="Email", queue="q", message_id=f"e{i}", processing_ms=rng.uniform(5, 50),
            timestamp_ms=STARTED + i, queue_ms=queued[-1], **common,
        )  # fmt: skip
        emf.record(
            job_type="Resize", queue="r", message_id=f"r{i}", processing_ms=rng.uniform(5, 50),
            timestamp_ms=STARTED + i, **common,
        )  # fmt: skip
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text(lines.getvalue())
    args = ["profile", str(tmp_path / "logs"), "--cache", str(tmp_path / "cache")]
    # WHEN jobstats profiles them, then again from its cache
    caplog.set_level(logging.INFO, logger="jobstats")
    assert jobstats_main([*args, "--out", str(tmp_path / "a.json")]) == 0
    assert jobstats_main([*args, "--out", str(tmp_path / "b.json")]) == 0
    assert "read 0 of 1 files (1 from the cache)" in caplog.text
    # THEN Email's entry has the queue-time p50 and p99 (within the bound of the exact ones), Resize's none
    first, second = (json.loads((tmp_path / name).read_text())["deployments"] for name in ("a.json", "b.json"))
    assert first == second
    ranked = sorted(queued)
    for field, rank in (("queue_time_p50_ms", 600), ("queue_time_p99_ms", 1188)):
        exact = round(ranked[rank - 1], 3)
        assert abs(first["Email"][field] - exact) / exact <= MAX_RELATIVE_ERROR + 1e-6
    assert "queue_time_p50_ms" not in first["Resize"] and "queue_time_p99_ms" not in first["Resize"]
    # AND the summary line shows them
    out = capsys.readouterr().out
    email, p50, p99 = (
        next(text for text in out.splitlines() if text.startswith("Email:")),
        first["Email"]["queue_time_p50_ms"],
        first["Email"]["queue_time_p99_ms"],
    )
    assert f"queued p50 {p50:.0f} ms, p99 {p99:.0f} ms" in email
    assert "queued" not in next(text for text in out.splitlines() if text.startswith("Resize:"))
    # AND the readers of profiles.json (stack code, `jobqueues drift`) take the document as before
    profiles = MeasuredProfiles.load(tmp_path / "a.json", now=NOW)
    assert JobQueue(new_stack(), "Email", processing_p99=profiles.processing_p99(new_stack(), "Email"))
    assert set(load_profiles(tmp_path / "a.json")) == {"Email", "Resize"}
