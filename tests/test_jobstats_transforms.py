"""jobstats transformations as pure DataFrame -> DataFrame functions on small inline frames."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import Row
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from jobstats.parse import input_report, parse_lines, valid_records
from jobstats.recommend import recommend, what_if
from jobstats.stats import aggregate, duration_histogram, overrun_column

LINES = StructType([StructField("value", StringType()), StructField("file", StringType())])
RECORDS = StructType(
    [
        StructField("timestamp_ms", LongType()),
        StructField("job_type", StringType()),
        StructField("queue", StringType()),
        StructField("processing_ms", DoubleType()),
        StructField("outcome", StringType()),
        StructField("receive_count", IntegerType()),
        StructField("extensions", IntegerType()),
        StructField("lease_lost", IntegerType()),
    ]
)


def emf(job: str = "Email", ms: float = 100.0, outcome: str = "success", receives: int = 1, ts: int = 1_000) -> str:
    return json.dumps(
        {
            "_aws": {"Timestamp": ts, "CloudWatchMetrics": []},
            "JobType": job,
            "Queue": f"q-{job}",
            "ProcessingTime": ms,
            "Outcome": outcome,
            "ReceiveCount": receives,
            "Extensions": 2,
            "LeaseLost": 0,
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
        ],
        LINES,
    )
    parsed = parse_lines(lines).collect()
    assert [row["malformed"] for row in parsed] == [False, False, True, True, True]
    assert [row["processing_ms"] for row in parsed[:2]] == [12.5, 7.0]
    assert parsed[0]["job_type"] == "Email" and parsed[0]["receive_count"] == 1 and parsed[0]["extensions"] == 2


def test_valid_records_filters_malformed_and_since(spark) -> None:
    lines = spark.createDataFrame([(emf(ts=1_000), "a"), (emf(ts=5_000), "a"), ("junk", "a")], LINES)
    parsed = parse_lines(lines)
    assert valid_records(parsed).count() == 2
    (row,) = valid_records(parsed, since_ms=2_000).collect()
    assert row["timestamp_ms"] == 5_000 and set(row.asDict()) == set(RECORDS.fieldNames())


def test_input_report_counts_samples_and_names_files_without_records(spark) -> None:
    lines = spark.createDataFrame(
        [(emf(), "good.log"), ("garbage 1", "good.log"), ("garbage 2", "bad.log"), ("", "bad.log")], LINES
    )
    report = input_report(parse_lines(lines))
    assert (report.total_lines, report.malformed_lines, report.files) == (3, 2, 2)  # blank lines are not counted
    assert sorted(report.malformed_sample) == ["garbage 1", "garbage 2"]
    assert report.files_without_records == ["bad.log"]


def records(spark, rows: list[tuple]):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(rows, RECORDS)


def test_aggregate_counts_rates_percentiles_and_overruns(spark) -> None:
    rows = [(i, "Email", "q", float(i + 1), "success", 1, 0, 0) for i in range(96)]
    rows += [(96, "Email", "q", 20_000.0, "failure", 2, 1, 0), (97, "Email", "q", 50.0, "dead_lettered", 1, 0, 1)]
    rows += [(98, "Email", "q", 60.0, "success", 3, 0, 0), (99, "Email", "q", 70.0, "success", 2, 0, 0)]
    (stats,) = [r.asDict() for r in aggregate(records(spark, rows), candidate_vts_s=(0.05, 10, 30)).collect()]
    assert stats["count"] == 100 and stats["failures"] == 2 and stats["redeliveries"] == 3
    assert stats["lease_lost"] == 1 and stats["extensions"] == 1
    p50, p90, p99, p999 = stats["percentiles_ms"]
    assert p50 == 50.0 and p90 == 87.0 and p99 == 96.0 and p999 == 20_000.0  # exact ranks of 100 values
    assert stats["max_ms"] == 20_000.0 and (stats["first_ms"], stats["last_ms"]) == (0, 99)
    assert stats[overrun_column(0.05)] == 49 and stats[overrun_column(10)] == 1 and stats[overrun_column(30)] == 0
    assert stats["success_receive_count_p99"] == 3


def test_aggregate_per_queue(spark) -> None:
    rows = [(1, "Email", "q1", 1.0, "success", 1, 0, 0), (2, "Email", "q2", 2.0, "success", 1, 0, 0)]
    df = records(spark, rows)
    (by_job,) = aggregate(df).collect()
    assert by_job["queues"] == 2
    assert sorted(r["queue"] for r in aggregate(df, ("job_type", "queue")).collect()) == ["q1", "q2"]


def test_histogram_bins_are_log_spaced(spark) -> None:
    rows = [(1, "E", "q", ms, "success", 1, 0, 0) for ms in (1.0, 1.05, 10.0, 100.0)]
    bins = {(r["bin"], r["count"]) for r in duration_histogram(records(spark, rows), bins_per_decade=10).collect()}
    assert bins == {(0, 2), (10, 1), (20, 1)}


def test_recommendation_uses_the_shared_rule_and_refuses_small_samples() -> None:
    stats = {"count": 5000, "percentiles_ms": [100.0, 1000.0, 240_000.0, 300_000.0], "success_receive_count_p99": 2}
    rec = recommend(stats)
    assert rec["recommended_processing_p99_s"] == 240 and rec["recommended_visibility_timeout_s"] == 480
    assert rec["recommended_max_receive_count"] == 3 and rec["refused"] is None
    small = recommend({**stats, "count": 50})
    assert small["recommended_visibility_timeout_s"] is None and "only 50 messages" in small["refused"]
    rows = what_if({"count": 10, "mean_ms": 4000.0}, (1, 10), {1: 7, 10: 0})
    assert rows == [
        {"visibility_timeout_s": 1, "overrun_share": 0.7, "expected_crash_retry_delay_s": 0.0},
        {"visibility_timeout_s": 10, "overrun_share": 0.0, "expected_crash_retry_delay_s": 8.0},
    ]


@pytest.mark.parametrize("row", [Row(value="{}", file="x")])
def test_an_empty_object_is_malformed(spark, row: Row) -> None:
    assert parse_lines(spark.createDataFrame([row], LINES)).first()["malformed"]
