"""``python -m jobstats tenants INPUT... [--out tenants.json] [--since DATE] [--top N] [--master local[*]]``:
the tenants of each deployment, and the noisy ones (:mod:`jobstats.tenants`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

#: Tenants printed per deployment, the busiest first (the noisy ones always).
DEFAULT_TOP = 10


def add_tenants_parser(sub: Any) -> None:
    """The ``tenants`` subcommand's arguments, on ``sub`` (the ``add_subparsers`` of ``python -m jobstats``)."""
    p = sub.add_parser("tenants", help="per tenant (message group): messages, p99, queue time; the noisy ones")
    p.add_argument(
        "inputs", nargs="+", help="log files, directories (read recursively) or globs (gzip, s3a:// paths work)"
    )
    p.add_argument("--out", help="also write the report as JSON here (local path, or s3://, hdfs://)")
    p.add_argument("--since", help="only records on or after this date (UTC), e.g. 2026-11-01")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, help="tenants printed per deployment (noisy ones always)")
    p.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")


def tenants_main(args: argparse.Namespace) -> int:
    """Run ``tenants``: the report on stdout (and in ``--out``); exit 2 on bad input. Spark is imported here: the
    parser is built without it (``python -m jobstats`` says in one line when the extra is missing)."""
    from jobstats.files import InputError
    from jobstats.pipeline import parse_since
    from jobstats.profiles import write_document
    from jobstats.session import spark_session
    from jobstats.tenants import report_lines, tenant_report

    try:
        since_day = parse_since(args.since) if args.since else None
        spark = spark_session(args.master)
        spark.sparkContext.setLogLevel("WARN")
        report = tenant_report(spark, args.inputs, since_day=since_day)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.out:
        write_document(report, args.out, spark)
    for line in report_lines(report, args.top):
        print(line)
    return 0
