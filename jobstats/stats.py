"""Per-deployment statistics: per-file partials (one Spark hash aggregation here; the cold path computes the same
rows with numpy, :mod:`jobstats.partials`), then pure Python.

The aggregation groups every line by file, day, malformed reason, stack, job type, queue and cell (log-duration
bucket, 500 per decade, x the receive count of a success), then rolls the cells up into one row per file,
day, reason, stack, job type and queue with a ``cells`` map: a few rows per file and day, not one per bucket, so
collecting them and reading them from the cache is cheap. Everything else comes from those rows:
percentiles (within 0.2305 % by construction), rates, what-if overruns, plot histograms, the per-queue
breakdown and the input report. Partials of different files (or days) merge exactly (integer sums, min,
max and count maps), which is what ``--cache`` and ``--since`` rely on.

``percentile_approx`` was the first implementation and was measured: at accuracy 100,000 its p99 error
was at most 0.014 % on lognormal data, but its per-row sketch insertion made it the costliest operator
after the JSON parsing (docs/benchmarks.md); the histogram replaced it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobstats.histogram import BUCKETS_PER_DECADE, MIN_MS, RECEIVE_COUNT_CAP, RECEIVES_PER_CELL, Summary
from jobstats.schema import FAILURE_OUTCOMES
from sqslease.emf import UNRUN_OUTCOMES

PERCENTILES = (0.5, 0.9, 0.99, 0.999)
DAY_MS = 86_400_000

#: Visibility timeouts (seconds) the what-if table evaluates.
CANDIDATE_VTS_S = (5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 3600, 7200, 14400, 28800, 43200)

PARTIAL_KEYS = ("file", "reason", "day", "stack", "job_type", "queue")


def partial_aggregate(records: DataFrame) -> DataFrame:
    """:func:`jobstats.parse.records` -> one row per :data:`PARTIAL_KEYS` with counts, sums, ``cells`` and
    ``queue_cells`` (queue-time bucket -> messages; empty for lines without a ``QueueTime``).

    A malformed line has null record columns: it only counts in its (file, reason) row. A ``released`` line
    (a message let go unstarted, 0 ms), like any of ``sqslease.emf.UNRUN_OUTCOMES`` (a ``duplicate`` too), is no
    run of the handler: it counts in ``released`` only, so it neither
    pulls the percentiles down nor counts as a message or a redelivery. (Masked here, not filtered out: a filter
    before the aggregation measured 22-53 % slower on 2M lines.) The processing-time cells and the queue-time
    buckets are two grouping sets of one aggregation, so the lines are read and parsed once.
    """
    keys = [*PARTIAL_KEYS[:2], "day", *PARTIAL_KEYS[3:]]
    ran, ms, queue_ms = F.col("ran"), F.col("ms"), F.col("queue_ms")
    by_cell = (
        _cell_columns(records)
        .groupingSets([[*keys, "cell"], [*keys, "queue_bucket"]], *keys, "cell", "queue_bucket")
        .agg(
            F.grouping("cell").alias("queued"),  # 1 in the queue-time set (its cell is grouped away)
            F.sum(ran.cast("long")).alias("count"),
            F.sum((~ran).cast("long")).alias("released"),
            F.sum(F.col("outcome").isin(*FAILURE_OUTCOMES).cast("long")).alias("failures"),
            F.sum(((F.col("receive_count") > 1) & ran).cast("long")).alias("redeliveries"),
            F.sum(F.when(ran, F.col("extensions"))).alias("extensions"),
            F.sum(F.when(ran, F.col("lease_lost"))).alias("lease_lost"),
            F.sum(F.rint(ms * 1000).cast("long")).alias("sum_us"),  # rint: round() goes through BigDecimal
            F.min(ms).alias("min_ms"),
            F.max(ms).alias("max_ms"),
            F.min("timestamp_ms").alias("first_ms"),
            F.max("timestamp_ms").alias("last_ms"),
            F.min(queue_ms).alias("queue_min_ms"),
            F.max(queue_ms).alias("queue_max_ms"),
        )
    )
    return _roll_up(by_cell)


def _cell_columns(records: DataFrame) -> DataFrame:
    """The keys, each line's ``cell`` and ``queue_bucket``, whether it ``ran``, and its values (null when not)."""
    ran = ran_column()
    ms = F.when(ran, F.col("processing_ms"))
    queue_ms = F.when(ran, F.col("queue_ms"))
    bucket = F.floor(F.log10(F.greatest(ms, F.lit(MIN_MS))) * BUCKETS_PER_DECADE)
    receives = F.when(F.col("outcome") == "success", F.least(F.col("receive_count"), F.lit(RECEIVE_COUNT_CAP)))
    # greatest() skips nulls: without the guard a malformed line would land in the lowest bucket.
    cell = F.when(ms.isNotNull(), bucket * RECEIVES_PER_CELL + F.coalesce(receives, F.lit(0))).cast("int")
    queue_bucket = F.when(
        queue_ms.isNotNull(), F.floor(F.log10(F.greatest(queue_ms, F.lit(MIN_MS))) * BUCKETS_PER_DECADE)
    )
    return records.select(
        *PARTIAL_KEYS[:2],
        day_column().alias("day"),
        *PARTIAL_KEYS[3:],
        cell.alias("cell"),
        queue_bucket.cast("int").alias("queue_bucket"),
        ran.alias("ran"),
        ms.alias("ms"),
        queue_ms.alias("queue_ms"),
        "outcome",
        "receive_count",
        "extensions",
        "lease_lost",
        "timestamp_ms",
    )


def ran_column() -> Column:
    """True for a record that is a run of the handler: its outcome is none of ``sqslease.emf.UNRUN_OUTCOMES``."""
    return ~F.coalesce(F.col("outcome"), F.lit("")).isin(*UNRUN_OUTCOMES)


def day_column() -> Column:
    """A record's day: whole days since the epoch (UTC) of its ``timestamp_ms``."""
    return F.floor(F.col("timestamp_ms") / DAY_MS).cast("int")


def _roll_up(by_cell: DataFrame) -> DataFrame:
    """The two grouping sets' rows -> one row per :data:`PARTIAL_KEYS` with the ``cells`` and ``queue_cells``
    maps."""
    # Each set sees every line: sums are taken from the cell set only; minimums and maximums agree in both.
    in_cells = F.col("queued") == 0
    return by_cell.groupBy(*PARTIAL_KEYS).agg(
        *(
            F.sum(F.when(in_cells, F.col(c))).alias(c)
            for c in ("count", "released", "failures", "redeliveries", "extensions", "lease_lost", "sum_us")
        ),
        F.min("min_ms").alias("min_ms"),
        F.max("max_ms").alias("max_ms"),
        F.min("first_ms").alias("first_ms"),
        F.max("last_ms").alias("last_ms"),
        F.map_from_entries(
            F.collect_list(F.when(in_cells & F.col("cell").isNotNull(), F.struct("cell", "count")))
        ).alias("cells"),
        F.min("queue_min_ms").alias("queue_min_ms"),
        F.max("queue_max_ms").alias("queue_max_ms"),
        F.map_from_entries(
            F.collect_list(F.when(~in_cells & F.col("queue_bucket").isNotNull(), F.struct("queue_bucket", "count")))
        ).alias("queue_cells"),
    )


#: What one profile measures: a deployment (the stack, null for lines without one, and the job type).
DEPLOYMENT_KEYS = ("stack", "job_type")


def summarize(
    rows: Iterable[Mapping], by: tuple[str, ...] = DEPLOYMENT_KEYS, since_day: int | None = None
) -> dict[tuple, Summary]:
    """Fold well-formed partial rows into one :class:`Summary` per key, optionally from ``since_day`` on."""
    summaries: dict[tuple, Summary] = {}
    for row in rows:
        if row["reason"] is not None or not row["count"] or (since_day is not None and row["day"] < since_day):
            continue  # malformed, only released lines (no run), or before since_day
        key = tuple(row[column] for column in by)
        summary = summaries.get(key)
        if summary is None:
            summary = summaries[key] = Summary()
        summary.add(row)
    return summaries


def file_counts(rows: Iterable[Mapping]) -> dict[str, tuple[int, int]]:
    """``file -> (lines, malformed lines)`` from partial rows (``released`` lines are lines too)."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        entry = counts.setdefault(row["file"], [0, 0])
        entry[0] += row["count"] + (row["released"] or 0)
        if row["reason"] is not None:
            entry[1] += row["count"]
    return {file: (lines, malformed) for file, (lines, malformed) in counts.items()}


def malformed_by_reason(rows: Iterable[Mapping]) -> Counter[int]:
    """Malformed lines per reason (an index into :data:`jobstats.parse.MALFORMED_REASONS`)."""
    counts: Counter[int] = Counter()
    for row in rows:
        if row["reason"] is not None:
            counts[row["reason"]] += row["count"]
    return counts
