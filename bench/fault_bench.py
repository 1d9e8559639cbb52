"""sqslease under faults, the long run. Run: `.venv/bin/python bench/fault_bench.py [--jobs N] [--rate R]`.

Worker processes behind a proxy that answers ``rate`` of SQS requests with real throttling and 500 responses, or
delays or holds them, killed with kill -9 and SIGTERM at random, on hundreds of jobs (30 % longer than the
3 s lease). The same fleet with the heartbeat off is the baseline, run in the same process. Prints exact counts:
jobs, runs, duplicates against the kills x concurrency budget, overlapping runs (two live handlers at once),
lost messages, and requests faulted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests")]

from test_fault_injection import FleetConfig, run_fleet  # noqa: E402

from local_emulator.server import running_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rate", type=float, default=0.2, help="share of requests faulted")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--random-state", type=int, default=7)
    args = parser.parse_args()
    config = FleetConfig(
        jobs=args.jobs,
        workers=args.workers,
        fault_rate=args.rate,
        random_state=args.random_state,
        kill_every_s=4,
        deadline_s=600,
    )
    baseline = dataclasses.replace(config, jobs=max(args.jobs // 10, 10), heartbeat=False, deadline_s=60)
    with running_server() as server:
        on = run_fleet(server, config)
        print(f"heartbeat on:  {on.summary()}")
        off = run_fleet(server, baseline)
        print(f"heartbeat off: {off.summary()}")
    print(f"   violations with the heartbeat: {on.violations() or 'none'}")
    print(f"   violations without (baseline): {off.violations() or 'none'}")
    overlap_rate_off = len(off.overlaps) / off.jobs
    overlap_rate_on = len(on.overlaps) / on.jobs
    print(f"   jobs run on two live handlers at once: {overlap_rate_on:.1%} with, {overlap_rate_off:.1%} without")
    print(json.dumps({"on": dataclasses.asdict(on), "off": dataclasses.asdict(off)}, default=str))


if __name__ == "__main__":
    main()
