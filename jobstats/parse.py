"""Log lines -> records: pure ``DataFrame -> DataFrame`` transformations, plus the malformed-line report.

Accepted lines: the JSON object alone (stdout / CloudWatch Logs Insights exports), or prefixed by a
timestamp and other text before the ``{`` (CloudWatch Logs exports to S3: ``2026-11-22T04:00:00.000Z {...}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobstats.schema import EMF_SCHEMA


def read_lines(spark: SparkSession, inputs: list[str]) -> DataFrame:
    """Text lines of every input (files, directories, globs; gzip and s3:// or s3a:// paths work as Spark reads
    them), with the file each line came from."""
    return spark.read.text(inputs).withColumn("file", F.input_file_name())


def parse_lines(lines: DataFrame) -> DataFrame:
    """``value`` (and optional ``file``) -> one row per line with the record columns and ``malformed``.

    A line is malformed when it holds no JSON object, the JSON does not parse, or a required field
    (timestamp, job type, processing time, outcome) is missing or negative.
    """
    json_text = F.expr("substring(value, instr(value, '{'))")
    parsed = F.from_json(json_text, EMF_SCHEMA, {"mode": "PERMISSIVE"})
    out = lines.select(
        *(["file"] if "file" in lines.columns else []),
        F.col("value"),
        parsed.alias("r"),
    ).select(
        *(["file"] if "file" in lines.columns else []),
        "value",
        F.col("r._aws.Timestamp").alias("timestamp_ms"),
        F.col("r.JobType").alias("job_type"),
        F.col("r.Queue").alias("queue"),
        F.col("r.ProcessingTime").alias("processing_ms"),
        F.col("r.Outcome").alias("outcome"),
        F.coalesce(F.col("r.ReceiveCount"), F.lit(1)).alias("receive_count"),
        F.coalesce(F.col("r.Extensions"), F.lit(0)).alias("extensions"),
        F.coalesce(F.col("r.LeaseLost"), F.lit(0)).alias("lease_lost"),
    )
    return out.withColumn("malformed", _malformed())


def _malformed() -> Column:
    return (
        F.col("timestamp_ms").isNull()
        | F.col("job_type").isNull()
        | (F.col("job_type") == "")
        | F.col("processing_ms").isNull()
        | (F.col("processing_ms") < 0)
        | F.col("outcome").isNull()
    )


@dataclass
class InputReport:
    """What was read: line counts, malformed lines with a sample, and files that yielded nothing."""

    total_lines: int
    malformed_lines: int
    malformed_sample: list[str] = field(default_factory=list)
    files_without_records: list[str] = field(default_factory=list)
    files: int = 0

    def as_dict(self) -> dict:
        return {
            "total_lines": self.total_lines,
            "malformed_lines": self.malformed_lines,
            "malformed_sample": self.malformed_sample,
            "files": self.files,
            "files_without_records": self.files_without_records,
        }
