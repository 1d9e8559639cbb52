"""Reported percentiles vs exact quantiles on data with known distributions (bound: 0.2305 %, goal: 0.5 %)."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from jobstats.histogram import MAX_RELATIVE_ERROR, bucket_of, percentile
from jobstats.stats import PERCENTILES, partial_aggregate, summarize

PARSED = StructType([StructField("file", StringType()), StructField("processing_ms", DoubleType())])


def test_the_bound_holds_for_any_data_in_pure_python() -> None:
    rng = np.random.default_rng(3)
    for values in (
        rng.lognormal(5, 2, 50_000),
        rng.uniform(0.5, 9e6, 20_000),
        rng.exponential(30, 7),
        np.array([42.0]),
    ):
        histogram: dict[int, int] = {}
        for v in values:
            histogram[bucket_of(v)] = histogram.get(bucket_of(v), 0) + 1
        for p in PERCENTILES:
            exact = float(np.quantile(values, p, method="inverted_cdf"))
            reported = percentile(histogram, p, len(values), float(values.min()), float(values.max()))
            assert abs(reported - exact) / exact <= MAX_RELATIVE_ERROR
    assert f"{MAX_RELATIVE_ERROR:.4%}" == "0.2305%"  # 10^(0.5/500) - 1: what docs/jobstats.md states


@pytest.mark.parametrize(("median_ms", "sigma"), [(400, 0.6), (90_000, 0.5), (300_000, 1.2)])
def test_p99_error_through_spark_stays_under_half_a_percent(spark, median_ms: float, sigma: float) -> None:
    from pyspark.sql import functions as F

    values = np.random.default_rng(11).lognormal(np.log(median_ms), sigma, size=200_000)
    parsed = (
        spark.createDataFrame([("f", float(v)) for v in values], PARSED)
        .withColumn("reason", F.lit(None).cast("int"))
        .withColumn("timestamp_ms", F.lit(0).cast("long"))
        .withColumn("stack", F.lit(None).cast("string"))
        .withColumn("job_type", F.lit("J"))
        .withColumn("queue", F.lit("q"))
        .withColumn("outcome", F.lit("success"))
        .withColumn("receive_count", F.lit(1))
        .withColumn("extensions", F.lit(0))
        .withColumn("lease_lost", F.lit(0))
        .withColumn("queue_ms", F.col("processing_ms") * 3)  # queue times through the same histogram
    )
    (summary,) = summarize(r.asDict() for r in partial_aggregate(parsed).collect()).values()
    exact = np.quantile(values, PERCENTILES, method="inverted_cdf")
    errors = [abs(summary.percentile(p) - e) / e for p, e in zip(PERCENTILES, exact, strict=True)]
    assert errors[2] <= 0.005 and max(errors) <= MAX_RELATIVE_ERROR, errors
    queue_errors = [abs(summary.queue_percentile(p) - 3 * e) / (3 * e) for p, e in zip(PERCENTILES, exact, strict=True)]
    assert max(queue_errors) <= MAX_RELATIVE_ERROR, queue_errors
