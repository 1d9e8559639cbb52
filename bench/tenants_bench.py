"""What ``python -m jobstats tenants`` costs for its distinct-message count: three variants of the tenants pass
over the same logs, alternated round by round on one warm SparkSession.

    nice -n 10 .venv/bin/python bench/tenants_bench.py [--lines 400000] [--tenants 1001] [--files 4] [--rounds 3]

- ``runs only``: the per-tenant partials alone (what the pass computed when it counted runs, not messages);
- ``report``: :func:`jobstats.tenants.tenant_report`: the partials and the distinct messages, two aggregations,
  each reading the files;
- ``persisted``: the same two aggregations over the parsed lines kept (``MEMORY_AND_DISK``) between them.

Lines are written by the real ``sqslease.emf.EmfLogger``: one tenant sends a tenth of the messages, 5 % of the
messages run twice, the second run in the next file (a redelivery to another consumer). Prints each round's
seconds, then per variant the median and the spread, the medians' ratio to ``runs only``, and the median and
range of its ratios to ``runs only`` round by round (the load moves between rounds more than within one).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lambda_src"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.storagelevel import StorageLevel

from jobstats.files import list_files
from jobstats.parse import read_json, records
from jobstats.session import size_input_partitions, spark_session
from jobstats.tenants import TENANT_SCHEMA, distinct_messages, tenant_partials, tenant_report
from sqslease.emf import EmfLogger

START_MS = 1_795_000_000_000


def generate(out_dir: Path, lines: int, tenants: int, files: int) -> None:
    """``lines`` lines over ``files`` files (see the module)."""
    rng = random.Random(28)
    streams = [(out_dir / f"consumer-{f}.log").open("w") for f in range(files)]
    loggers = [EmfLogger(stream) for stream in streams]
    for i in range(lines):
        group = "flood" if rng.random() < 0.1 else f"tenant-{rng.randrange(tenants - 1)}"
        runs = 2 if rng.random() < 0.05 else 1
        for run in range(runs):
            loggers[(i + run) % files].record(
                job_type="Reports", stack="Dev", queue="Dev-Reports", message_id=f"m-{i}",
                processing_ms=rng.lognormvariate(4, 0.6), outcome="success" if run == runs - 1 else "failure",
                receive_count=run + 1, extensions=0, lease_lost=False, timestamp_ms=START_MS + i,
                queue_ms=rng.uniform(10, 5000), group=group,
            )  # fmt: skip
    for stream in streams:
        stream.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=400_000)
    parser.add_argument("--tenants", type=int, default=1001)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        logs = Path(scratch)
        generate(logs, args.lines, args.tenants, args.files)
        spark = spark_session("local[2]")
        spark.sparkContext.setLogLevel("WARN")
        files = list(list_files(spark, [str(logs)]).values())
        size_input_partitions(spark, sum(f.size for f in files))

        def lines() -> object:
            return records(read_json(spark, files, TENANT_SCHEMA))

        def persisted() -> object:
            kept = lines().persist(StorageLevel.MEMORY_AND_DISK)  # type: ignore[attr-defined]
            try:
                return tenant_partials(kept).collect(), distinct_messages(kept).collect()
            finally:
                kept.unpersist()

        variants: dict[str, Callable[[], object]] = {
            "runs only": lambda: tenant_partials(lines()).collect(),  # type: ignore[arg-type]
            "report": lambda: tenant_report(spark, [str(logs)]),
            "persisted": persisted,
        }
        tenant_report(spark, [str(logs)])  # warm the JVM
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        for round_ in range(args.rounds):
            for name, run in variants.items() if round_ % 2 == 0 else reversed(variants.items()):
                started = time.perf_counter()
                run()
                seconds[name].append(time.perf_counter() - started)
            print(f"round {round_ + 1}: " + ", ".join(f"{n} {s[-1]:.2f} s" for n, s in seconds.items()))
    base = statistics.median(seconds["runs only"])
    print(f"{args.lines:,} messages, {args.tenants:,} tenants, {args.files} files, load {os.getloadavg()[0]:.2f}")
    for name, values in seconds.items():
        median = statistics.median(values)
        ratios = sorted(v / b for v, b in zip(values, seconds["runs only"], strict=True))
        print(
            f"{name:<11} median {median:.2f} s (min {min(values):.2f}, max {max(values):.2f}), x{median / base:.2f}; "
            f"per round over runs only: median x{statistics.median(ratios):.2f} (x{ratios[0]:.2f}-x{ratios[-1]:.2f})"
        )


if __name__ == "__main__":
    main()
