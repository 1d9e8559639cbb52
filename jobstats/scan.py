"""The cold path: local log files parsed in Python on the executors, split by split, into partial rows.

Spark schedules the work, one task a core (:func:`plan`), each a share of the files' splits; a task reads each
split's byte range of a local file itself (``file:`` URIs, plain or gzip), decodes it in blocks of whole lines
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
#: Splits a task: enough pieces for the tasks to get about the same bytes when files differ in size.
SPLITS_PER_TASK = 4
#: The smallest split (bytes) of a large file: smaller ones balance little, and each costs an open and a buffer.
MIN_SPLIT_BYTES = 8 * 2**20
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


def split_size(total_bytes: int, tasks: int) -> int:
    """The largest split (bytes) for ``total_bytes`` over ``tasks`` tasks: :data:`SPLITS_PER_TASK` a task, at least
    :data:`MIN_SPLIT_BYTES`. Pure."""
    return max(-(-total_bytes // (SPLITS_PER_TASK * max(tasks, 1))), MIN_SPLIT_BYTES)


def plan(files: Iterable[LogFile], tasks: int, split_bytes: int) -> list[list[Split]]:
    """At most ``tasks`` tasks: every file cut into splits of at most ``split_bytes`` (a gzip file whole), the
    splits given out largest first, each to the task with the fewest bytes so far (a split counting
    :data:`OPEN_COST_BYTES` more); a task's splits in file order. Pure.

    One task a core, not one a split: Spark takes tens of milliseconds to start a task, and a split costs a task
    only an open (measured: docs/benchmarks.md)."""
    splits: list[Split] = []
    for log in files:
        path = local_path(log)
        if path is None:
            raise ValueError(f"{log.uri} is not a local file the cold path reads")
        zipped = log.uri.endswith(".gz")
        step = log.size if zipped else split_bytes
        for start in range(0, max(log.size, 1), max(step, 1)):
            end = max(log.size, 1) if zipped else min(start + step, log.size)
            splits.append(Split(log.uri, path, start, end, zipped))
    planned: list[list[int]] = [[] for _ in range(min(max(tasks, 1), len(splits)))]
    loads = [0] * len(planned)
    for i in sorted(range(len(splits)), key=lambda i: splits[i].start - splits[i].end):  # largest first, stable
        least = loads.index(min(loads))
        planned[least].append(i)
        loads[least] += splits[i].end - splits[i].start + OPEN_COST_BYTES
    return [[splits[i] for i in sorted(task)] for task in planned]


def read_blocks(split: Split, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes | memoryview]:
    """Blocks of whole lines of ``split``: every line whose first byte is in the split, each once.

    A plain file's blocks are views of one buffer that the next block is read into: use each block before asking for
    the next (``bytes(block)`` keeps one). A new 16 MiB object per block cost 12-23 % of the decoding's CPU, in page
    faults and copies (docs/benchmarks.md)."""
    if split.gzip:
        with gzip.open(split.path, "rb") as stream:
            while block := stream.read(block_bytes):
                yield block if block.endswith(b"\n") else block + stream.readline()
        return
    yield from _plain_blocks(split, max(block_bytes, 1))


def _plain_blocks(split: Split, block_bytes: int) -> Iterator[memoryview]:
    buffer = bytearray(block_bytes)
    with open(split.path, "rb") as stream:
        if split.start > 0:
            stream.seek(split.start - 1)
            stream.readline()  # the line holding the byte before the split is the split before's
        offset, held = stream.tell(), 0  # buffer[:held] holds the file from ``offset``: the start of a line
        while offset < split.end:
            if held == len(buffer):  # one line fills the buffer: a larger one (the views of this one stay valid)
                buffer = buffer + bytes(len(buffer))
            view = memoryview(buffer)
            size = held + stream.readinto(view[held:])
            last = split.end - 1 - offset  # the split's last byte, in the buffer
            stop = buffer.find(b"\n", last, size) + 1 if last < size else 0  # the end of the line holding it
            if stop or size < len(buffer):  # the split's last line, or the end of the file
                if stop or size:
                    yield view[: stop or size]
                return
            stop = buffer.rfind(b"\n", 0, size) + 1
            if stop:
                yield view[:stop]
            held = size - stop
            buffer[:held] = buffer[stop:size]  # the next block starts with the line begun here (same size: no resize)
            offset += stop


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


def scan(
    spark: SparkSession, files: list[LogFile], split_bytes: int | None = None
) -> tuple[dict[str, list[dict]], list[LogFile]]:
    """The partial rows of every file the cold path reads whole, by URI; and the files left to Spark's reader.

    :param split_bytes: the largest split. Default: :func:`split_size` of the files over the session's cores."""
    local = [log for log in files if local_path(log) is not None]
    rest = [log for log in files if local_path(log) is None]
    if not local:
        return {}, rest
    cores = spark.sparkContext.defaultParallelism
    tasks = plan(local, cores, split_bytes or split_size(sum(log.size for log in local), cores))
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
