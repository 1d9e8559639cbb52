"""jobstats transformations as pure DataFrame -> DataFrame functions on small inline frames, and the pure
Python that folds their output."""

from __future__ import annotations

import json

from pyspark.sql.types import StringType, StructField, StructType

from jobstats.histogram import MAX_RELATIVE_ERROR, Summary, bucket_of, coarse_histogram
from jobstats.parse import parse_lines
from jobstats.recommend import recommend, what_if
from jobstats.stats import DAY_MS, file_counts, partial_aggregate, summarize

LINES = StructType([StructField("value", StringType()), StructField("file", StringType())])


def emf(
    job: str = "Email",
    ms: float = 100.0,
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


def test_parse_accepts_plain_and_cloudwatch_export_lines_and_flags_the_rest(spark) -> None:
    lines = spark.createDataFrame(
        [
            (emf(ms=12.5), "a"),
            ("2026-11-22T04:00:00.000Z " + emf(ms=7.0), "a"),  # CloudWatch Logs export prefix
            ("not json", "a"),
            ('{"JobType": "Email"}', "a"),  # parses, but required fields are missing
            (json.dumps({"_aws": {"Timestamp": 1}, "JobType": "E", "ProcessingTime": -1, "Outcome": "success"}), "a"),
            ("{}", "a"),
        ],
        LINES,
    )
    parsed = parse_lines(lines).collect()
    assert [row["malformed"] for row in parsed] == [False, False, True, True, True, True]
    assert [row["processing_ms"] for row in parsed[:2]] == [12.5, 7.0]
    assert parsed[0]["job_type"] == "Email" and parsed[0]["receive_count"] == 1 and parsed[0]["extensions"] == 2


def partials(spark, lines: list[tuple[str, str]]) -> list[dict]:  # type: ignore[no-untyped-def]
    return [r.asDict() for r in partial_aggregate(parse_lines(spark.createDataFrame(lines, LINES))).collect()]


def test_partials_count_lines_per_file_and_drop_blank_lines(spark) -> None:
    rows = partials(spark, [(emf(), "good.log"), ("garbage 1", "good.log"), ("garbage 2", "bad.log"), ("", "bad.log")])
    assert file_counts(rows) == {"good.log": (2, 1), "bad.log": (1, 1)}
    malformed = [r for r in rows if r["malformed"]]
    assert all(r["job_type"] is None and r["bucket"] is None for r in malformed)


def test_statistics_from_partials(spark) -> None:
    lines = [(emf(ms=float(i + 1), ts=i), "a") for i in range(96)]
    lines += [(emf(ms=20_000.0, outcome="failure", receives=2, extensions=1, ts=96), "a")]
    lines += [(emf(ms=50.0, outcome="dead_lettered", extensions=0, lost=1, ts=97), "b")]
    lines += [
        (emf(ms=60.0, receives=3, extensions=0, ts=98), "b"),
        (emf(ms=70.0, receives=2, extensions=0, ts=99), "b"),
    ]
    (summary,) = summarize(partials(spark, lines)).values()  # two files merge exactly
    assert summary.count == 100 and summary.failures == 2 and summary.redeliveries == 3
    assert summary.lease_lost == 1 and summary.extensions == 96 * 2 + 1
    assert (summary.first_ms, summary.last_ms, summary.max_ms) == (0, 99, 20_000.0)
    exact = {0.5: 50.0, 0.9: 87.0, 0.99: 96.0, 0.999: 20_000.0}  # ranks of the 100 values
    for p, value in exact.items():
        assert abs(summary.percentile(p) - value) / value <= MAX_RELATIVE_ERROR
    assert summary.overrun_count(0.0505) == 49 and summary.overrun_count(10) == 1 and summary.overrun_count(30) == 0
    assert summary.success_receive_count_percentile(0.99) == 3


def test_since_and_per_queue(spark) -> None:
    lines = [
        (emf(queue="q1", ts=0), "a"),
        (emf(queue="q2", ts=DAY_MS + 5), "a"),
        (emf(queue="q2", ts=2 * DAY_MS), "a"),
    ]
    rows = partials(spark, lines)
    assert summarize(rows)[("Email",)].queues == {"q1", "q2"}
    assert summarize(rows, since_day=1)[("Email",)].count == 2
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
                "sum_ms": ms,
                "min_ms": ms,
                "max_ms": ms,
                "first_ms": i,
                "last_ms": i,
                "bucket": bucket_of(ms),
                "success_receives": receives,
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
