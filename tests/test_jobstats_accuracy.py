"""percentile_approx at jobstats' accuracy vs exact quantiles on data with known distribution."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from jobstats.stats import DEFAULT_ACCURACY, PERCENTILES, aggregate

SCHEMA = StructType(
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


@pytest.mark.parametrize(("median_ms", "sigma"), [(400, 0.6), (90_000, 0.5), (300_000, 1.2)])
def test_p99_error_stays_under_half_a_percent(spark, median_ms: float, sigma: float) -> None:
    rng = np.random.default_rng(11)
    values = rng.lognormal(np.log(median_ms), sigma, size=200_000)
    df = spark.createDataFrame([(i, "J", "q", float(v), "success", 1, 0, 0) for i, v in enumerate(values)], SCHEMA)
    (row,) = aggregate(df, accuracy=DEFAULT_ACCURACY).collect()
    # Spark's definition: the smallest value with at least p of the values at or below it.
    exact = np.quantile(values, PERCENTILES, method="inverted_cdf")
    errors = [abs(a - e) / e for a, e in zip(row["percentiles_ms"], exact, strict=True)]
    assert errors[2] <= 0.005, errors  # p99, the number the stacks use
    assert max(errors) <= 0.005, errors
