"""Realistic sqslease EMF logs: several job types, lognormal durations, failures, redeliveries.

    .venv/bin/python bench/generate_logs.py OUT_DIR --lines 2000000 [--files 8] [--random-state 1]

Lines are written by the real ``sqslease.emf.EmfLogger``. Prints nothing but a summary.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lambda_src"))

from sqslease.emf import EmfLogger


@dataclass(frozen=True)
class JobProfile:
    name: str
    median_ms: float
    sigma: float  # of the underlying normal: the spread of the lognormal
    failure_rate: float
    redelivery_rate: float
    lease_s: float  # lease length: extensions = processing time // (lease - 5 s threshold)
    weight: float


JOB_TYPES = (
    JobProfile("EmailSend", 400, 0.6, 0.02, 0.03, 30, 0.40),
    JobProfile("OrderEvents", 120, 0.5, 0.005, 0.01, 30, 0.25),
    JobProfile("Thumbnails", 2_000, 0.4, 0.01, 0.02, 185, 0.20),
    JobProfile("VideoTranscode", 90_000, 0.5, 0.03, 0.05, 30, 0.10),
    JobProfile("ReportExport", 300_000, 0.9, 0.04, 0.06, 300, 0.05),
)
START_MS = 1_793_000_000_000  # 2026-10-26


def generate(out_dir: Path, lines: int, files: int = 8, random_state: int = 1) -> list[Path]:
    """Write ``lines`` log lines spread over ``files`` files; return the paths."""
    rng = np.random.default_rng(random_state)
    out_dir.mkdir(parents=True, exist_ok=True)
    weights = np.array([j.weight for j in JOB_TYPES])
    kinds = rng.choice(len(JOB_TYPES), size=lines, p=weights / weights.sum())
    paths = []
    per_file = -(-lines // files)
    for f in range(files):
        path = out_dir / f"consumer-{f}.log"
        paths.append(path)
        with path.open("w") as stream:
            emf = EmfLogger(stream)
            for i in range(f * per_file, min((f + 1) * per_file, lines)):
                job = JOB_TYPES[kinds[i]]
                ms = float(rng.lognormal(np.log(job.median_ms), job.sigma))
                failed = rng.random() < job.failure_rate
                redelivered = rng.random() < job.redelivery_rate
                emf.record(
                    job_type=job.name,
                    queue=f"JobQueuesExample-{job.name}",
                    message_id=f"{i:032x}",
                    processing_ms=ms,
                    outcome="failure" if failed else "success",
                    receive_count=int(rng.integers(2, 5)) if redelivered else 1,
                    extensions=int(ms // ((job.lease_s - 5) * 1000)),
                    lease_lost=False,
                    timestamp_ms=START_MS + i * 250,
                )
    return paths


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--random-state", type=int, default=1)
    args = parser.parse_args()
    paths = generate(args.out_dir, args.lines, args.files, args.random_state)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {args.lines:,} lines in {len(paths)} files, {size / 1e6:.0f} MB, to {args.out_dir}")


if __name__ == "__main__":
    main()
