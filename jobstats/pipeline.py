"""``profile``: log files -> per-deployment statistics and recommendations (the CLI's work, callable from Python).

A deployment is what its lines name (``sqslease.emf.deployment_name``): their stack and job type, or the job type
alone for lines without a stack."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from jobstats.cache import PartialsCache
from jobstats.files import InputError, LogFile, file_uri, list_files
from jobstats.histogram import coarse_histogram
from jobstats.parse import MALFORMED_REASONS, InputReport, malformed_lines, read_json, records
from jobstats.profiles import build_document, profile_entry
from jobstats.recommend import DEFAULT_MIN_SAMPLES
from jobstats.schema import SAMPLE_SCHEMA
from jobstats.session import size_input_partitions
from jobstats.stats import (
    CANDIDATE_VTS_S,
    DAY_MS,
    DEPLOYMENT_KEYS,
    file_counts,
    malformed_by_reason,
    partial_aggregate,
    summarize,
)
from sqslease.emf import deployment_name

__all__ = ["InputError", "parse_since", "profile"]

logger = logging.getLogger("jobstats")

PLOT_BINS_PER_DECADE = 20
SAMPLE_SIZE = 5  # malformed lines kept per file, and in the report
SAMPLE_CHARS = 300


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
    cache = PartialsCache(cache_dir) if cache_dir is not None else None
    to_read = cache.stale(files) if cache is not None else list(files)

    rows_by_file: dict[str, list[dict]] = {uri: [] for uri in files}
    samples: dict[str, list[str]] = {}
    if to_read:
        size_input_partitions(spark, sum(files[uri].size for uri in to_read))
        for row in partial_aggregate(records(read_json(spark, [files[uri] for uri in to_read]))).collect():
            entry = {**row.asDict(), "file": file_uri(row["file"])}
            if entry["file"] not in rows_by_file:  # a naming mismatch would silently misreport every file
                raise RuntimeError(f"Spark read {row['file']!r}, which is not among the listed files")
            rows_by_file[entry["file"]].append(entry)
        malformed = [files[uri] for uri in to_read if any(r["reason"] is not None for r in rows_by_file[uri])]
        if malformed:
            samples = malformed_samples(spark, malformed)
        if cache is not None:
            for uri in to_read:
                cache.store(files[uri], rows_by_file[uri], samples.get(uri, []))
            cache.save()
    if cache is not None:
        for uri in files:
            if uri not in to_read:
                rows_by_file[uri] = cache.rows(uri)
                samples[uri] = cache.malformed_sample(uri)
    logger.info("read %d of %d files (%d from the cache)", len(to_read), len(files), len(files) - len(to_read))

    rows = [row for file_rows in rows_by_file.values() for row in file_rows]
    report = _report(rows, files, samples)
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

    by_deployment = summarize(rows, DEPLOYMENT_KEYS, since_day)
    if not by_deployment:
        raise InputError(
            f"no well-formed records in {inputs}"
            + (" on or after --since" if since_day is not None else "")
            + f" ({report.malformed_lines} malformed lines; sample: {report.malformed_sample[:2]})"
        )
    by_queue = summarize(rows, (*DEPLOYMENT_KEYS, "queue"), since_day)
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
            from jobstats.plots import plot_job_type  # matplotlib only when plotting (clusters may lack it)

            histogram = coarse_histogram(summary.histogram, PLOT_BINS_PER_DECADE)
            plot_job_type(name, entries[name], histogram, PLOT_BINS_PER_DECADE, plots_dir)
    return build_document(entries, inputs, report.as_dict())


def malformed_samples(spark: SparkSession, files: list[LogFile]) -> dict[str, list[str]]:
    """Up to :data:`SAMPLE_SIZE` malformed lines per file (the first :data:`SAMPLE_CHARS` characters).

    A second pass over only the files that have malformed lines; it stops reading once it has the sample, so
    it costs little when malformed lines are common and a re-read when they are rare.
    """
    lines = malformed_lines(read_json(spark, files, SAMPLE_SCHEMA))
    samples: dict[str, list[str]] = defaultdict(list)
    for row in lines.select("file", "line").limit(SAMPLE_SIZE * len(files)).collect():
        if len(sample := samples[file_uri(row["file"])]) < SAMPLE_SIZE:
            sample.append(row["line"][:SAMPLE_CHARS])
    return dict(samples)


def _report(rows: list[dict], files: dict[str, LogFile], samples: dict[str, list[str]]) -> InputReport:
    counts = file_counts(rows)
    total = sum(lines for lines, _ in counts.values())
    malformed = sum(bad for _, bad in counts.values())
    sample = [line for uri in sorted(samples) for line in samples[uri]][:SAMPLE_SIZE]
    without = sorted(uri for uri in files if counts.get(uri, (0, 0))[0] == counts.get(uri, (0, 0))[1])
    reasons = {MALFORMED_REASONS[reason]: n for reason, n in sorted(malformed_by_reason(rows).items())}
    return InputReport(total, malformed, sample, without, files=len(files), malformed_reasons=reasons)


def parse_since(value: str) -> int:
    """``2026-11-01`` -> days since the epoch (UTC): records on or after that day are kept."""
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as error:
        raise InputError(f"--since {value!r} is not a date like 2026-11-01") from error
    epoch_ms = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000
    return int(epoch_ms // DAY_MS)
