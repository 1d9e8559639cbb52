"""``jobqueues drift``: each job type's deployed (or synthesized) visibility timeout against what jobstats
measured (``profiles.json``), and the change to make in stack code.

The expected VT is the one the stack would derive with the measured p99 (:mod:`sqslease.rules`, the rules the
constructs apply): ``max(2 x p99, 10 s)``, and for a Lambda job the larger of that and its timeout rule
(``6 x timeout + batching window``, or ``timeout + window + 10 s`` with lease extension), with its deployed
timeout. A job type **drifted** when its VT is

- below the expected one: messages that run longer than the lease come back while they run (duplicate runs);
- above ``(1 + tolerance)`` times it: a crashed consumer's message waits that long before it is retried.

A Lambda job whose timeout cannot fit a record of the measured p99 (:func:`sqslease.rules.lambda_timeout_for_p99`)
drifted too. ``maxReceiveCount`` below jobstats' recommendation is reported with its fix, without failing: it sends
messages that would succeed to the DLQ, which the DLQ alarm shows. A profile that refuses to recommend (too few
samples), a job type without a profile, and a profile without a deployed job type are listed, never failures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from jobqueues.ops.discovery import JobType, LambdaConsumer
from jobqueues.ops.errors import OpsError
from sqslease.rules import derive_visibility_timeout, lambda_timeout_for_p99

#: Default tolerance above the expected VT (a share: 0.25 is 25 %).
DEFAULT_TOLERANCE = 0.25
SUPPORTED_SCHEMA_VERSION = 1

OK, TOO_SHORT, TOO_LONG = "ok", "too_short", "too_long"
NO_RECOMMENDATION, NO_PROFILE, NOT_DEPLOYED = "no_recommendation", "no_profile", "not_deployed"


@dataclass(frozen=True)
class Deployed:
    """What SQS holds for a queue: its VT (s) and ``maxReceiveCount``; ``None`` when unknown."""

    visibility_timeout_s: int | None
    max_receive_count: int | None


@dataclass(frozen=True)
class Drift:
    """One job type against its profile. Durations in seconds; ``fixes`` are lines of stack code to change."""

    name: str  # STACK/JOB_TYPE, or the job type alone when not deployed
    job_type: str
    status: str  # ok, too_short, too_long, no_recommendation, no_profile, not_deployed
    reason: str
    visibility_timeout_s: int | None = None
    expected_visibility_timeout_s: int | None = None
    rule: str | None = None
    declared_p99_s: float | None = None
    measured_p99_s: float | None = None
    samples: int | None = None
    max_receive_count: int | None = None
    recommended_max_receive_count: int | None = None
    fixes: list[str] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        """The exit-status 1 cases: a VT too short or too long, or a Lambda timeout too short."""
        return self.status in (TOO_SHORT, TOO_LONG)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form: every field above, plus ``drifted``."""
        return {**asdict(self), "drifted": self.drifted}


def load_profiles(path: Path) -> dict[str, dict[str, Any]]:
    """Job type -> profile entry of a jobstats ``profiles.json``; an :class:`OpsError` naming the file and what is
    wrong with it."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise OpsError(f"{path} not found: run `python -m jobstats profile LOGS --out {path}` first") from None
    except (OSError, ValueError) as error:
        raise OpsError(f"{path} is not a JSON file ({error}): regenerate it with jobstats") from None
    if not isinstance(document, dict) or document.get("schema_version") != SUPPORTED_SCHEMA_VERSION:
        version = document.get("schema_version") if isinstance(document, dict) else None
        raise OpsError(
            f"{path} is not a jobstats profiles document of schema_version {SUPPORTED_SCHEMA_VERSION} "
            f"(found {version!r}): regenerate it with `python -m jobstats profile`"
        )
    job_types = document.get("job_types")
    if not isinstance(job_types, dict) or not all(isinstance(v, dict) for v in job_types.values()):
        raise OpsError(f"{path} has no job_types object of profiles: regenerate it with `python -m jobstats profile`")
    return job_types


def _number(entry: Mapping[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _millis(seconds: float) -> int:
    return math.ceil(round(seconds * 1000, 6))


def compare(job: JobType, entry: Mapping[str, Any] | None, deployed: Deployed, tolerance: float) -> Drift:
    """One job type's drift (pure)."""
    vt, mrc = deployed.visibility_timeout_s, deployed.max_receive_count
    base = Drift(
        name=job.name,
        job_type=job.job_type,
        status=NO_PROFILE,
        reason="no profile for this job type in the profiles document",
        visibility_timeout_s=vt,
        declared_p99_s=job.processing_p99_s,
        max_receive_count=mrc,
    )
    if entry is None:
        return base
    samples = entry.get("count")
    p99_s = _number(entry, "recommended_processing_p99_s")
    recommended_mrc = entry.get("recommended_max_receive_count")
    base = replace(
        base,
        measured_p99_s=p99_s,
        samples=samples if isinstance(samples, int) else None,
        recommended_max_receive_count=recommended_mrc if isinstance(recommended_mrc, int) else None,
    )
    if p99_s is None:
        reason = str(entry.get("refused") or "the profile has no recommended_processing_p99_s")
        return replace(base, status=NO_RECOMMENDATION, reason=reason)
    lambda_timeout = job.lambda_timeout_s
    if lambda_timeout is None and isinstance(job.consumer, LambdaConsumer):
        lambda_timeout = job.consumer.timeout_s
    expected = derive_visibility_timeout(
        processing_p99_s=p99_s,
        lambda_timeout_s=lambda_timeout,
        max_batching_window_s=job.max_batching_window_s,
        lease_extension=job.lease_extension,
    )
    fixes: list[str] = []
    status, reason = OK, f"within {tolerance:.0%} above the expected {expected.seconds} s"
    p99_fix = f"processing_p99=Duration.millis({_millis(p99_s)})"
    if vt is None:
        status, reason = NO_RECOMMENDATION, "the queue's visibility timeout could not be read"
    elif vt < expected.seconds:
        status = TOO_SHORT
        reason = (
            f"VT {vt} s is below the expected {expected.seconds} s: "
            "jobs longer than the lease run twice unless a heartbeat extends it"
        )
        fixes.append(p99_fix)
    elif vt > (1 + tolerance) * expected.seconds:
        status = TOO_LONG
        reason = (
            f"VT {vt} s is over {1 + tolerance:g} x the expected {expected.seconds} s: "
            "a crashed consumer's message waits that long"
        )
        fixes.append(p99_fix)
    if lambda_timeout is not None:
        needed = lambda_timeout_for_p99(p99_s)
        if needed is None or needed > lambda_timeout:
            status = TOO_SHORT
            reason = f"the Lambda timeout {lambda_timeout:g} s cannot fit a record of the measured p99 {p99_s:g} s" + (
                "" if needed is not None else ": beyond Lambda's 15 min, use an EcsJob"
            )
            fixes.append(f"timeout=Duration.seconds({needed})" if needed is not None else "an EcsJob")
    if isinstance(recommended_mrc, int) and mrc is not None and mrc < recommended_mrc:
        fixes.append(f"max_receive_count={recommended_mrc}")
    return replace(
        base,
        status=status,
        reason=reason,
        expected_visibility_timeout_s=expected.seconds,
        rule=expected.rule,
        fixes=fixes,
    )


def compare_all(
    job_types: Sequence[JobType],
    profiles: Mapping[str, Mapping[str, Any]],
    deployed: Mapping[str, Deployed],
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[Drift]:
    """Every job type against its profile (``deployed`` keyed by ``JobType.name``; a job type missing from it
    takes its template's numbers), then the profiles no job type has."""
    rows = []
    for job in job_types:
        numbers = deployed.get(job.name)
        if numbers is None:
            vt = None if job.visibility_timeout_s is None else math.ceil(job.visibility_timeout_s)
            numbers = Deployed(vt, job.max_receive_count)
        rows.append(compare(job, profiles.get(job.job_type), numbers, tolerance))
    names = {job.job_type for job in job_types}
    rows += [
        Drift(name=name, job_type=name, status=NOT_DEPLOYED, reason="in the profiles, not in the stacks searched")
        for name in sorted(set(profiles) - names)
    ]
    return rows


def read_deployed(sqs: Any, job_types: Sequence[JobType]) -> dict[str, Deployed]:
    """The VT and ``maxReceiveCount`` SQS holds for each deployed job type's queue (one call per queue)."""
    found = {}
    for job in job_types:
        if job.queue_url is None:
            continue
        names = ["VisibilityTimeout", "RedrivePolicy"]
        attributes = sqs.get_queue_attributes(QueueUrl=job.queue_url, AttributeNames=names)["Attributes"]
        redrive = json.loads(attributes["RedrivePolicy"]) if attributes.get("RedrivePolicy") else {}
        count = redrive.get("maxReceiveCount")
        found[job.name] = Deployed(int(attributes["VisibilityTimeout"]), None if count is None else int(count))
    return found
