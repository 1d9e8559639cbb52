"""Spark's JSON reader's path: log lines -> validated records (the rules that make a line malformed: jobstats.rules).

Spark's JSON reader parses each line against :data:`jobstats.schema.EMF_SCHEMA` (its vectorized path is 5 to
10 times faster than ``from_json`` over ``read.text``). Lines it cannot parse keep their text in
``_corrupt_record``; only those with text before the first ``{`` (CloudWatch Logs exports to S3:
``2026-11-22T04:00:00.000Z {...}``) are parsed again from that brace with ``from_json``.

Blank lines (only whitespace: spaces, tabs, ``\\r``) yield no row: they are neither counted nor malformed.
Every other line is a record, or malformed for the first reason in :data:`jobstats.rules.MALFORMED_REASONS` that
applies (its rules: :data:`jobstats.rules.BOUNDS`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobstats.files import LogFile
from jobstats.rules import BOUNDS, MALFORMED_REASONS, NO_JOB_TYPE, UNPARSEABLE, Bound
from jobstats.schema import CORRUPT, EMF_SCHEMA, MESSAGE_ID
from sqslease.emf_text import GROUP_FIELD

__all__ = ["MALFORMED_REASONS", "malformed_lines", "read_json", "records"]

RECORD_COLUMNS = (
    "timestamp_ms",
    "stack",
    "job_type",
    "queue",
    "processing_ms",
    "queue_ms",
    "outcome",
    "receive_count",
    "extensions",
    "lease_lost",
)


def read_json(spark: SparkSession, files: Iterable[LogFile], schema: StructType = EMF_SCHEMA) -> DataFrame:
    """One row per non-blank line of ``files`` (plain or gzip): the ``schema`` columns and ``file``."""
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json([f.path for f in files])
        .withColumn("file", F.input_file_name())
    )


def records(raw: DataFrame) -> DataFrame:
    """:func:`read_json`'s rows -> ``file``, ``reason`` and :data:`RECORD_COLUMNS` (null when malformed), and
    ``message_id`` and ``group`` (the line's ``MessageId`` and ``MessageGroupId``) when ``raw`` was read with them
    (:data:`jobstats.tenants.TENANT_SCHEMA`)."""
    values = {
        "timestamp_ms": F.col("_aws.Timestamp"),
        "stack": F.when(F.col("Stack") != "", F.col("Stack")),  # null without one: the job type alone names it
        "job_type": F.col("job_type"),
        "queue": F.col("Queue"),
        "processing_ms": F.col("ProcessingTime"),
        "queue_ms": F.col("QueueTime"),  # null without one (lines of older sqslease, released messages)
        "outcome": F.col("Outcome"),
        "receive_count": F.coalesce(F.col("ReceiveCount"), F.lit(1)),
        "extensions": F.coalesce(F.col("Extensions"), F.lit(0)),
        "lease_lost": F.coalesce(F.col("LeaseLost"), F.lit(0)),
    }
    # Nulls for a malformed line, so no later expression ever sees its values (floor(Infinity) fails).
    ok = F.col("reason").isNull()
    if MESSAGE_ID in raw.columns:
        values["message_id"] = F.col(MESSAGE_ID)
    if GROUP_FIELD in raw.columns:
        values["group"] = F.col(GROUP_FIELD)
    return _checked(raw).select("file", "reason", *(F.when(ok, column).alias(name) for name, column in values.items()))


def malformed_lines(raw: DataFrame) -> DataFrame:
    """:func:`read_json`'s rows (read with :data:`SAMPLE_SCHEMA`) -> ``file``, ``reason`` and ``line`` of each
    malformed line: its text when Spark could not parse it, else the fields read, re-serialized (with the
    ``MessageId`` to find it by)."""
    fields = [f.name for f in raw.schema.fields if f.name not in ("file", CORRUPT)]
    line = F.coalesce("original", F.to_json(F.struct(*fields)))
    return _checked(raw).where(F.col("reason").isNotNull()).select("file", "reason", line.alias("line"))


def _checked(raw: DataFrame) -> DataFrame:
    """``raw``'s columns (parsed again from the first brace for a CloudWatch export line), ``original`` (the
    text of a line Spark could not parse), ``job_type`` (JobType when it is a JSON string) and ``reason``."""
    fields = [f.name for f in raw.schema.fields if f.name != "file"]
    corrupt = F.col(CORRUPT)
    from_brace = F.expr(f"substring({CORRUPT}, instr({CORRUPT}, '{{'))")
    schema = StructType([f for f in raw.schema.fields if f.name != "file"])
    # from_json runs only for lines with text before the brace; the others keep what Spark's reader parsed.
    reparsed = F.when(
        F.instr(corrupt, "{") > 1, F.from_json(from_brace, schema, {"columnNameOfCorruptRecord": CORRUPT})
    )
    with_reparsed = raw.select("file", *fields, corrupt.alias("original"), reparsed.alias("re"))
    again = F.col("re").isNotNull()
    chosen = with_reparsed.select(
        "file", "original", *(F.when(again, F.col("re")[name]).otherwise(F.col(name)).alias(name) for name in fields)
    )
    is_string = F.coalesce(F.expr("schema_of_variant(JobType) = 'STRING'"), F.lit(False))
    job_type = F.when(is_string, F.expr("variant_get(JobType, '$', 'string')"))
    return chosen.withColumn("job_type", job_type).withColumn("reason", _reason())


def _reason() -> Column:
    """The index of the first :data:`jobstats.rules.MALFORMED_REASONS` entry that applies, or null."""
    reason = F.when(F.col(CORRUPT).isNotNull(), UNPARSEABLE).when(
        F.col("job_type").isNull() | (F.col("job_type") == ""), NO_JOB_TYPE
    )
    for index, bounds in sorted(BOUNDS.items()):
        reason = reason.when(reduce(operator.or_, map(_violated, bounds)), index)
    return reason


def _violated(bound: Bound) -> Column:
    """True when ``bound`` is violated; null (no violation) for an optional field that is null."""
    column = F.col(bound.field)
    checks = [column.isNull()] if bound.required else []
    if bound.low is not None or bound.high is not None:
        checks.append(F.isnan(column))
    if bound.low is not None:
        checks.append(column < bound.low)
    if bound.high is not None:
        checks.append(column > bound.high)
    return reduce(operator.or_, checks)


@dataclass
class InputReport:
    """What was read: line counts, malformed lines by reason with a sample, files that yielded nothing, and files
    that repeat another's records (``copy -> file kept``: :func:`jobstats.duplicates.duplicate_files`)."""

    total_lines: int
    malformed_lines: int
    malformed_sample: list[str] = field(default_factory=list)
    files_without_records: list[str] = field(default_factory=list)
    files: int = 0
    malformed_reasons: dict[str, int] = field(default_factory=dict)
    duplicate_files: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "total_lines": self.total_lines,
            "malformed_lines": self.malformed_lines,
            "malformed_reasons": self.malformed_reasons,
            "malformed_sample": self.malformed_sample,
            "files": self.files,
            "files_without_records": self.files_without_records,
            "duplicate_files": self.duplicate_files,
        }
