"""Which path reads each file into partial rows: the cache (unchanged files), the cold path (:mod:`jobstats.scan`,
local files), Spark's JSON reader (the rest); and the sample of malformed lines, from Spark's reader."""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from jobstats.cache import PartialsCache
from jobstats.files import LogFile, file_uri
from jobstats.parse import malformed_lines, read_json, records
from jobstats.scan import scan
from jobstats.schema import SAMPLE_SCHEMA
from jobstats.session import size_input_partitions
from jobstats.stats import partial_aggregate

logger = logging.getLogger("jobstats")

SAMPLE_SIZE = 5  # malformed lines kept per file, and in the report
SAMPLE_CHARS = 300


def read_partials(
    spark: SparkSession, files: dict[str, LogFile], cache_dir: Path | None
) -> tuple[dict[str, list[dict]], dict[str, list[str]]]:
    """Every file's partial rows and malformed-line sample, by URI: from ``cache_dir``'s partials for the files
    unchanged since they were stored there, else read (and stored there)."""
    cache = PartialsCache(cache_dir) if cache_dir is not None else None
    to_read = cache.stale(files) if cache is not None else list(files)
    rows_by_file: dict[str, list[dict]] = {uri: [] for uri in files}
    samples: dict[str, list[str]] = {}
    if to_read:
        rows_by_file.update(read_files(spark, [files[uri] for uri in to_read]))
        counts = {uri: sum(r["count"] for r in rows_by_file[uri] if r["reason"] is not None) for uri in to_read}
        malformed = [files[uri] for uri in to_read if counts[uri]]
        if malformed:
            samples = malformed_samples(spark, malformed, counts)
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
    return rows_by_file, samples


def read_files(spark: SparkSession, logs: list[LogFile]) -> dict[str, list[dict]]:
    """The partial rows of ``logs`` by URI: the cold path's, and Spark's reader's for the files it leaves."""
    rows, rest = scan(spark, logs)
    if rest:
        size_input_partitions(spark, sum(log.size for log in rest))
        names = {log.uri for log in rest}
        for row in partial_aggregate(records(read_json(spark, rest))).collect():
            entry = {**row.asDict(), "file": file_uri(row["file"])}
            if entry["file"] not in names:  # a naming mismatch would silently misreport every file
                raise RuntimeError(f"Spark read {row['file']!r}, which is not among the listed files")
            rows.setdefault(entry["file"], []).append(entry)
    return rows


def malformed_samples(spark: SparkSession, files: list[LogFile], counts: dict[str, int]) -> dict[str, list[str]]:
    """Up to :data:`SAMPLE_SIZE` malformed lines per file (the first :data:`SAMPLE_CHARS` characters), in the
    order Spark reads them: as many as the file has (``counts``: its malformed lines), up to that.

    A second pass over only the files that have malformed lines; it stops reading once it has
    :data:`SAMPLE_SIZE` lines a file on the whole, so it costs little when malformed lines are common and a re-read
    when they are rare. A file the first lines of other files crowded out (a worker's own log, thick with logging
    lines, read first) gets its lines in a third pass over such files alone, which reads them whole: a sample only
    some files gave would lose the rest once those files were set aside as copies.
    """
    samples: dict[str, list[str]] = defaultdict(list)
    lines = malformed_lines(read_json(spark, files, SAMPLE_SCHEMA))
    for row in lines.select("file", "line").limit(SAMPLE_SIZE * len(files)).collect():
        if len(sample := samples[file_uri(row["file"])]) < SAMPLE_SIZE:
            sample.append(row["line"][:SAMPLE_CHARS])
    short = [log for log in files if len(samples[log.uri]) < min(SAMPLE_SIZE, counts[log.uri])]
    if short:
        at = Window.partitionBy("file").orderBy("at")  # the order they were read in: the file's
        firsts = (
            malformed_lines(read_json(spark, short, SAMPLE_SCHEMA))
            .withColumn("at", F.monotonically_increasing_id())
            .withColumn("n", F.row_number().over(at))
            .where(F.col("n") <= SAMPLE_SIZE)
        )
        for log in short:
            samples[log.uri] = []
        for row in firsts.orderBy("file", "n").select("file", "line").collect():
            samples[file_uri(row["file"])].append(row["line"][:SAMPLE_CHARS])
    return {uri: sample for uri, sample in samples.items() if sample}
