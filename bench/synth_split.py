"""Where `synth_bench`'s CPU goes: Python and the Node kernel, while constructing and at synth, for both apps.

Run: `.venv/bin/python bench/synth_split.py [--job-types 50] [--pairs 16]` (with `CDK_VALIDATION=false` to leave
aws-cdk-lib's CloudFormation validation out). Builds `synth_bench`'s two apps alternately in one process (which
runs first alternates too), after two warm-up rounds of both at the same size, and prints the median CPU seconds
of each part and the median of the pairs' ratios. The kernel's CPU is read from /proc in clock ticks (10 ms), so a
part needs many pairs to say much. For the kernel's own profile, give jsii a `JSII_NODE` wrapper that runs
`node --cpu-prof --cpu-prof-dir=DIR "$@"` (Node refuses `--cpu-prof` in `NODE_OPTIONS`; the kernel, a child of
jsii's wrapper process, gets it through `execArgv`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth_bench

PARTS = ("Python constructing", "kernel constructing", "Python at synth", "kernel at synth")


def split(build: Callable[[int], object], n: int) -> tuple[float, float, float, float]:
    """CPU seconds of :data:`PARTS` for one construct + synth of ``n`` job types."""
    kernel, python = synth_bench.kernel_cpu_s(), time.process_time()
    app = build(n)
    kernel_built, python_built = synth_bench.kernel_cpu_s(), time.process_time()
    app.synth()  # type: ignore[attr-defined]
    kernel_done, python_done = synth_bench.kernel_cpu_s(), time.process_time()
    return python_built - python, kernel_built - kernel, python_done - python_built, kernel_done - kernel_built


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-types", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=16)
    args = parser.parse_args()
    apps = {"jobqueues": synth_bench.with_jobqueues, "hand-written": synth_bench.hand_written}
    for _ in range(2):
        for build in apps.values():
            split(build, args.job_types)
    parts: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in apps}
    for pair in range(args.pairs):
        for name in list(apps) if pair % 2 == 0 else list(apps)[::-1]:
            parts[name].append(split(apps[name], args.job_types))
    for name, runs in parts.items():
        medians = [statistics.median(part) for part in zip(*runs, strict=True)]
        total = statistics.median(sum(run) for run in runs)
        shown = ", ".join(f"{label} {value:.3f} s" for label, value in zip(PARTS, medians, strict=True))
        print(f"{name}: {shown}; all {total:.3f} s")
    ratios = sorted(
        sum(ours) / sum(theirs) for ours, theirs in zip(parts["jobqueues"], parts["hand-written"], strict=True)
    )
    print(
        f"CPU ratio {statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}x), "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
