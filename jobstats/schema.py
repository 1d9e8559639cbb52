"""The EMF line schema jobstats reads (written by ``sqslease.emf.EmfLogger``; see docs/sqslease.md)."""

from __future__ import annotations

from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    VariantType,
)

#: Spark's JSON reader puts here the text of a line it could not parse (else null).
CORRUPT = "_corrupt_record"

#: Only the fields jobstats uses: Spark's JSON reader skips the others (``CloudWatchMetrics``, ``MessageId``).
#: ``JobType`` is a VARIANT so its JSON type can be checked: read as a string, Spark would turn ``7`` or
#: ``{"a": 1}`` into the names ``"7"`` and ``'{"a":1}'``. A number field holding another JSON type (``"12.5"``)
#: makes the line corrupt.
EMF_SCHEMA = StructType(
    [
        StructField("_aws", StructType([StructField("Timestamp", LongType())])),
        StructField("JobType", VariantType()),
        StructField("Stack", StringType()),  # absent from lines of a consumer not told its stack: null
        StructField("Queue", StringType()),
        StructField("ProcessingTime", DoubleType()),
        StructField("QueueTime", DoubleType()),  # absent from lines of sqslease before it wrote one: null
        StructField("Outcome", StringType()),
        StructField("ReceiveCount", IntegerType()),
        StructField("Extensions", IntegerType()),
        StructField("LeaseLost", IntegerType()),
        StructField(CORRUPT, StringType()),
    ]
)

#: The field that names the message a line is a run of (sqslease writes it on every line).
MESSAGE_ID = "MessageId"

#: The malformed-line sample also reads :data:`MESSAGE_ID`, so a line that parsed can be found in the logs.
SAMPLE_SCHEMA = StructType([*EMF_SCHEMA.fields, StructField(MESSAGE_ID, StringType())])

#: Outcomes that count as failures of the handler.
FAILURE_OUTCOMES = ("failure", "dead_lettered", "timed_out")
