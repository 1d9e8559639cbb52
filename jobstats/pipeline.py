"""``profile``: log files -> per-deployment statistics and recommendations (the CLI's work, callable from Python).

A deployment is what its lines name (``sqslease.emf.deployment_name``): their stack and job type, or the job type
alone for lines without a stack."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from jobstats.duplicates import duplicate_files
from jobstats.files import InputError, LogFile, list_files
from jobstats.histogram import Summary, coarse_histogram
from jobstats.parse import MALFORMED_REASONS, InputReport
from jobstats.profiles import build_document, profile_entry
from jobstats.reader import SAMPLE_SIZE, read_partials
from jobstats.recommend import DEFAULT_MIN_SAMPLES
from jobstats.stats import CANDIDATE_VTS_S, DAY_MS, DEPLOYMENT_KEYS, file_counts, malformed_by_reason, summarize
from sqslease.emf import deployment_name

__all__ = ["InputError", "parse_since", "profile"]

logger = logging.getLogger("jobstats")

PLOT_BINS_PER_DECADE = 20


def profile(
    spark: SparkSession,
    inputs: list[str],
    *,
    since_day: int | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    plots_dir: Path | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Profile every deployment (stack and job type) found in ``inputs``; return the ``profiles.json`` document.

    :param inputs: files, directories (walked recursively) or globs, local or any Hadoop file system.
    :param since_day: only records on or after this day (days since the epoch, UTC). Default: all.
    :param min_samples: below this many messages a deployment gets no recommendation. Default 1,000.
    :param plots_dir: write one PNG per deployment here. Default: no plots.
    :param cache_dir: keep per-file partials here and reuse them while a file is unchanged. Default: no cache.
    """
    files = list_files(spark, inputs)
    if not files:
        raise InputError(f"no files in {inputs}: point jobstats at the consumers' EMF log files")
    rows_by_file, samples = read_partials(spark, files, cache_dir)
    copies = duplicate_files(rows_by_file)
    for copy, original in copies.items():
        logger.warning("%s holds the records of %s: counted once (profile one copy of the logs)", copy, original)
    rows = [row for uri, file_rows in rows_by_file.items() if uri not in copies for row in file_rows]
    report = _report(rows, files, {uri: s for uri, s in samples.items() if uri not in copies}, copies)
    _check(report, inputs)
    by_deployment = summarize(rows, DEPLOYMENT_KEYS, since_day)
    if not by_deployment:
        raise InputError(
            f"no well-formed records in {inputs}"
            + (" on or after --since" if since_day is not None else "")
            + f" ({report.malformed_lines} malformed lines; sample: {report.malformed_sample[:2]})"
        )
    several = any(len(summary.queues) > 1 for summary in by_deployment.values())
    by_queue = summarize(rows, (*DEPLOYMENT_KEYS, "queue"), since_day) if several else {}
    entries = {}
    for (stack, job_type), summary in by_deployment.items():
        queues = None
        if len(summary.queues) > 1:
            queues = {
                queue: profile_entry(q, CANDIDATE_VTS_S, min_samples)
                for (st, jt, queue), q in by_queue.items()
                if (st, jt) == (stack, job_type)
            }
        name = deployment_name(stack, job_type)
        entries[name] = {
            "stack": stack,
            "job_type": job_type,
            **profile_entry(summary, CANDIDATE_VTS_S, min_samples, queues),
        }
        if plots_dir is not None:
            _plot(name, entries[name], summary, plots_dir)
    return build_document(entries, inputs, report.as_dict())


def _plot(name: str, entry: dict[str, Any], summary: Summary, plots_dir: Path) -> None:
    from jobstats.plots import plot_job_type  # matplotlib only when plotting (clusters may lack it)

    histogram = coarse_histogram(summary.histogram, PLOT_BINS_PER_DECADE)
    plot_job_type(name, entry, histogram, PLOT_BINS_PER_DECADE, plots_dir)


def _check(report: InputReport, inputs: list[str]) -> None:
    """Refuse an input without a line; log what was skipped."""
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


def _report(
    rows: list[dict], files: dict[str, LogFile], samples: dict[str, list[str]], copies: dict[str, str]
) -> InputReport:
    counts = file_counts(rows)
    total = sum(lines for lines, _ in counts.values())
    malformed = sum(bad for _, bad in counts.values())
    sample = [line for uri in sorted(samples) for line in samples[uri]][:SAMPLE_SIZE]
    without = sorted(
        uri for uri in files if uri not in copies and counts.get(uri, (0, 0))[0] == counts.get(uri, (0, 0))[1]
    )
    reasons = {MALFORMED_REASONS[reason]: n for reason, n in sorted(malformed_by_reason(rows).items())}
    return InputReport(
        total, malformed, sample, without, files=len(files), malformed_reasons=reasons, duplicate_files=copies
    )


def parse_since(value: str) -> int:
    """``2026-11-01`` -> days since the epoch (UTC): records on or after that day are kept."""
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as error:
        raise InputError(f"--since {value!r} is not a date like 2026-11-01") from error
    epoch_ms = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000
    return int(epoch_ms // DAY_MS)
