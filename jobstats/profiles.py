"""The ``profiles.json`` document: one entry per job type (schema in the README)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from jobstats.recommend import recommend, what_if
from jobstats.stats import overrun_column

SCHEMA_VERSION = 1


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def profile_entry(
    stats: dict[str, Any], candidate_vts_s: tuple[float, ...], min_samples: int, queues: dict[str, dict] | None = None
) -> dict[str, Any]:
    """One job type's (or queue's) entry from a row of :func:`jobstats.stats.aggregate`."""
    count = stats["count"]
    p50, p90, p99, p999 = stats["percentiles_ms"]
    entry: dict[str, Any] = {
        "count": count,
        "p50_ms": p50,
        "p90_ms": p90,
        "p99_ms": p99,
        "p999_ms": p999,
        "max_ms": stats["max_ms"],
        "mean_ms": round(stats["mean_ms"], 3),
        "failure_rate": stats["failures"] / count,
        "redelivery_rate": stats["redeliveries"] / count,
        "extensions_per_message": stats["extensions"] / count,
        "lease_lost": stats["lease_lost"],
        "window": {"from": iso(stats["first_ms"]), "to": iso(stats["last_ms"])},
    }
    entry.update(recommend(stats, min_samples))
    overruns = {vt: stats[overrun_column(vt)] for vt in candidate_vts_s}
    entry["what_if"] = what_if(stats, candidate_vts_s, overruns)
    if queues:
        entry["queues"] = queues
    return entry


def build_document(
    entries: dict[str, dict[str, Any]],
    inputs: list[str],
    report: dict[str, Any],
    generated_at: dt.datetime | None = None,
) -> dict[str, Any]:
    generated_at = generated_at or dt.datetime.now(dt.UTC)
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at.isoformat().replace("+00:00", "Z"),
        "inputs": inputs,
        "input_report": report,
        "job_types": dict(sorted(entries.items())),
    }


def write_document(document: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(document, indent=2) + "\n")


def summary_line(job_type: str, entry: dict[str, Any]) -> str:
    """One line per job type for the end of a run."""
    vt = entry["recommended_visibility_timeout_s"]
    recommendation = (
        f"VT {vt} s, max_receive_count {entry['recommended_max_receive_count']}" if vt else entry["refused"]
    )
    return (
        f"{job_type}: {entry['count']:,} messages, p50 {entry['p50_ms']:.0f} ms, p99 {entry['p99_ms']:.0f} ms, "
        f"max {entry['max_ms']:.0f} ms, failures {entry['failure_rate']:.1%}, redelivered "
        f"{entry['redelivery_rate']:.1%} -> {recommendation}"
    )
