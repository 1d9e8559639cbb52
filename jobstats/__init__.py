"""jobstats: measure per-job-type processing times from sqslease's EMF log lines and recommend timeouts.

Runs on Spark through PySpark: a local SparkSession by default, unchanged under ``spark-submit`` on a
cluster. Never imports aws_cdk; the visibility-timeout rules come from ``sqslease.rules``.
"""
