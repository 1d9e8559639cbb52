"""``profile``: log files -> per-job-type statistics and recommendations (the CLI's work, callable from Python)."""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from jobstats.parse import input_report, parse_lines, read_lines, valid_records
from jobstats.plots import plot_job_type
from jobstats.profiles import build_document, profile_entry
from jobstats.recommend import DEFAULT_MIN_SAMPLES
from jobstats.stats import CANDIDATE_VTS_S, DEFAULT_ACCURACY, aggregate, duration_histogram

logger = logging.getLogger("jobstats")

BINS_PER_DECADE = 20


class InputError(ValueError):
    """The inputs cannot be profiled (missing, empty, or nothing well-formed); the message says what to fix."""


def profile(
    spark: SparkSession,
    inputs: list[str],
    *,
    since_ms: int | None = None,
    accuracy: int = DEFAULT_ACCURACY,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    plots_dir: Path | None = None,
) -> dict[str, Any]:
    """Profile every job type found in ``inputs``; return the ``profiles.json`` document."""
    try:
        parsed = parse_lines(read_lines(spark, inputs))
        slim = parsed.drop("value").persist(StorageLevel.MEMORY_AND_DISK)
        report = input_report(parsed.select("file", "value", "malformed"))
    except AnalysisException as error:
        raise InputError(
            f"cannot read {inputs}: {error.getMessage() if hasattr(error, 'getMessage') else error}"
        ) from error
    try:
        if report.total_lines == 0:
            raise InputError(f"no log lines in {inputs}: point jobstats at the consumers' EMF log files")
        if report.malformed_lines:
            logger.warning(
                "%d of %d lines are malformed and were skipped; sample: %s",
                report.malformed_lines,
                report.total_lines,
                report.malformed_sample,
            )
        for file in report.files_without_records:
            logger.error("no well-formed record in %s: is it an sqslease EMF log?", file)
        records = valid_records(slim, since_ms)
        rows = [row.asDict() for row in aggregate(records, ("job_type",), accuracy).collect()]
        if not rows:
            raise InputError(
                f"no well-formed records in {inputs}"
                + (" at or after --since" if since_ms is not None else "")
                + f" ({report.malformed_lines} malformed lines; sample: {report.malformed_sample[:2]})"
            )
        per_queue: dict[str, dict[str, dict]] = defaultdict(dict)
        if any(row["queues"] > 1 for row in rows):  # only then is a per-queue pass worth a scan
            for qrow in aggregate(records, ("job_type", "queue"), accuracy).collect():
                q = qrow.asDict()
                per_queue[q["job_type"]][q["queue"]] = profile_entry(q, CANDIDATE_VTS_S, min_samples)
        entries = {
            row["job_type"]: profile_entry(row, CANDIDATE_VTS_S, min_samples, per_queue.get(row["job_type"]))
            for row in rows
        }
        if plots_dir is not None:
            histograms: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for h in duration_histogram(records, BINS_PER_DECADE).collect():
                histograms[h["job_type"]].append((h["bin"], h["count"]))
            for job_type, entry in entries.items():
                plot_job_type(job_type, entry, histograms[job_type], BINS_PER_DECADE, plots_dir)
    finally:
        slim.unpersist()
    return build_document(entries, inputs, report.as_dict())


def parse_since(value: str) -> int:
    """``2026-11-01`` or an ISO timestamp -> epoch milliseconds (UTC when no zone is given)."""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:
        raise InputError(f"--since {value!r} is not a date like 2026-11-01 or 2026-11-01T12:00:00Z") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


__all__ = ["InputError", "parse_since", "profile"]
