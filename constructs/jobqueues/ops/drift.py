"""``jobqueues drift``: each job type's deployed (or synthesized) visibility timeout against what jobstats
measured (``profiles.json``), and the change to make in stack code.

The expected VT is the one the stack would derive with the measured p99 (:mod:`sqslease.rules`, the rules the
constructs apply): ``max(2 x p99, 10 s)``, and for a Lambda job the larger of that and its timeout rule
(``6 x timeout + batching window``, or ``timeout + window + 10 s`` with lease extension), with its deployed
timeout. A job type **drifted** when its VT is

- below the expected one: messages that run longer than the lease come back while they run (duplicate runs);
- above ``(1 + tolerance)`` times it: a crashed consumer's message waits that long before it is retried.

A Lambda job whose timeout cannot fit a record of the measured p99 (:func:`sqslease.rules.lambda_timeout_for_p99`)
drifted too: its fix is ``timeout=`` (its VT follows), with ``processing_p99=`` only when ``2 x p99`` is still the
larger rule; its expected VT is the one that timeout gives. A queue whose VT differs from its stack's (changed
outside CloudFormation) says so in the reason.

``maxReceiveCount`` below jobstats' recommendation is reported with its fix, without failing: it sends messages that
would succeed to the DLQ, which the DLQ alarm shows. A profile that refuses to recommend (too few samples), a job
type without a profile, and a profile without a deployed job type are listed, never failures.
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
from jobqueues.ops.queues import queue_attributes
from jobqueues.profiles_document import (
    REGENERATE,
    count_problem,
    document_problem,
    kind,
    p99_problem,
    recommended_p99_s,
)
from sqslease.rules import (
    derive_visibility_timeout,
    lambda_timeout_for_p99,
    visibility_timeout_for_lambda,
    visibility_timeout_for_p99,
)

#: Default tolerance above the expected VT (a share: 0.25 is 25 %).
DEFAULT_TOLERANCE = 0.25

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
    """Job type -> profile entry of a jobstats ``profiles.json``; an :class:`OpsError` naming the file (and the job
    type and field) and what is wrong with it, as stack code's ``MeasuredProfiles`` words it."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise OpsError(f"{path} not found: run `python -m jobstats profile LOGS --out {path}` first") from None
    except (OSError, ValueError) as error:
        raise OpsError(f"{path} is not valid JSON ({error}): {REGENERATE}") from None
    problem = document_problem(document, str(path))
    if problem is not None:
        raise OpsError(problem)
    job_types: dict[str, Any] = document["job_types"]
    for job_type, entry in job_types.items():
        if not isinstance(entry, dict):
            raise OpsError(f"{path}: job type {job_type!r} is {kind(entry)}, not an object: {REGENERATE}")
        problem = p99_problem(entry) or count_problem(entry, "recommended_max_receive_count")
        problem = problem or count_problem(entry, "count")
        if problem is not None:
            raise OpsError(f"{path}, job type {job_type!r}: {problem}: {REGENERATE}, or correct the field")
    return job_types


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
    p99_s = recommended_p99_s(entry)
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
    # A Lambda job's VT follows its timeout: a timeout too short for the measured p99 is the first fix, and the
    # expected VT is the one the stack derives once it is made.
    timeout_fix, timeout_problem, needed_timeout = None, None, 0
    if lambda_timeout is not None:
        needed = lambda_timeout_for_p99(p99_s)
        if needed is None:
            timeout_problem = f"a record of the measured p99 {p99_s:g} s cannot fit Lambda's 15 min: use an EcsJob"
        elif needed > lambda_timeout:
            timeout_problem = (
                f"the Lambda timeout {lambda_timeout:g} s cannot fit a record of the measured p99 {p99_s:g} s"
            )
            timeout_fix, lambda_timeout = f"timeout=Duration.seconds({needed})", needed
            needed_timeout = needed
    expected = derive_visibility_timeout(
        processing_p99_s=p99_s,
        lambda_timeout_s=lambda_timeout,
        max_batching_window_s=job.max_batching_window_s,
        lease_extension=job.lease_extension,
    )
    fixes = [timeout_fix] if timeout_fix else []
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
        # the timeout fix alone raises the VT enough unless 2 x p99 is the larger rule
        if timeout_fix is None or visibility_timeout_for_p99(p99_s) > visibility_timeout_for_lambda(
            needed_timeout, job.max_batching_window_s, lease_extension=job.lease_extension
        ):
            fixes.append(p99_fix)
    elif vt > (1 + tolerance) * expected.seconds:
        status = TOO_LONG
        reason = (
            f"VT {vt} s is over {1 + tolerance:g} x the expected {expected.seconds} s: "
            "a crashed consumer's message waits that long"
        )
        fixes.append(p99_fix)
    if timeout_problem is not None:
        reason = timeout_problem if status in (OK, NO_RECOMMENDATION) else f"{timeout_problem}; {reason}"
        status = TOO_SHORT
        if timeout_fix is None:
            fixes.append("EcsJob(...) instead of LambdaJob")
    if vt is not None and job.visibility_timeout_s is not None and vt != math.ceil(job.visibility_timeout_s):
        reason += f" (the stack declares {math.ceil(job.visibility_timeout_s)} s: the queue was changed outside it)"
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
    """The VT and ``maxReceiveCount`` SQS holds for each deployed job type's queue (one call per queue); a queue
    deleted outside its stack reads as unknown (its row: ``no_recommendation``, "could not be read")."""
    found = {}
    for job in job_types:
        if job.queue_url is None:
            continue
        attributes = queue_attributes(sqs, job.queue_url, ["VisibilityTimeout", "RedrivePolicy"])
        if attributes is None:
            found[job.name] = Deployed(None, None)
            continue
        redrive = json.loads(attributes["RedrivePolicy"]) if attributes.get("RedrivePolicy") else {}
        count = redrive.get("maxReceiveCount")
        found[job.name] = Deployed(int(attributes["VisibilityTimeout"]), None if count is None else int(count))
    return found
