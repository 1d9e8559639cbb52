"""What the demo measured, and the two tables it ends with: measured vs declared, and one row per job type."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobqueues.profiles_document import PROFILES_FIELD, profile_name
from sqslease.rules import visibility_timeout_for_p99


@dataclass
class JobTypeResult:
    """One row of the summary table."""

    job_type: str
    consumer: str  # "ECS", "Lambda" or "none"
    sent: int = 0
    processed: int = 0  # jobs that completed at least once
    duplicates: int = 0  # completions beyond the first of a job
    concurrent: int = 0  # overlapping runs of one job
    retries: int = 0  # runs beyond the first (failures, kills, redeliveries)
    dead_lettered: int = 0  # jobs of this run found in the DLQ
    extensions: int = 0
    leases_lost: int = 0
    lost: int = 0  # jobs meant to succeed that neither completed nor reached the DLQ
    waiting: int = 0  # no consumer: messages left in the queue
    visibility_timeout_s: int = 0


@dataclass
class DemoResult:
    """What the demo measured (``ok`` says whether every guarantee held)."""

    job_types: dict[str, JobTypeResult]
    long_job: dict[str, Any] = field(default_factory=dict)
    poison: dict[str, Any] = field(default_factory=dict)
    kill: dict[str, Any] = field(default_factory=dict)
    drain: dict[str, Any] = field(default_factory=dict)
    duplicate: dict[str, Any] = field(default_factory=dict)  # empty: the ECS job has no idempotency
    lambda_stats: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    logs_dir: Path = Path()
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        consumers = [r for r in self.job_types.values() if r.consumer != "none"]
        return (
            all(r.lost == 0 and r.duplicates == 0 and r.concurrent == 0 for r in consumers)
            and self.poison.get("in_dlq", False)
            and self.long_job.get("completions") == 1
            and self.long_job.get("extensions", 0) > 0
            and self.duplicate_not_run
        )

    @property
    def duplicate_not_run(self) -> bool:
        """The duplicate delivery ran once and its second delivery was a duplicate (true when it was not shown)."""
        return not self.duplicate or (self.duplicate["runs"] == 1 and self.duplicate["outcomes"][1:] == ["duplicate"])


def format_profile(result: DemoResult) -> str:
    """Measured (jobstats) vs declared, per consumer job type."""
    if not result.profile:
        return ""
    document = result.profile["document"]
    declared = result.profile["declared"]
    header = (
        f"{'job type':<12} {'samples':>7} {'measured p99':>12}  {'declared':<34} {'deployed VT':>11}  "
        f"{'max(2 x measured p99, 10 s)':<28} jobstats"
    )
    lines = ["measured (jobstats) vs declared:", header, "-" * len(header)]
    for job_type, row in sorted(result.job_types.items()):
        if row.consumer == "none":
            continue
        name = profile_name(document[PROFILES_FIELD], result.profile["stack"], job_type)
        entry = None if name is None else document[PROFILES_FIELD][name]
        if entry is None:
            lines.append(
                f"{job_type:<12} {0:>7} {'-':>12}  {declared.get(job_type, ''):<34} {row.visibility_timeout_s:>9} s"
            )
            continue
        p99_s = entry["p99_ms"] / 1000
        recommended = entry.get("recommended_visibility_timeout_s")
        says = f"recommends VT {recommended} s" if recommended else f"no recommendation from {entry['count']} samples"
        lines.append(
            f"{job_type:<12} {entry['count']:>7} {p99_s:>10.2f} s  {declared.get(job_type, ''):<34} "
            f"{row.visibility_timeout_s:>9} s  {'VT ' + str(visibility_timeout_for_p99(p99_s)) + ' s':<28} {says}"
        )
    return "\n".join(lines)


def format_summary(result: DemoResult) -> str:
    """The closing table: one row per job type."""
    header = (
        f"{'job type':<15} {'consumer':<8} {'sent':>5} {'processed':>9} {'duplicates':>10} {'concurrent':>10} "
        f"{'retries':>7} {'DLQ':>4} {'extensions':>10} {'leases lost':>11} {'lost':>4} {'waiting':>7}"
    )
    lines = [header, "-" * len(header)]
    for row in result.job_types.values():
        lines.append(
            f"{row.job_type:<15} {row.consumer:<8} {row.sent:>5} {row.processed:>9} {row.duplicates:>10} "
            f"{row.concurrent:>10} {row.retries:>7} {row.dead_lettered:>4} {row.extensions:>10} "
            f"{row.leases_lost:>11} {row.lost:>4} {row.waiting:>7}"
        )
    return "\n".join(lines)
