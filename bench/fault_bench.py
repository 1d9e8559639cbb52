"""sqslease under faults, the long, repeated runs. Run: `.venv/bin/python bench/fault_bench.py [--runs N] [--jobs N]`.

Each run is one fleet (tests/support/fleet.py) of two queues with the same faults and kills: one consumed with
idempotency on (a DynamoDB table on moto_server), one without. Worker processes behind a proxy that faults
``rate`` of SQS and ``dynamodb-rate`` of DynamoDB requests (throttling, 500s, delays, held answers; DynamoDB also
dropped requests) and answers ``redeliver-rate`` of deletes without applying them (the message comes back, as a
standard queue's at-least-once delivery may bring it), killed with kill -9 and SIGTERM at random, on jobs of which
25 % outlast the 4 s lease. Prints, per run and in total: jobs lost, run on two live handlers, completed twice,
re-run after a kill -9 between success and settle, duplicates against their budget, requests faulted.

Then the request cost of a message, counted on the proxy: the same two-queue fleet without faults or kills, so a
message's requests are its own (``--jobs`` per queue). ``--heartbeat-off`` adds the older baseline: one queue with
the heartbeat off (its overlaps show the check can fail).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests")]

from support.fleet import FleetConfig, FleetReport, run_fleet  # noqa: E402

from jobqueues.emulator.server import running_server  # noqa: E402


def row(run: int, report: FleetReport) -> str:
    return (
        f"| {run} | {'on' if report.idempotent else 'off'} | {report.jobs} | {len(report.lost)} | "
        f"{len(report.overlaps)} | {len(report.completed_twice)} | {len(report.rerun_after_kill)} | "
        f"{len(report.completion_unwritten)} | {report.records_lapsed} | {report.completions_not_written} | "
        f"{report.redelivered} | {report.kills} + {report.sigterms} | "
        f"{report.duplicates} ({report.duplicate_budget}) | "
        f"{report.faults}/{report.requests} | {report.dynamodb_faults}/{report.dynamodb_requests} |"
    )


def cost_table(reports: list[FleetReport]) -> None:
    on, off = reports
    print("\n| requests per job | idempotency on | off |\n| --- | ---: | ---: |")
    for operation in sorted(set(on.operations) | set(off.operations)):
        print(
            f"| {operation} | {on.operations.get(operation, 0) / on.jobs:.2f} | "
            f"{off.operations.get(operation, 0) / off.jobs:.2f} |"
        )
    on_sqs, on_dynamodb = on.per_message()
    off_sqs, off_dynamodb = off.per_message()
    print(f"| SQS | {on_sqs:.2f} | {off_sqs:.2f} |")
    print(f"| DynamoDB | {on_dynamodb:.2f} | {off_dynamodb:.2f} |")
    print(f"| all | {on_sqs + on_dynamodb:.2f} | {off_sqs + off_dynamodb:.2f} |")
    print(f"ratio of all requests, on / off: {(on_sqs + on_dynamodb) / (off_sqs + off_dynamodb):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=200, help="jobs per queue and run")
    parser.add_argument("--rate", type=float, default=0.2, help="share of SQS requests faulted")
    parser.add_argument("--dynamodb-rate", type=float, default=0.2, help="share of DynamoDB requests faulted")
    parser.add_argument("--redeliver-rate", type=float, default=0.2, help="share of deletes lost")
    parser.add_argument("--workers", type=int, default=2, help="per queue")
    parser.add_argument("--random-state", type=int, default=7, help="of the first run; each next run adds 1")
    parser.add_argument("--heartbeat-off", action="store_true", help="also run the heartbeat-off baseline")
    args = parser.parse_args()
    config = FleetConfig(
        jobs=args.jobs,
        workers=args.workers,
        fault_rate=args.rate,
        dynamodb_fault_rate=args.dynamodb_rate,
        redeliver_rate=args.redeliver_rate,
        idempotent=(True, False),
        kill_every_s=4,
        deadline_s=900,
    )
    header = (
        "| run | idempotency | jobs | lost | two live handlers | completed twice | re-run after kill -9 "
        "| completed twice, completion not written | records not extended | completions not written | deletes lost "
        "| kill -9 + SIGTERM | duplicate runs (budget) | SQS faulted | DynamoDB faulted |\n"
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    rows: list[str] = []
    totals = {True: [0] * 9, False: [0] * 9}
    with running_server() as server:
        for run in range(1, args.runs + 1):
            reports = run_fleet(server, dataclasses.replace(config, random_state=args.random_state + run - 1))
            for report in reports:
                print(f"run {run}: {report.summary()}", flush=True)
                if report.violations():
                    print(f"   VIOLATIONS: {report.violations()}")
                rows.append(row(run, report))
                counts = [report.jobs, len(report.lost), len(report.overlaps), len(report.completed_twice)]
                counts += [len(report.rerun_after_kill), len(report.completion_unwritten), report.redelivered]
                counts += [report.records_lapsed, report.completions_not_written]
                totals[report.idempotent] = [a + b for a, b in zip(totals[report.idempotent], counts, strict=True)]
        quiet = dataclasses.replace(
            config, fault_rate=0, dynamodb_fault_rate=0, redeliver_rate=0, kill_every_s=10_000, deadline_s=600
        )
        cost = run_fleet(server, quiet)
        for report in cost:
            print(f"no faults: {report.summary()}")
        off = None
        if args.heartbeat_off:
            off = run_fleet(server, dataclasses.replace(config, jobs=40, heartbeat=False, idempotent=(False,)))[0]
    print("\n" + header + "\n" + "\n".join(rows))
    for idempotent, (
        jobs,
        lost,
        overlaps,
        twice,
        after_kill,
        unwritten,
        redelivered,
        lapsed,
        not_written,
    ) in totals.items():
        print(
            f"total, idempotency {'on' if idempotent else 'off'}: {jobs} jobs, {lost} lost, {overlaps} on two live "
            f"handlers, {twice} completed twice, {after_kill} re-run after a kill -9 before settle, {unwritten} "
            f"completed twice after a completion not written, {lapsed} records not extended, {not_written} "
            f"completions not written, {redelivered} deletes lost"
        )
    print("\nRequest cost, the same fleet without faults or kills:")
    cost_table(cost)
    if off is not None:
        print(f"\nheartbeat off (baseline): {off.summary()}\n   violations: {off.violations() or 'none'}")


if __name__ == "__main__":
    main()
