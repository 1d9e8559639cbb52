"""The EMF line schema jobstats reads (written by ``sqslease.emf.EmfLogger``; see the README)."""

from __future__ import annotations

from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

EMF_SCHEMA = StructType(
    [
        StructField("_aws", StructType([StructField("Timestamp", LongType())])),
        StructField("JobType", StringType()),
        StructField("Queue", StringType()),
        StructField("ProcessingTime", DoubleType()),
        StructField("Outcome", StringType()),
        StructField("ReceiveCount", IntegerType()),
        StructField("Extensions", IntegerType()),
        StructField("LeaseLost", IntegerType()),
    ]
)

#: Outcomes that count as failures of the handler.
FAILURE_OUTCOMES = ("failure", "dead_lettered")
