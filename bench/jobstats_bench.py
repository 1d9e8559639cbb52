"""jobstats (PySpark, warm local SparkSession) vs DuckDB's exact quantiles over the same >= 2M log lines.

Run: `.venv/bin/python bench/jobstats_bench.py [--lines 2000000]` (generates bench/out/logs-<N> once).

Prints, in one run: DuckDB computing the same statistics with exact quantiles; jobstats cold (every file
parsed); jobstats with --cache, first (fills it) and again (no file changed: the steady state of a daily
job where old logs are immutable); the throughput ratios; and the p99 error per job type vs DuckDB.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "bench")]

import duckdb  # noqa: E402
from generate_logs import generate  # noqa: E402

from jobstats.pipeline import profile  # noqa: E402
from jobstats.session import spark_session  # noqa: E402
from jobstats.stats import CANDIDATE_VTS_S  # noqa: E402

REPEAT = 3


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


def timed(fn, repeat: int = REPEAT) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


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
    duck_s, duck_rows = timed(lambda: con.execute(query).fetchall())
    exact_p99 = {row[0]: row[2][2] for row in duck_rows}

    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    profile(spark, [str(logs / "consumer-0.log")])  # warm the session and the JIT
    cold_s, document = timed(lambda: profile(spark, [str(logs)]), repeat=2)
    cache = Path(tempfile.mkdtemp(prefix="jobstats-cache-"))
    try:
        fill_s, _ = timed(lambda: profile(spark, [str(logs)], cache_dir=cache), repeat=1)
        hit_s, cached = timed(lambda: profile(spark, [str(logs)], cache_dir=cache))
    finally:
        shutil.rmtree(cache)
    spark.stop()

    print(f"{args.lines:,} lines, {size_mb:.0f} MB, 8 files, {__import__('os').cpu_count()} cores")
    print(f"{'':34} {'seconds':>8} {'lines/s':>11} {'vs DuckDB':>9}")
    for label, seconds in (
        ("DuckDB, exact quantiles", duck_s),
        ("jobstats, cold (parse every file)", cold_s),
        ("jobstats --cache, first run", fill_s),
        ("jobstats --cache, files unchanged", hit_s),
    ):
        print(f"{label:34} {seconds:8.2f} {args.lines / seconds:11,.0f} {duck_s / seconds:8.2f}x")
    print("p99 error vs DuckDB's exact quantile_disc, per job type:")
    for job_type, entry in sorted(document["job_types"].items()):
        error = abs(entry["p99_ms"] - exact_p99[job_type]) / exact_p99[job_type]
        same = entry["p99_ms"] == cached["job_types"][job_type]["p99_ms"]
        print(
            f"   {job_type:15} {entry['p99_ms']:>13,.1f} ms vs {exact_p99[job_type]:>13,.1f} ms: {error:.3%}"
            + ("" if same else "  (cached run differs!)")
        )


if __name__ == "__main__":
    main()
