"""The SparkSession: local by default, the cluster's own under spark-submit, tuned for one scan and a small
aggregate."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

#: Bounds of an input partition (bytes): not so small that per-task overhead shows, not so large that a core
#: waits on one straggler split.
MIN_PARTITION_BYTES = 32 * 2**20
MAX_PARTITION_BYTES = 1 * 2**30
PARTITIONS_PER_CORE = 2


def spark_session(master: str | None = None, app_name: str = "jobstats") -> SparkSession:
    """Get or create the session, with :func:`session_settings` for this process (its stderr a terminal or not).

    A local session's Python workers run this interpreter (``PYSPARK_PYTHON``, default ``sys.executable``), so
    that the cold path (:mod:`jobstats.scan`) finds the packages the driver has.
    """
    submitted = bool("spark.master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or os.environ.get("SPARK_ENV_LOADED"))
    builder = SparkSession.builder.appName(app_name)
    for key, value in session_settings(master, submitted, terminal=sys.stderr.isatty()).items():
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    elif not submitted:
        builder = builder.master("local[*]")
    if (master or "local").startswith("local") and not submitted:
        # Read by the JVM at its start (every address Spark picks for itself), not only by the driver's settings.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # PySpark starts its Python workers with PYSPARK_PYTHON (default python3), whatever spark.pyspark.python says.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return builder.getOrCreate()


def session_settings(master: str | None, submitted: bool, terminal: bool) -> dict[str, str]:
    """The settings :func:`spark_session` gives the session; changes nothing (reads ``SPARK_LOCAL_IP``,
    ``JOBSTATS_DRIVER_MEMORY`` and the number of cores).

    :param master: the ``--master`` given, or None (``local[*]``, or spark-submit's).
    :param submitted: run by ``spark-submit``, whose master and settings are kept.
    :param terminal: whether the process's stderr is a terminal. Spark's console progress bar
        (``spark.ui.showConsoleProgress``) shows only then: in a log file or a CI job's output its updates are
        hundreds of ``[Stage N:===>`` fragments.

    Locally, shuffle partitions are the number of cores (Spark's 200 is tuned for clusters; the partials shuffled
    are a few thousand rows) and adaptive query execution stays on to coalesce them further.
    ``JOBSTATS_DRIVER_MEMORY`` sets the local driver's memory (default 4g). A local driver listens on loopback
    (``127.0.0.1``, or ``SPARK_LOCAL_IP`` when set): Spark would otherwise pick the first non-loopback interface
    when the host name resolves to loopback, and talk to itself over it.
    """
    settings = {"spark.ui.showConsoleProgress": str(terminal).lower()}
    if (master or "local").startswith("local") and not submitted:
        loopback = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update(
            {
                "spark.sql.shuffle.partitions": str(os.cpu_count() or 2),
                "spark.sql.adaptive.enabled": "true",
                "spark.ui.enabled": "false",
                "spark.driver.memory": os.environ.get("JOBSTATS_DRIVER_MEMORY", "4g"),
                "spark.driver.bindAddress": loopback,
                "spark.driver.host": loopback,
            }
        )
    return settings


def size_input_partitions(spark: SparkSession, total_bytes: int) -> int:
    """Set Spark's input partition size to :func:`partition_bytes` for the session's cores; return it (bytes)."""
    size = partition_bytes(total_bytes, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(size))
    return size


def partition_bytes(total_bytes: int, cores: int) -> int:
    """The size of a split of the input (bytes): about :data:`PARTITIONS_PER_CORE` per core, within
    :data:`MIN_PARTITION_BYTES` and :data:`MAX_PARTITION_BYTES`. Pure.

    Measured on 1 GB over 2 cores against DuckDB in the same run, through Spark's reader: 4 partitions of 256 MB
    were 0.14x where Spark's default 128 MB gave 0.12x (docs/benchmarks.md). Gzip files are never split.
    """
    return min(max(total_bytes // (PARTITIONS_PER_CORE * cores), MIN_PARTITION_BYTES), MAX_PARTITION_BYTES)
