"""The rules that make an EMF line malformed, as data: Spark's path (:mod:`jobstats.parse`) and the cold path's
(:mod:`jobstats.partials`) both evaluate this table, so the two cannot disagree on a rule or a bound. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqslease.rules import SQS_MAX_RETENTION_S

#: Why a line is malformed; a row's ``reason`` is an index into this tuple (null for a record). The first that
#: applies is the line's reason.
MALFORMED_REASONS = (
    "not a JSON object of the EMF schema (unparseable, or a number field holding a string, object or array)",
    "JobType missing, empty, or not a JSON string",
    "ProcessingTime missing, negative, not finite (NaN, Infinity, 1e400) or above 1e9 ms",
    "_aws.Timestamp missing or outside years 1970-9999",
    "Outcome missing",
    "ReceiveCount below 1, or Extensions or LeaseLost negative",
    "QueueTime negative, not finite or above 14 days (the longest SQS keeps a message)",
)
#: Index of the reason a parser gives a line it cannot read as an object of the schema.
UNPARSEABLE = 0
#: Index of the reason for a job type that is missing, empty or not a JSON string.
NO_JOB_TYPE = 1

#: 11.6 days, far beyond any SQS lease (12 h). The bound keeps integer-microsecond sums exact and finite.
MAX_PROCESSING_MS = 1e9
MAX_TIMESTAMP_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
#: No message waits longer than the longest retention SQS allows.
MAX_QUEUE_MS = SQS_MAX_RETENTION_S * 1000


@dataclass(frozen=True)
class Bound:
    """A field of the EMF line (its path, e.g. ``_aws.Timestamp``) that makes the line malformed when it is null
    and ``required``, or, when ``low`` or ``high`` is set, not a number within ``[low, high]`` (NaN, infinities)."""

    field: str
    required: bool = False
    low: float | None = None
    high: float | None = None


#: Reason index -> the bounds any one of which makes a line malformed for that reason (the first two reasons
#: are the parser's and the job type's own checks).
BOUNDS: dict[int, tuple[Bound, ...]] = {
    2: (Bound("ProcessingTime", required=True, low=0, high=MAX_PROCESSING_MS),),
    3: (Bound("_aws.Timestamp", required=True, low=0, high=MAX_TIMESTAMP_MS),),
    4: (Bound("Outcome", required=True),),
    5: (Bound("ReceiveCount", low=1), Bound("Extensions", low=0), Bound("LeaseLost", low=0)),
    6: (Bound("QueueTime", low=0, high=MAX_QUEUE_MS),),
}
assert sorted(BOUNDS) == list(range(NO_JOB_TYPE + 1, len(MALFORMED_REASONS)))
