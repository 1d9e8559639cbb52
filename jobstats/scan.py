"""The cold path: local log files parsed in Python on the executors, split by split, into partial rows.

Spark schedules the work (one task per split, small files sharing one, as Spark packs them); each task reads its
byte range of a local file itself (``file:`` URIs, plain or gzip), decodes it in blocks of whole lines
(:func:`jobstats.decode.decode_block`: msgspec, several times faster than Spark's JSON reader) and computes the
block's partial rows with numpy (:func:`jobstats.partials.aggregate`). A file any block of which the decoder does
not read exactly as Spark's reader would (a CloudWatch export, a line that is not an EMF object), a file on
another file system (``s3a://``, ``hdfs://``) or compressed otherwise than gzip, and every file when msgspec or
numpy is missing on the executors, is read by Spark's JSON reader instead (:mod:`jobstats.parse`): the same rows.

A line belongs to the split holding its first byte, as with Hadoop's line reader: each is read once.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from jobstats.files import LogFile

logger = logging.getLogger("jobstats")

#: Bytes of whole lines decoded at once: bounds a Python worker's memory whatever the split's size.
BLOCK_BYTES = 16 * 2**20
#: What opening a file costs, in bytes read (Spark's ``spark.sql.files.openCostInBytes`` default): small files
#: share a task.
OPEN_COST_BYTES = 4 * 2**20
#: File name endings Hadoop reads through a codec other than gzip's: Spark's reader reads those files.
OTHER_CODECS = (".bz2", ".deflate", ".lz4", ".snappy", ".zst")

#: What a task yields per split: the file's URI, its rows (None: Spark's reader must read the file), and why not.
Result = tuple[str, list[dict[str, Any]] | None, str | None]


@dataclass(frozen=True)
class Split:
    """The lines of a local file whose first byte is in ``[start, end)`` (a gzip file: all of it, one split)."""

    uri: str
    path: str
    start: int
    end: int
    gzip: bool


def local_path(log: LogFile) -> str | None:
    """The path this machine's Python opens for ``log``, or None when only Hadoop can read it (another file
    system, or a codec other than gzip)."""
    parsed = urlparse(log.uri)
    if parsed.scheme != "file" or parsed.netloc or log.uri.endswith(OTHER_CODECS):
        return None
    return unquote(parsed.path)


def plan(files: Iterable[LogFile], split_bytes: int) -> list[list[Split]]:
    """The tasks: splits of at most ``split_bytes`` (a gzip file whole), packed in order into tasks of about
    ``split_bytes`` (each file counting :data:`OPEN_COST_BYTES` more). Pure."""
    tasks: list[list[Split]] = []
    task: list[Split] = []
    task_bytes = 0
    for log in files:
        path = local_path(log)
        if path is None:
            raise ValueError(f"{log.uri} is not a local file the cold path reads")
        zipped = log.uri.endswith(".gz")
        step = log.size if zipped else split_bytes
        for start in range(0, max(log.size, 1), max(step, 1)):
            split = Split(log.uri, path, start, max(log.size, 1) if zipped else min(start + step, log.size), zipped)
            cost = split.end - split.start + OPEN_COST_BYTES
            if task and task_bytes + cost > split_bytes:
                tasks.append(task)
                task, task_bytes = [], 0
            task.append(split)
            task_bytes += cost
    if task:
        tasks.append(task)
    return tasks


def read_blocks(split: Split, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Blocks of whole lines of ``split``: every line whose first byte is in the split, each once."""
    if split.gzip:
        with gzip.open(split.path, "rb") as stream:
            while block := stream.read(block_bytes):
                yield block if block.endswith(b"\n") else block + stream.readline()
        return
    with open(split.path, "rb") as stream:
        if split.start > 0:
            stream.seek(split.start - 1)
            stream.readline()  # the line holding the byte before the split is the split before's
        position = stream.tell()
        while position < split.end and (block := stream.read(min(block_bytes, split.end - position))):
            if not block.endswith(b"\n"):
                block += stream.readline()  # the last line starts in the split: read it to its end
            position = stream.tell()
            yield block


def scan_task(tasks: Iterable[list[Split]]) -> Iterator[Result]:
    """Run on an executor: each split's rows, or None for a split the decoder cannot read exactly."""
    try:
        from jobstats.decode import decode_block
        from jobstats.partials import aggregate, merge_rows
    except ImportError as error:  # msgspec or numpy missing on this executor: Spark's reader reads the files
        yield from ((split.uri, None, f"{error}") for task in tasks for split in task)
        return
    for task in tasks:
        for split in task:
            rows: list[dict[str, Any]] | None = []
            try:
                for block in read_blocks(split):
                    columns = decode_block(block)
                    if columns is None:
                        rows = None
                        break
                    rows.extend(aggregate(columns, split.uri))
            except (OSError, EOFError) as error:  # e.g. a truncated gzip: Spark's reader reports it
                yield split.uri, None, f"{error}"
                continue
            yield split.uri, None if rows is None else merge_rows(rows), None


def scan(spark: SparkSession, files: list[LogFile], split_bytes: int) -> tuple[dict[str, list[dict]], list[LogFile]]:
    """The partial rows of every file the cold path reads whole, by URI; and the files left to Spark's reader."""
    local = [log for log in files if local_path(log) is not None]
    rest = [log for log in files if local_path(log) is None]
    if not local:
        return {}, rest
    tasks = plan(local, split_bytes)
    results = spark.sparkContext.parallelize(tasks, len(tasks)).mapPartitions(scan_task).collect()
    rows: dict[str, list[dict]] = {}
    failed: set[str] = set()
    errors: dict[str, list[str]] = {}
    for uri, split_rows, why in results:
        if split_rows is None:
            failed.add(uri)
            if why:
                errors.setdefault(why, []).append(uri)
        else:
            rows.setdefault(uri, []).extend(split_rows)
    for why, uris in errors.items():
        logger.warning("%d files read by Spark's JSON reader (%s), e.g. %s", len(set(uris)), why, uris[0])
    from jobstats.partials import merge_rows  # numpy: only once there are rows to merge

    done = {uri: merge_rows(file_rows) for uri, file_rows in rows.items() if uri not in failed}
    return done, rest + [log for log in local if log.uri not in done]
