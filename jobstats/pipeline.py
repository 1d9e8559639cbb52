"""``profile``: log files -> per-job-type statistics and recommendations (the CLI's work, callable from Python)."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobstats.cache import PartialsCache
from jobstats.histogram import coarse_histogram
from jobstats.parse import InputReport, parse_lines, read_lines
from jobstats.profiles import build_document, profile_entry
from jobstats.recommend import DEFAULT_MIN_SAMPLES
from jobstats.stats import CANDIDATE_VTS_S, DAY_MS, file_counts, partial_aggregate, summarize

logger = logging.getLogger("jobstats")

PLOT_BINS_PER_DECADE = 20
SAMPLE_SIZE = 5


class InputError(ValueError):
    """The inputs cannot be profiled (missing, empty, or nothing well-formed); the message says what to fix."""


def profile(
    spark: SparkSession,
    inputs: list[str],
    *,
    since_day: int | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    plots_dir: Path | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Profile every job type found in ``inputs``; return the ``profiles.json`` document."""
    files = list_files(spark, inputs, with_status=cache_dir is not None)
    if not files:
        raise InputError(f"no files in {inputs}: point jobstats at the consumers' EMF log files")
    cache = PartialsCache(cache_dir) if cache_dir is not None else None
    to_read = cache.stale(files) if cache is not None else list(files)

    rows_by_file: dict[str, list[dict]] = {uri: [] for uri in files}
    samples: dict[str, list[str]] = defaultdict(list)
    if to_read:
        parsed = parse_lines(read_lines(spark, to_read))
        for row in partial_aggregate(parsed).collect():  # the one pass over the logs
            rows_by_file.setdefault(row["file"], []).append(row.asDict())
        malformed_files = [f for f in to_read if any(r["malformed"] for r in rows_by_file.get(f, []))]
        if malformed_files:
            bad = parsed.where(
                F.col("malformed") & (F.trim(F.col("value")) != "") & F.col("file").isin(malformed_files)
            )
            for row in bad.select("file", "value").limit(SAMPLE_SIZE * len(malformed_files)).collect():
                if len(samples[row["file"]]) < SAMPLE_SIZE:
                    samples[row["file"]].append(row["value"][:300])
        if cache is not None:
            for uri in to_read:
                cache.store(uri, *files[uri], rows_by_file.get(uri, []), samples.get(uri, []))
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

    by_job = summarize(rows, ("job_type",), since_day)
    if not by_job:
        raise InputError(
            f"no well-formed records in {inputs}"
            + (" on or after --since" if since_day is not None else "")
            + f" ({report.malformed_lines} malformed lines; sample: {report.malformed_sample[:2]})"
        )
    by_queue = summarize(rows, ("job_type", "queue"), since_day)
    entries = {}
    for (job_type,), summary in by_job.items():
        queues = None
        if len(summary.queues) > 1:
            queues = {
                queue: profile_entry(q, CANDIDATE_VTS_S, min_samples)
                for (jt, queue), q in by_queue.items()
                if jt == job_type
            }
        entries[job_type] = profile_entry(summary, CANDIDATE_VTS_S, min_samples, queues)
        if plots_dir is not None:
            from jobstats.plots import plot_job_type  # matplotlib only when plotting (clusters may lack it)

            histogram = coarse_histogram(summary.histogram, PLOT_BINS_PER_DECADE)
            plot_job_type(job_type, entries[job_type], histogram, PLOT_BINS_PER_DECADE, plots_dir)
    return build_document(entries, inputs, report.as_dict())


def list_files(spark: SparkSession, inputs: list[str], with_status: bool) -> dict[str, tuple[int, int]]:
    """Every file the inputs name (directories and globs expanded), with ``(size, mtime)`` when asked."""
    try:
        uris = list(spark.read.text(inputs).inputFiles())
    except AnalysisException as error:
        raise InputError(f"cannot read {inputs}: {error}") from error
    if not with_status:
        return {uri: (0, 0) for uri in uris}
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()  # Hadoop's FileSystem knows s3a://, hdfs://, file:
    status = {}
    for uri in uris:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        st = path.getFileSystem(conf).getFileStatus(path)
        status[uri] = (int(st.getLen()), int(st.getModificationTime()))
    return status


def _report(rows: list[dict], files: dict[str, Any], samples: dict[str, list[str]]) -> InputReport:
    counts = file_counts(rows)
    total = sum(lines for lines, _ in counts.values())
    malformed = sum(bad for _, bad in counts.values())
    sample = [line for uri in sorted(samples) for line in samples[uri]][:SAMPLE_SIZE]
    without = sorted(uri for uri in files if counts.get(uri, (0, 0))[0] == counts.get(uri, (0, 0))[1])
    return InputReport(total, malformed, sample, without, files=len(files))


def parse_since(value: str) -> int:
    """``2026-11-01`` -> days since the epoch (UTC): records on or after that day are kept."""
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as error:
        raise InputError(f"--since {value!r} is not a date like 2026-11-01") from error
    epoch_ms = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000
    return int(epoch_ms // DAY_MS)
