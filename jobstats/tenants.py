"""``tenants``: per tenant of each deployment, its messages and runs, p50/p99 processing and queue time, and
which tenants are noisy (:mod:`jobstats.noisy`).

A tenant is the message group an EMF line names (``MessageGroupId``: sqslease writes the group of every message
that has one, the tenant on a fair queue). The statistics are the profile's own
(:func:`jobstats.stats.partial_aggregate` and :class:`jobstats.histogram.Summary`): the same runs counted, the same
failures, percentiles within 0.2305 %. Its messages are distinct ``MessageId`` values, counted over all the files
at once (:func:`distinct_messages`): a distinct count does not add up across per-file partials, and a message
redelivered to another consumer has its runs in two files. A poison message run 5 times is one message, 5 runs.
It is a pass of its own over the lines, run on demand (``python -m jobstats tenants``), so that ``profile`` and its
cache cost the same with tenants or without.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from jobstats.files import InputError, list_files
from jobstats.histogram import Summary
from jobstats.noisy import MIN_NOISY_QUEUE_MS, NOISY_FACTOR, TenantFigures, noisy_tenants
from jobstats.parse import read_json, records
from jobstats.schema import EMF_SCHEMA, MESSAGE_ID
from jobstats.session import size_input_partitions
from jobstats.stats import DEPLOYMENT_KEYS, day_column, partial_aggregate, ran_column, summarize
from sqslease.emf import deployment_name
from sqslease.emf_text import GROUP_FIELD

#: The profile's schema, the line's message and its group.
TENANT_SCHEMA = StructType(
    [*EMF_SCHEMA.fields, StructField(MESSAGE_ID, StringType()), StructField(GROUP_FIELD, StringType())]
)
#: A tenant of a deployment: (stack, job type, group); the stack and the group may be null.
TenantKey = tuple[str | None, str, str | None]


def tenant_partials(lines: DataFrame) -> DataFrame:
    """:func:`jobstats.parse.records` of lines read with :data:`TENANT_SCHEMA` -> the profile's partial rows, one
    per file, day, stack, job type and group, the group in the ``queue`` column: one rule for what counts as a
    run, a failure and a percentile, whether per queue or per tenant. A line without a group has a null one."""
    return partial_aggregate(lines.withColumn("queue", F.col("group")))


def distinct_messages(lines: DataFrame) -> DataFrame:
    """:func:`jobstats.parse.records` of lines read with :data:`TENANT_SCHEMA` -> rows ``stack``, ``job_type``,
    ``group``, ``day`` and ``messages``: the distinct messages of each tenant whose last run was on that day.
    Over all the files at once, so that a message whose runs are in two files counts once; a run is what the
    profile counts (:func:`jobstats.stats.ran_column`, malformed lines left out). A run without a ``MessageId``
    cannot be told apart from another: it counts as a message of its own."""
    runs = lines.where(F.col("reason").isNull() & ran_column()).select(
        "stack", "job_type", "group", "message_id", day_column().alias("day")
    )
    per_message = runs.groupBy("stack", "job_type", "group", "message_id").agg(
        F.max("day").alias("day"), F.count(F.lit(1)).alias("runs")
    )
    return per_message.groupBy("stack", "job_type", "group", "day").agg(
        F.sum(F.when(F.col("message_id").isNull(), F.col("runs")).otherwise(1)).alias("messages")
    )


def message_counts(rows: Iterable[Mapping[str, Any]], since_day: int | None = None) -> dict[TenantKey, int]:
    """:func:`distinct_messages`'s rows -> each tenant's messages (pure), only those whose last run was on or
    after ``since_day`` (days since the epoch, UTC; default: all): a message that ran before and on that day
    counts, its runs from that day on being in the report."""
    counts: dict[TenantKey, int] = {}
    for row in rows:
        if since_day is None or row["day"] >= since_day:
            key = (row["stack"], row["job_type"], row["group"])
            counts[key] = counts.get(key, 0) + row["messages"]
    return counts


def tenant_report(spark: SparkSession, inputs: list[str], since_day: int | None = None) -> dict[str, Any]:
    """The tenants of every deployment found in ``inputs`` (files, directories or globs, as ``profile`` reads
    them): ``{"noisy_rule": {...}, "deployments": {STACK/JOB_TYPE: entry}}``, an entry as :func:`deployment_entry`;
    only deployments with at least one line naming a group.

    :param since_day: only records on or after this day (days since the epoch, UTC). Default: all.
    """
    files = list_files(spark, inputs)
    if not files:
        raise InputError(f"no files in {inputs}: point jobstats at the consumers' EMF log files")
    size_input_partitions(spark, sum(f.size for f in files.values()))
    # Two aggregations, each reading the files: keeping the parsed lines between them (MEMORY_AND_DISK) measured
    # no faster than reading them again, and holds them all (docs/benchmarks.md, bench/tenants_bench.py).
    lines = records(read_json(spark, list(files.values()), TENANT_SCHEMA))
    rows = [row.asDict() for row in tenant_partials(lines).collect()]
    messages = message_counts((row.asDict() for row in distinct_messages(lines).collect()), since_day)
    by_tenant = summarize(rows, (*DEPLOYMENT_KEYS, "queue"), since_day)
    deployments: dict[tuple[str | None, str], dict[str | None, tuple[int, Summary]]] = {}
    for (stack, job_type, group), summary in by_tenant.items():
        count = messages.get((stack, job_type, group), 0)
        deployments.setdefault((stack, job_type), {})[group] = (count, summary)
    entries = {
        deployment_name(stack, job_type): {"stack": stack, "job_type": job_type, **deployment_entry(groups)}
        for (stack, job_type), groups in sorted(deployments.items(), key=lambda item: deployment_name(*item[0]))
        if any(group is not None for group in groups)
    }
    return {
        "noisy_rule": {"factor": NOISY_FACTOR, "min_queue_time_ms": MIN_NOISY_QUEUE_MS},
        "deployments": entries,
    }


def deployment_entry(groups: Mapping[str | None, tuple[int, Summary]]) -> dict[str, Any]:
    """One deployment's tenants (pure), from each group's (distinct messages, :class:`Summary` of its runs):
    ``messages`` (distinct messages with a group), ``runs`` (their runs), ``tenants``, ``without_group``
    (messages without one), ``noisy`` (the busiest first, by messages) and ``groups``, tenant -> ``messages``,
    ``runs``, ``share`` (of ``messages``), ``failure_rate`` (failures per run), ``p50_ms``, ``p99_ms``,
    ``queue_time_p50_ms`` and ``queue_time_p99_ms`` (absent without ``QueueTime``) and ``noisy``."""
    named = {group: figures for group, figures in groups.items() if group is not None}
    total = sum(count for count, _ in named.values())
    figures = {group: TenantFigures(count, s.queue_percentile(0.99)) for group, (count, s) in named.items()}
    noisy = noisy_tenants(figures)
    entries: dict[str, dict[str, Any]] = {}
    for group in sorted(named, key=lambda g: (-named[g][0], -named[g][1].count, g)):
        count, summary = named[group]
        entry: dict[str, Any] = {
            "messages": count,
            "runs": summary.count,
            "share": count / total,
            "failure_rate": summary.failures / summary.count,
            "p50_ms": round(summary.percentile(0.5), 3),
            "p99_ms": round(summary.percentile(0.99), 3),
        }
        queue_p50, queue_p99 = summary.queue_percentile(0.5), figures[group].queue_time_p99_ms
        if queue_p50 is not None and queue_p99 is not None:
            entry["queue_time_p50_ms"] = round(queue_p50, 3)
            entry["queue_time_p99_ms"] = round(queue_p99, 3)
        entries[group] = {**entry, "noisy": group in noisy}
    without = groups.get(None)
    return {
        "messages": total,
        "runs": sum(summary.count for _, summary in named.values()),
        "tenants": len(named),
        "without_group": without[0] if without is not None else 0,
        "noisy": noisy,
        "groups": entries,
    }


def report_lines(report: dict[str, Any], top: int) -> list[str]:
    """The report as text (pure): per deployment a line naming its noisy tenants, then a row per tenant, the
    ``top`` busiest and every noisy one."""
    if not report["deployments"]:
        return ["no line names a message group: no tenants (sqslease writes MessageGroupId when a message has one)"]
    lines = []
    for name, entry in report["deployments"].items():
        noisy = ", ".join(entry["noisy"]) or "none"
        lines.append(
            f"{name}: {entry['tenants']:,} tenants, {entry['messages']:,} messages"
            f" ({entry['without_group']:,} without a group); noisy: {noisy}"
        )
        header = f"{'messages':>9} {'runs':>9} {'share':>6} {'p50 ms':>9} {'p99 ms':>9} {'queued p99 ms':>14}"
        lines.append(f"  {'tenant':<24} {header}")
        shown = [g for i, (g, t) in enumerate(entry["groups"].items()) if i < top or t["noisy"]]
        for group in shown:
            tenant = entry["groups"][group]
            queued = tenant.get("queue_time_p99_ms")
            lines.append(
                f"  {group:<24} {tenant['messages']:>9,} {tenant['runs']:>9,} {tenant['share']:>6.1%} "
                f"{tenant['p50_ms']:>9.1f} {tenant['p99_ms']:>9.1f} {'-' if queued is None else f'{queued:.1f}':>14}"
                + ("  noisy" if tenant["noisy"] else "")
            )
        if len(shown) < entry["tenants"]:
            lines.append(f"  ... {entry['tenants'] - len(shown):,} more")
    return lines
