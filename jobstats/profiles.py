"""The ``profiles.json`` document: one entry per deployment, ``STACK/JOB_TYPE`` (schema in docs/jobstats.md)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from jobstats.histogram import MAX_RELATIVE_ERROR, Summary
from jobstats.recommend import recommend, what_if

#: 2: ``deployments`` (a profile per stack and job type) replaced version 1's ``job_types`` (per job type alone).
SCHEMA_VERSION = 2


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def profile_entry(
    summary: Summary, candidate_vts_s: tuple[float, ...], min_samples: int, queues: dict[str, dict] | None = None
) -> dict[str, Any]:
    """One deployment's (or queue's) statistics and recommendations."""
    count = summary.count
    entry: dict[str, Any] = {
        "count": count,
        "p50_ms": round(summary.percentile(0.5), 3),
        "p90_ms": round(summary.percentile(0.9), 3),
        "p99_ms": round(summary.percentile(0.99), 3),
        "p999_ms": round(summary.percentile(0.999), 3),
        "max_ms": summary.max_ms,
        "mean_ms": round(summary.mean_ms, 3),
        "failure_rate": summary.failures / count,
        "redelivery_rate": summary.redeliveries / count,
        "extensions_per_message": summary.extensions / count,
        "lease_lost": summary.lease_lost,
        "window": {"from": iso(summary.first_ms), "to": iso(summary.last_ms)},
    }
    queue_p50, queue_p99 = summary.queue_percentile(0.5), summary.queue_percentile(0.99)
    if queue_p50 is not None and queue_p99 is not None:  # optional: only lines of sqslease that measures it
        entry["queue_time_p50_ms"] = round(queue_p50, 3)
        entry["queue_time_p99_ms"] = round(queue_p99, 3)
    entry.update(recommend(summary, min_samples))
    entry["what_if"] = what_if(summary, candidate_vts_s)
    if queues:
        entry["queues"] = queues
    return entry


def build_document(
    entries: dict[str, dict[str, Any]],
    inputs: list[str],
    report: dict[str, Any],
    generated_at: dt.datetime | None = None,
) -> dict[str, Any]:
    """The document around ``entries`` (deployment name -> its entry, ``stack`` and ``job_type`` first)."""
    generated_at = generated_at or dt.datetime.now(dt.UTC)
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at.isoformat().replace("+00:00", "Z"),
        "inputs": inputs,
        "input_report": report,
        "percentile_max_relative_error": round(MAX_RELATIVE_ERROR, 6),
        "deployments": dict(sorted(entries.items())),
    }


def write_document(document: dict[str, Any], path: str | Path, spark: Any = None) -> None:
    """Write to a local path, or through Hadoop's FileSystem for ``s3://``, ``s3a://``, ``hdfs://`` URIs.

    Strict JSON: a NaN or infinity anywhere raises ``ValueError`` rather than writing what a JSON parser rejects.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if "://" not in str(path) or str(path).startswith("file://"):
        Path(str(path).removeprefix("file://")).write_text(text, encoding="utf-8")
        return
    if spark is None:
        raise ValueError(f"writing {path} needs the SparkSession (Hadoop FileSystem)")
    jvm = spark._jvm
    target = jvm.org.apache.hadoop.fs.Path(str(path))
    stream = target.getFileSystem(spark._jsc.hadoopConfiguration()).create(target, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def summary_line(name: str, entry: dict[str, Any]) -> str:
    """One line per deployment for the end of a run."""
    vt = entry["recommended_visibility_timeout_s"]
    recommendation = (
        f"VT {vt} s, max_receive_count {entry['recommended_max_receive_count']}" if vt else entry["refused"]
    )
    queued = (
        f", queued p50 {entry['queue_time_p50_ms']:.0f} ms, p99 {entry['queue_time_p99_ms']:.0f} ms"
        if "queue_time_p99_ms" in entry
        else ""
    )
    return (
        f"{name}: {entry['count']:,} messages, p50 {entry['p50_ms']:.0f} ms, p99 {entry['p99_ms']:.0f} ms, "
        f"max {entry['max_ms']:.0f} ms, failures {entry['failure_rate']:.1%}, redelivered "
        f"{entry['redelivery_rate']:.1%}{queued} -> {recommendation}"
    )
