"""jobstats transformations as pure DataFrame -> DataFrame functions on small inline frames, and the pure
Python that folds their output."""

from __future__ import annotations

import json
from pathlib import Path

from jobstats.files import LogFile, list_files
from jobstats.histogram import MAX_RELATIVE_ERROR, RECEIVES_PER_CELL, Summary, bucket_of, coarse_histogram
from jobstats.parse import MALFORMED_REASONS, read_json, records
from jobstats.recommend import recommend, what_if
from jobstats.stats import DAY_MS, file_counts, malformed_by_reason, partial_aggregate, summarize


def emf(
    job: object = "Email",
    ms: object = 100.0,
    outcome: str = "success",
    receives: int = 1,
    ts: int = 1_000,
    queue: str | None = None,
    extensions: int = 2,
    lost: int = 0,
) -> str:
    return json.dumps(
        {
            "_aws": {"Timestamp": ts, "CloudWatchMetrics": []},
            "JobType": job,
            "Queue": queue or f"q-{job}",
            "ProcessingTime": ms,
            "Outcome": outcome,
            "ReceiveCount": receives,
            "Extensions": extensions,
            "LeaseLost": lost,
        }
    )


def write(directory: Path, files: dict[str, list[str]]) -> dict[str, LogFile]:
    directory.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (directory / name).write_text("".join(f"{line}\n" for line in lines))
    return {Path(uri).name: log for uri, log in _listed(directory).items()}


def _listed(directory: Path) -> dict[str, LogFile]:
    from pyspark.sql import SparkSession

    return list_files(SparkSession.getActiveSession(), [str(directory)])


def parsed(spark, tmp_path: Path, lines: list[str]) -> list[dict]:  # type: ignore[no-untyped-def]
    files = write(tmp_path / "parsed", {"a.log": lines})
    return [r.asDict() for r in records(read_json(spark, files.values())).collect()]


def partials(spark, tmp_path: Path, files: dict[str, list[str]]) -> list[dict]:  # type: ignore[no-untyped-def]
    logs = write(tmp_path / "partials", files)
    rows = [r.asDict() for r in partial_aggregate(records(read_json(spark, logs.values()))).collect()]
    names = {log.uri: name for name, log in logs.items()}
    return [{**row, "file": names[row["file"]]} for row in rows]


def test_parse_accepts_plain_and_cloudwatch_export_lines_and_flags_the_rest(spark, tmp_path: Path) -> None:
    rows = parsed(
        spark,
        tmp_path,
        [
            emf(ms=12.5),
            "2026-11-22T04:00:00.000Z " + emf(ms=7.0),  # CloudWatch Logs export prefix
            "not json",
            '{"JobType": "Email"}',  # parses, but required fields are missing
            json.dumps({"_aws": {"Timestamp": 1}, "JobType": "E", "ProcessingTime": -1, "Outcome": "success"}),
            "{}",
        ],
    )
    assert [row["reason"] for row in rows] == [None, None, 0, 2, 2, 1]
    assert [row["processing_ms"] for row in rows[:2]] == [12.5, 7.0]
    assert rows[0]["job_type"] == "Email" and rows[0]["receive_count"] == 1 and rows[0]["extensions"] == 2
    assert all(row["job_type"] is None and row["processing_ms"] is None for row in rows[2:])


def test_every_malformed_value_gets_its_reason_and_no_value(spark, tmp_path: Path) -> None:
    """Each line breaks one rule; its record columns are null, so nothing downstream ever sees the value."""
    good = emf(ms=5.0)
    cases = [
        (good.replace("5.0", "NaN"), 2),  # the bare tokens Spark's JSON reader accepts
        (good.replace("5.0", '"NaN"'), 2),
        (good.replace("5.0", "Infinity"), 2),
        (good.replace("5.0", "-Infinity"), 2),
        (good.replace("5.0", '"Infinity"'), 2),
        (good.replace("5.0", "1e400"), 2),
        (emf(ms=2e9), 2),
        (emf(ms="12.5"), 0),  # a number field holding a string
        (emf(job=7), 1),  # a JobType that is not a JSON string
        (emf(job={"a": 1}), 1),
        (emf(job=["Email"]), 1),
        (emf(job=True), 1),
        (emf(job=None), 1),
        (emf(job=""), 1),
        (emf(ts=-1), 3),
        (emf(ts=10**17), 3),
        (good.replace('"success"', "null"), 4),
        (emf(receives=0), 5),
        (emf(extensions=-1), 5),
        (emf(lost=-1), 5),
        ("2026-11-22T04:00:00.000Z " + emf(ms=float("nan")), 2),  # json.dumps writes NaN
        ("2026-11-22T04:00:00.000Z {broken", 0),
        ("[1, 2]", 0),
        (good, None),
        (emf(job="日本語 ジョブ", ms=0.0), None),
    ]
    rows = parsed(spark, tmp_path, [line for line, _ in cases])
    assert [row["reason"] for row in rows] == [reason for _, reason in cases]
    for row in rows:
        if row["reason"] is not None:
            assert {k for k, v in row.items() if v is not None} == {"file", "reason"}, row
    assert rows[-1]["job_type"] == "日本語 ジョブ" and rows[-1]["processing_ms"] == 0.0
    assert len(MALFORMED_REASONS) == 7


def test_whitespace_only_lines_are_blank_not_malformed(spark, tmp_path: Path) -> None:
    rows = parsed(spark, tmp_path, [emf(), "", "\t", "   ", " \t \r", emf()])
    assert [row["reason"] for row in rows] == [None, None]


def test_partials_count_lines_per_file_and_reasons(spark, tmp_path: Path) -> None:
    rows = partials(
        spark, tmp_path, {"good.log": [emf(), "garbage 1"], "bad.log": ["garbage 2", "", emf(ms=float("inf"))]}
    )
    assert file_counts(rows) == {"good.log": (2, 1), "bad.log": (2, 2)}
    assert malformed_by_reason(rows) == {0: 2, 2: 1}
    malformed = [r for r in rows if r["reason"] is not None]
    assert all(r["job_type"] is None and r["cells"] == {} and r["sum_us"] is None for r in malformed)


def test_statistics_from_partials(spark, tmp_path: Path) -> None:
    a = [emf(ms=float(i + 1), ts=i) for i in range(96)]
    a += [emf(ms=20_000.0, outcome="failure", receives=2, extensions=1, ts=96)]
    b = [emf(ms=50.0, outcome="dead_lettered", extensions=0, lost=1, ts=97)]
    b += [
        emf(ms=60.0, receives=3, extensions=0, ts=98),
        emf(ms=70.0, outcome="timed_out", receives=2, extensions=0, ts=99),
    ]
    (summary,) = summarize(partials(spark, tmp_path, {"a": a, "b": b})).values()  # two files merge exactly
    assert summary.count == 100 and summary.failures == 3 and summary.redeliveries == 3
    assert summary.lease_lost == 1 and summary.extensions == 96 * 2 + 1
    assert (summary.first_ms, summary.last_ms, summary.max_ms) == (0, 99, 20_000.0)
    assert summary.sum_us == (sum(range(1, 97)) + 20_000 + 50 + 60 + 70) * 1000
    exact = {0.5: 50.0, 0.9: 87.0, 0.99: 96.0, 0.999: 20_000.0}  # ranks of the 100 values
    for p, value in exact.items():
        assert abs(summary.percentile(p) - value) / value <= MAX_RELATIVE_ERROR
    assert summary.overrun_count(0.0505) == 49 and summary.overrun_count(10) == 1 and summary.overrun_count(30) == 0
    assert summary.success_receive_count_percentile(0.99) == 3
    assert summary.success_receives == {1: 96, 3: 1}  # a timed_out line is a failure, not a success


def test_since_and_per_queue(spark, tmp_path: Path) -> None:
    lines = [emf(queue="q1", ts=0), emf(queue="q2", ts=DAY_MS + 5), emf(queue="q2", ts=2 * DAY_MS)]
    rows = partials(spark, tmp_path, {"a": lines})
    assert summarize(rows)[(None, "Email")].queues == {"q1", "q2"}  # a line without a Stack: no stack
    assert summarize(rows, since_day=1)[(None, "Email")].count == 2
    by_queue = summarize(rows, ("job_type", "queue"))
    assert by_queue[("Email", "q1")].count == 1 and by_queue[("Email", "q2")].count == 2


def test_coarse_histogram_for_plots() -> None:
    histogram = {bucket_of(ms): 1 for ms in (1.0, 1.05, 10.0, 100.0)}
    assert coarse_histogram(histogram, bins_per_decade=10) == [(0, 2), (10, 1), (20, 1)]


def summary_of(values: list[float], receives: int = 2) -> Summary:
    summary = Summary()
    for i, ms in enumerate(values):
        summary.add(
            {
                "count": 1,
                "failures": 0,
                "redeliveries": 0,
                "extensions": 0,
                "lease_lost": 0,
                "sum_us": round(ms * 1000),
                "min_ms": ms,
                "max_ms": ms,
                "first_ms": i,
                "last_ms": i,
                "cells": {bucket_of(ms) * RECEIVES_PER_CELL + receives: 1},
                "queue": "q",
            }
        )
    return summary


def test_recommendation_uses_the_shared_rule_and_refuses_small_samples() -> None:
    values = [100.0] * 4900 + [240_000.0] * 100  # p99 = 100 ms... the 4,951st value: 240 s
    rec = recommend(summary_of(values))
    assert abs(rec["recommended_processing_p99_s"] - 240) / 240 <= MAX_RELATIVE_ERROR
    assert rec["recommended_visibility_timeout_s"] == 480
    assert rec["recommended_max_receive_count"] == 3 and rec["refused"] is None
    small = recommend(summary_of(values[:50]))
    assert small["recommended_visibility_timeout_s"] is None and "only 50 messages" in small["refused"]


def test_what_if_table() -> None:
    rows = what_if(summary_of([500.0] * 3 + [4000.0] * 7), (1, 10))
    assert rows == [
        {"visibility_timeout_s": 1, "overrun_share": 0.7, "expected_crash_retry_delay_s": 0.0},
        {"visibility_timeout_s": 10, "overrun_share": 0.0, "expected_crash_retry_delay_s": 8.525},
    ]


def test_a_job_that_takes_no_time_gets_the_floor_vt_and_a_note() -> None:
    rec = recommend(summary_of([0.0] * 1_000))
    assert rec["recommended_processing_p99_s"] == 0.001 and rec["recommended_visibility_timeout_s"] == 10
    assert rec["refused"] is None and "p99 is 0 ms" in rec["note"]
    assert "note" not in recommend(summary_of([1.0] * 1_000))


def test_a_local_session_binds_its_driver_to_loopback(spark) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a local session WHEN Spark would pick a non-loopback interface (a host name resolving to 127.0.x.x)
    # THEN the driver still listens and is reached on loopback: nothing of a local run leaves the machine.
    assert spark.conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert spark.conf.get("spark.driver.host") == "127.0.0.1"


def test_the_refusal_says_what_the_minimum_guarantees() -> None:
    # GIVEN too few messages WHEN the minimum is the default THEN it names the 10 observations above the p99 ...
    assert "at least 1000 are needed for a p99 resting on 10 or more observations" in str(
        recommend(summary_of([5.0] * 50))["refused"]
    )
    # ... and a minimum of 5 (--min-samples 5) promises none: it says which option set it.
    assert recommend(summary_of([5.0] * 4), min_samples=5)["refused"] == (
        "only 4 messages (at least 5 are needed (--min-samples)): collect more logs or widen --since"
    )


def test_lines_of_unrun_messages_duplicates_included_stay_out_of_the_runs(spark, tmp_path: Path) -> None:
    # GIVEN 10 runs and, for each outcome of a message whose handler did not run, a 0 ms line of a redelivery
    from sqslease.emf import UNRUN_OUTCOMES

    assert "duplicate" in UNRUN_OUTCOMES and "in_progress_elsewhere" in UNRUN_OUTCOMES
    runs = [emf(ms=float(100 + i), ts=i) for i in range(10)]
    unrun = [emf(ms=0.0, outcome=outcome, receives=2, extensions=0, ts=20) for outcome in UNRUN_OUTCOMES]
    # WHEN they are aggregated
    (row,) = partials(spark, tmp_path, {"a.log": runs + unrun})
    (summary,) = summarize([row]).values()
    # THEN only the runs count and time: the unrun lines count as released lines only
    assert (row["count"], row["released"], row["redeliveries"]) == (10, len(UNRUN_OUTCOMES), 0)
    assert summary.count == 10 and summary.sum_us == sum(range(100, 110)) * 1000
    assert file_counts([row]) == {"a.log": (10 + len(UNRUN_OUTCOMES), 0)}
