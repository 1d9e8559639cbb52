"""jobstats (PySpark, warm local SparkSession) vs DuckDB's exact quantiles over the same >= 2M log lines.

Run: `.venv/bin/python bench/jobstats_bench.py [--lines 2000000]` (generates bench/out/logs-<N> once).

Prints, in one run: DuckDB computing the same statistics with exact quantiles; jobstats cold (every file
parsed: its cold path, msgspec and numpy in Spark tasks); the same through Spark's JSON reader (jobstats'
path for files the cold path leaves, and its only path before); jobstats with --cache, first (fills it) and again
(no file changed: the steady state of a daily job where old logs are immutable); the floors of each path, parsing
alone (no checks, no grouping): the cold path's decoding in Spark tasks, pyarrow's JSON reader in Spark tasks (the
same splits), Spark's JSON reader on the columns jobstats reads and on ProcessingTime only, and pyarrow's JSON
reader alone in this process (its threads, no Spark); the throughput ratios against DuckDB; the p99 error per job
type vs DuckDB's exact quantile; and whether the cold, Spark-reader and cached runs gave the same document. Each
run is paired with a DuckDB run just before it and the ratio is the median of the pairs' ratios: it holds on a
shared machine, where absolute seconds do not.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "bench")]

import duckdb  # noqa: E402
from generate_logs import generate  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from jobstats import scan  # noqa: E402
from jobstats.files import list_files  # noqa: E402
from jobstats.histogram import MAX_RELATIVE_ERROR  # noqa: E402
from jobstats.parse import read_json  # noqa: E402
from jobstats.pipeline import profile  # noqa: E402
from jobstats.schema import EMF_SCHEMA  # noqa: E402
from jobstats.session import spark_session  # noqa: E402
from jobstats.stats import CANDIDATE_VTS_S  # noqa: E402

REPEAT = 5
T = TypeVar("T")
#: Seconds of every DuckDB run paired with a jobstats run: its row prints their median, the runs the ratios divide.
BASELINE_SECONDS: list[float] = []


def duckdb_query(glob: str) -> str:
    overruns = ", ".join(f"sum(CASE WHEN ProcessingTime > {vt * 1000} THEN 1 ELSE 0 END)" for vt in CANDIDATE_VTS_S)
    return f"""
        SELECT JobType, count(*),
          quantile_disc(ProcessingTime, [0.5, 0.9, 0.99, 0.999]) AS q, max(ProcessingTime), avg(ProcessingTime),
          sum(CASE WHEN Outcome IN ('failure', 'dead_lettered') THEN 1 ELSE 0 END),
          sum(CASE WHEN ReceiveCount > 1 THEN 1 ELSE 0 END), sum(Extensions), sum(LeaseLost),
          min(_aws.Timestamp), max(_aws.Timestamp),
          quantile_disc(CASE WHEN Outcome = 'success' THEN ReceiveCount END, 0.99), count(DISTINCT Queue), {overruns}
        FROM read_ndjson('{glob}', columns={{_aws: 'STRUCT(Timestamp BIGINT)', JobType: 'VARCHAR', Queue: 'VARCHAR',
          ProcessingTime: 'DOUBLE', Outcome: 'VARCHAR', ReceiveCount: 'INTEGER', Extensions: 'INTEGER',
          LeaseLost: 'INTEGER'}})
        GROUP BY JobType ORDER BY JobType"""


def parse_only(spark: SparkSession, logs: Path, processing_time_only: bool) -> None:
    """Spark's JSON reader over the logs with nothing after it but a sum per column: the floor."""
    raw = read_json(spark, list_files(spark, [str(logs)]).values())
    columns = ["ProcessingTime"] if processing_time_only else [c for c in raw.columns if c != "file"] + ["file"]
    raw.select(*(F.max(F.length(F.col(c).cast("string"))) for c in columns)).collect()


def decode_only(spark: SparkSession, logs: Path) -> int:
    """The cold path's decoding alone (msgspec, one object per line, no checks, no grouping) in Spark tasks, over
    the same splits as jobstats: its floor. Returns the lines decoded."""
    return in_spark_tasks(spark, logs, _decode_task)


def pyarrow_in_spark(spark: SparkSession, logs: Path) -> int:
    """pyarrow's JSON reader on the fields jobstats reads, block by block in Spark tasks over the same splits as
    the cold path (no checks, no grouping). Returns the lines parsed."""
    return in_spark_tasks(spark, logs, _pyarrow_task)


def in_spark_tasks(spark: SparkSession, logs: Path, task: Callable[[Iterable[list[scan.Split]]], Iterator[int]]) -> int:
    files = list(list_files(spark, [str(logs)]).values())
    cores = spark.sparkContext.defaultParallelism
    tasks = scan.plan(files, cores, scan.split_size(sum(f.size for f in files), cores))
    return int(spark.sparkContext.parallelize(tasks, len(tasks)).mapPartitions(task).sum())


def _decode_task(tasks: Iterable[list[scan.Split]]) -> Iterator[int]:
    from jobstats.decode import decode_block

    for task in tasks:
        for split in task:
            for block in scan.read_blocks(split):
                columns = decode_block(block)
                yield 0 if columns is None else columns.size


def _pyarrow_task(tasks: Iterable[list[scan.Split]]) -> Iterator[int]:
    import pyarrow as pa
    import pyarrow.json as pj

    options = _pyarrow_options()
    for task in tasks:
        for split in task:
            for block in scan.read_blocks(split):
                yield pj.read_json(pa.BufferReader(block), parse_options=options).num_rows


def pyarrow_only(logs: Path) -> int:
    """pyarrow's JSON reader alone in this process (its threads, no Spark), on the fields jobstats reads."""
    import pyarrow.json as pj

    options = _pyarrow_options()
    return sum(pj.read_json(path, parse_options=options).num_rows for path in sorted(logs.glob("*.log")))


def _pyarrow_options() -> Any:
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema(
        [
            ("_aws", pa.struct([("Timestamp", pa.int64())])),
            *((name, pa.string()) for name in ("JobType", "Stack", "Queue", "Outcome")),
            *((name, pa.float64()) for name in ("ProcessingTime", "QueueTime")),
            *((name, pa.int32()) for name in ("ReceiveCount", "Extensions", "LeaseLost")),
        ]
    )
    return pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")


def timed(fn: Callable[[], T], repeat: int = REPEAT) -> tuple[float, T]:
    """Median seconds of ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result  # type: ignore[return-value]


def paired(baseline: Callable[[], object], fn: Callable[[], T], repeat: int = REPEAT) -> tuple[float, float, T]:
    """Median seconds of ``fn``, the median ratio baseline seconds / ``fn`` seconds over ``repeat`` pairs run
    back to back, and the last result of ``fn``."""
    seconds, ratios = [], []
    for _ in range(repeat):
        base_s, _ = timed(baseline, repeat=1)
        BASELINE_SECONDS.append(base_s)
        fn_s, result = timed(fn, repeat=1)
        seconds.append(fn_s)
        ratios.append(base_s / fn_s)
    return statistics.median(seconds), statistics.median(ratios), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=2_000_000)
    args = parser.parse_args()
    logs = ROOT / "bench" / "out" / f"logs-{args.lines}"
    if not (logs / "consumer-7.log").exists():
        print(f"generating {args.lines:,} lines into {logs} ...", flush=True)
        generate(logs, args.lines, files=8)
    size_mb = sum(p.stat().st_size for p in logs.glob("*.log")) / 1e6
    logging.disable(logging.WARNING)

    con = duckdb.connect()
    query = duckdb_query(str(logs / "*.log"))
    con.execute(query).fetchall()  # warm: file cache, extension load
    duck_rows = con.execute(query).fetchall()
    exact_p99 = {row[0]: row[2][2] for row in duck_rows}

    def duck() -> object:
        return con.execute(query).fetchall()

    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    profile(spark, [str(logs / "consumer-0.log")])  # warm the session, the JIT and the Python workers
    rows: list[tuple[str, float, float]] = []
    cold_s, cold_ratio, document = paired(duck, lambda: profile(spark, [str(logs)]))
    rows.append(("jobstats, cold (parse every file)", cold_s, cold_ratio))
    spark_s, spark_ratio, through_spark = paired(duck, lambda: spark_path(spark, logs))
    rows.append(("jobstats, cold, Spark's JSON reader only", spark_s, spark_ratio))
    cached = cache_runs(spark, logs, duck, rows)
    rows.extend(floors(spark, logs, duck, args.lines))
    spark.stop()
    rows.append(
        ("floor: pyarrow's JSON reader alone, no Spark", *lines_checked(duck, lambda: pyarrow_only(logs), args.lines))
    )

    # its runs paired with the others' (not runs alone before them: the first, after the logs were written, ran slower)
    rows.insert(0, ("DuckDB, exact quantiles (its paired runs)", statistics.median(BASELINE_SECONDS), 1.0))
    print(f"{args.lines:,} lines, {size_mb:.0f} MB, 8 files, {os.cpu_count()} cores; medians of {REPEAT} runs")
    print(f"{'':46} {'seconds':>8} {'lines/s':>11} {'vs DuckDB':>9}")
    for label, seconds, ratio in rows:
        print(f"{label:46} {seconds:8.2f} {args.lines / seconds:11,.0f} {ratio:8.2f}x")
    print(f"p99 error vs DuckDB's exact quantile_disc, per job type (bound {MAX_RELATIVE_ERROR:.4%}):")
    for job_type, entry in sorted(document["deployments"].items()):  # the generated lines name no stack
        error = abs(entry["p99_ms"] - exact_p99[job_type]) / exact_p99[job_type]
        differs = [
            name
            for name, other in (("cached", cached), ("Spark's reader", through_spark))
            if other["deployments"][job_type] != entry
        ]
        print(
            f"   {job_type:15} {entry['p99_ms']:>13,.1f} ms vs {exact_p99[job_type]:>13,.1f} ms: {error:.4%}"
            + "".join(f"  ({name} run differs!)" for name in differs)
        )
    same_report = document["input_report"] == through_spark["input_report"] == cached["input_report"]
    same_profiles = document["deployments"] == through_spark["deployments"] == cached["deployments"]
    print(
        "documents of the cold, Spark-reader and cached runs: every deployment's profile "
        + ("the same" if same_profiles else "DIFFERS!")
        + ", input reports "
        + ("the same" if same_report else "DIFFER!")
    )


def floors(spark: SparkSession, logs: Path, duck: Callable[[], object], lines: int) -> list[tuple[str, float, float]]:
    """Each path's floor in Spark: its parsing alone, no checks, no grouping."""
    return [
        ("floor: cold path's msgspec decoding alone", *lines_checked(duck, lambda: decode_only(spark, logs), lines)),
        (
            "floor: pyarrow's JSON reader in Spark tasks",
            *lines_checked(duck, lambda: pyarrow_in_spark(spark, logs), lines),
        ),
        (
            f"floor: Spark's JSON reader, {len(EMF_SCHEMA.fields) - 1} fields + file",
            *paired(duck, lambda: parse_only(spark, logs, processing_time_only=False))[:2],
        ),
        (
            "floor: Spark's JSON reader, ProcessingTime only",
            *paired(duck, lambda: parse_only(spark, logs, processing_time_only=True))[:2],
        ),
    ]


def lines_checked(duck: Callable[[], object], fn: Callable[[], int], lines: int) -> tuple[float, float]:
    """:func:`paired` of ``fn``, which must have read every one of the ``lines`` (a floor that skipped some would
    flatter itself)."""
    seconds, ratio, read = paired(duck, fn)
    if read != lines:
        raise RuntimeError(f"{fn} read {read:,} of {lines:,} lines")
    return seconds, ratio


def spark_path(spark: SparkSession, logs: Path) -> dict[str, Any]:
    """jobstats as it runs when the cold path leaves every file to Spark's JSON reader."""
    with mock.patch.object(scan, "local_path", lambda log: None):
        return profile(spark, [str(logs)])


def cache_runs(
    spark: SparkSession, logs: Path, duck: Callable[[], object], rows: list[tuple[str, float, float]]
) -> dict[str, Any]:
    """``--cache``: the first run (fills it), then runs with no file changed; returns the last document."""
    cache = Path(tempfile.mkdtemp(prefix="jobstats-cache-"))
    try:
        fill = paired(duck, lambda: profile(spark, [str(logs)], cache_dir=cache), repeat=1)
        rows.append(("jobstats --cache, first run", *fill[:2]))
        hit_s, hit_ratio, cached = paired(duck, lambda: profile(spark, [str(logs)], cache_dir=cache))
        rows.append(("jobstats --cache, files unchanged", hit_s, hit_ratio))
    finally:
        shutil.rmtree(cache)
    return cached


if __name__ == "__main__":
    main()
