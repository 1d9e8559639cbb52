"""The worker over the sum of its parts, each side measured in a process of its own, started for it.

Measured in the benchmark's one long process, the ratio moved by a third from run to run of the same code (1.44x to
1.89x at concurrency 4 in one sitting): each figure there runs after the others, in a heap they grew. Here each round
starts two processes, one after the other: one runs the worker (``runtime_bench.cpu_worker``, on a fake that keeps
no record of its calls, after a warm-up run), the other times its parts (``runtime_breakdown.parts_sums``, on the
same fake, at the messages a receive that worker had, rounded as the one-process figures round them, after a warm-up
pass). The ratio is the median of the rounds'. Steadier than the one-process figure on a quiet machine, though a
single run can still land high (docs/benchmarks.md, "The worker's own calls cut"); under load both move.

Used by ``bench/runtime_bench.py``; run alone: ``.venv/bin/python bench/fresh_worker.py [CONCURRENCY] [ROUNDS]``
(defaults 4 and 5; 20,000 messages a worker). A round's two processes run this file as ``worker CONCURRENCY
MESSAGES`` and ``parts PER_RECEIVE``, each printing its figures as one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARM_UP = 2_000  # messages the worker runs before the measured run, in the same process


@dataclass(frozen=True)
class Round:
    """One round: the worker's CPU per message (µs), its messages a receive, and its parts' sum at those."""

    worker_us: float
    per_receive: int
    parts_us: float

    @property
    def ratio(self) -> float:
        return self.worker_us / self.parts_us


def _child(*args: str) -> list[float]:
    """Run this module's ``main`` in a new interpreter; its one line of JSON."""
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"fresh_worker.py {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return [float(value) for value in json.loads(done.stdout)]


def rounds(concurrency: int, messages: int, count: int) -> list[Round]:
    """``count`` rounds of a fresh worker process of ``messages`` messages, then a fresh parts process."""
    measured = []
    for _ in range(count):
        worker_us, per_receive = _child("worker", str(concurrency), str(messages))
        rounded = round(per_receive)
        (parts_us,) = _child("parts", str(rounded))
        measured.append(Round(worker_us, rounded, parts_us))
    return measured


def summary(concurrency: int, measured: list[Round]) -> str:
    """The line ``runtime_bench`` prints."""
    ratios = [r.ratio for r in measured]
    return (
        f"      in fresh processes ({len(measured)} rounds of two): worker "
        f"{statistics.median(r.worker_us for r in measured):.2f} us/message, its parts "
        f"{statistics.median(r.parts_us for r in measured):.2f} at "
        f"{statistics.median(r.per_receive for r in measured):g} a receive -> {statistics.median(ratios):.2f}x "
        f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)"
    )


def main(argv: list[str]) -> None:
    """A child's work: ``worker CONCURRENCY MESSAGES`` or ``parts PER_RECEIVE``; or, with no such word, the
    rounds at ``CONCURRENCY`` (default 4) and their summary."""
    root = HERE.parent
    sys.path[:0] = [str(HERE), str(root / "lambda_src"), str(root / "tests")]
    if argv[:1] == ["worker"]:
        import runtime_bench

        from sqslease.emf import EmfLogger

        concurrency, messages = int(argv[1]), int(argv[2])
        with open(os.devnull, "w") as devnull:
            emf = EmfLogger(devnull)
            runtime_bench.cpu_worker(WARM_UP, concurrency, emf, record=False)
            worker_us, sqs, _ = runtime_bench.cpu_worker(messages, concurrency, emf, record=False)
        print(json.dumps([worker_us, messages / sqs.count("ReceiveMessage")]))
    elif argv[:1] == ["parts"]:
        from runtime_breakdown import parts_sums

        per_receive = int(argv[1])
        parts_sums(per_receive, rounds=1, record=False)
        print(json.dumps([parts_sums(per_receive, rounds=5, record=False)[0]]))
    else:
        parser = argparse.ArgumentParser(description="The worker over the sum of its parts, in fresh processes.")
        parser.add_argument("concurrency", nargs="?", type=int, default=4, help="the worker's handlers (default 4)")
        parser.add_argument("rounds", nargs="?", type=int, default=5, help="rounds of two processes (default 5)")
        args = parser.parse_args(argv)
        print(summary(args.concurrency, rounds(args.concurrency, 20_000, args.rounds)))


if __name__ == "__main__":
    main(sys.argv[1:])
