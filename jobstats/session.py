"""The SparkSession: local by default, the cluster's own under spark-submit."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession


def spark_session(master: str | None = None, app_name: str = "jobstats") -> SparkSession:
    """Get or create the session.

    ``master`` wins when given; under ``spark-submit`` (which sets ``spark.master``) the cluster's master is
    kept; otherwise ``local[*]``. Shuffle partitions default to twice the cores for local runs (Spark's 200 is
    tuned for clusters and costs seconds here).
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
            builder.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", os.environ.get("JOBSTATS_DRIVER_MEMORY", "4g"))
        )
    return builder.config("spark.ui.showConsoleProgress", "true").getOrCreate()
