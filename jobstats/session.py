"""The SparkSession: local by default, the cluster's own under spark-submit, tuned for one scan and a small
aggregate."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

#: Bounds of an input partition (bytes): not so small that per-task overhead shows, not so large that a core
#: waits on one straggler split.
MIN_PARTITION_BYTES = 32 * 2**20
MAX_PARTITION_BYTES = 1 * 2**30
PARTITIONS_PER_CORE = 2


def spark_session(master: str | None = None, app_name: str = "jobstats") -> SparkSession:
    """Get or create the session.

    ``master`` wins when given; under ``spark-submit`` (which sets ``spark.master``) the cluster's master and
    settings are kept; otherwise ``local[*]``. Locally, shuffle partitions are the number of cores (Spark's 200
    is tuned for clusters; the partials shuffled are a few thousand rows) and adaptive query execution stays on
    to coalesce them further. ``JOBSTATS_DRIVER_MEMORY`` sets the local driver's memory (default 4g). A local
    driver listens on loopback (``127.0.0.1``, or ``SPARK_LOCAL_IP`` when set): Spark would otherwise pick the
    first non-loopback interface when the host name resolves to loopback, and talk to itself over it.
    """
    builder = SparkSession.builder.appName(app_name)
    submitted = "spark.master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or os.environ.get("SPARK_ENV_LOADED")
    if master:
        builder = builder.master(master)
    elif not submitted:
        builder = builder.master("local[*]")
    local = (master or "local").startswith("local") and not submitted
    if local:
        builder = (
            builder.config("spark.sql.shuffle.partitions", str(os.cpu_count() or 2))
            .config("spark.sql.adaptive.enabled", "true")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", os.environ.get("JOBSTATS_DRIVER_MEMORY", "4g"))
        )
        # Read by the JVM at its start (every address Spark picks for itself), not only by the driver's settings.
        loopback = os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", loopback).config("spark.driver.host", loopback)
    return builder.config("spark.ui.showConsoleProgress", "true").getOrCreate()


def size_input_partitions(spark: SparkSession, total_bytes: int) -> int:
    """Split the input into about :data:`PARTITIONS_PER_CORE` partitions per core of the session (within
    :data:`MIN_PARTITION_BYTES` and :data:`MAX_PARTITION_BYTES`); return the partition size set, in bytes.

    Measured on 1 GB over 2 cores against DuckDB in the same run: 4 partitions of 256 MB were 0.14x where
    Spark's default 128 MB gave 0.12x (docs/benchmarks.md). Gzip files are never split, whatever the size.
    """
    cores = spark.sparkContext.defaultParallelism
    size = min(max(total_bytes // (PARTITIONS_PER_CORE * cores), MIN_PARTITION_BYTES), MAX_PARTITION_BYTES)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(size))
    return size
