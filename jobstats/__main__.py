"""``python -m jobstats profile INPUT... --out profiles.json [--plots DIR] [--since DATE] [--master local[*]]``,
and ``python -m jobstats tenants INPUT...`` (:mod:`jobstats.tenants_cli`).

Also runs unchanged with ``spark-submit jobstats/__main__.py profile ...`` on a cluster (see docs/jobstats.md).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "jobstats"

from jobstats.profiles import summary_line, write_document
from jobstats.recommend import DEFAULT_MIN_SAMPLES
from jobstats.tenants_cli import add_tenants_parser, tenants_main

#: What the extra ``jobstats`` installs (``pip install 'cdk-jobqueues[jobstats]'``), which the README's local
#: install (``[local]``) does not.
EXTRA = "pip install 'cdk-jobqueues[jobstats]'"
EXTRA_MODULES = frozenset({"pyspark", "py4j", "matplotlib", "numpy"})

try:
    from jobstats.pipeline import InputError, parse_since, profile
    from jobstats.session import spark_session

    MISSING: str | None = None
except ModuleNotFoundError as error:  # the extra is not installed: main() says so in one line
    MISSING = (error.name or "").split(".")[0]
    if MISSING not in EXTRA_MODULES:
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobstats")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("profile", help="measure each deployment's processing times and recommend timeouts")
    p.add_argument(
        "inputs", nargs="+", help="log files, directories (read recursively) or globs (gzip, s3a:// paths work)"
    )
    p.add_argument("--out", required=True, help="where to write profiles.json (local path, or s3://, hdfs://)")
    p.add_argument("--plots", type=Path, help="write one PNG per deployment (stack and job type) into this directory")
    p.add_argument("--since", help="only records on or after this date (UTC), e.g. 2026-11-01")
    p.add_argument(
        "--cache", type=Path, help="local directory keeping per-file partial results: unchanged files are not re-read"
    )
    p.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")
    p.add_argument("--min-samples", type=int, default=DEFAULT_MIN_SAMPLES, help="refuse to recommend below this")
    add_tenants_parser(sub)
    args = parser.parse_args(argv)
    if MISSING is not None:
        print(f"error: python -m jobstats needs {MISSING}, which the extra jobstats installs: {EXTRA}", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "tenants":
        return tenants_main(args)

    try:
        since_day = parse_since(args.since) if args.since else None
        spark = spark_session(args.master)
        spark.sparkContext.setLogLevel("WARN")
        document = profile(
            spark,
            args.inputs,
            since_day=since_day,
            cache_dir=args.cache,
            min_samples=args.min_samples,
            plots_dir=args.plots,
        )
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_document(document, args.out, spark)
    report = document["input_report"]
    copies = len(report["duplicate_files"])
    repeating = f", {copies} {'file' if copies == 1 else 'files'} repeating another's records counted once"
    print(
        f"{report['total_lines']:,} lines from {report['files']} files, {report['malformed_lines']:,} malformed"
        + (repeating if copies else "")
        + f"; wrote {args.out}"
        + (f" and plots to {args.plots}" if args.plots else "")
    )
    for name, entry in document["deployments"].items():
        print(summary_line(name, entry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
