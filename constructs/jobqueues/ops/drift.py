"""``jobqueues drift``: each job type's deployed (or synthesized) visibility timeout against what jobstats
measured (``profiles.json``), and the change to make in stack code.

Each deployment is compared with its own profile, ``STACK/JOB_TYPE``: a job type that a Dev and a Prod Stage deploy
is two rows, each on its own samples. A profile of lines that name no stack (``JOB_TYPE`` alone) stands in only where
one deployed stack runs the job type: with two, their samples may both be in it, and neither is compared.

The expected VT is the one the stack would derive with the measured p99 (:mod:`sqslease.rules`, the rules the
constructs apply): ``max(2 x p99, 10 s)``, and for a Lambda job the larger of that and its timeout rule
(``6 x timeout + batching window``, or ``timeout + window + 10 s`` with lease extension), with its deployed
timeout. A job type **drifted** when its VT is

- below the expected one: messages that run longer than the lease come back while they run (duplicate runs);
- above ``(1 + tolerance)`` times it: a crashed consumer's message waits that long before it is retried.

A Lambda job whose timeout cannot fit a record of the measured p99 (:func:`sqslease.rules.lambda_timeout_for_p99`)
drifted too: its fix is ``timeout=`` (its VT follows), with ``processing_p99=`` only when ``2 x p99`` is still the
larger rule; its expected VT is the one that timeout gives. A VT the stack declares above what its numbers derive
(``visibility_timeout=``, an adopted queue's own) does not follow the p99: its fix is ``visibility_timeout=``. A
queue whose VT differs from its stack's (changed outside CloudFormation) says so in the reason.

``maxReceiveCount`` below jobstats' recommendation is reported with its fix, without failing: it sends messages that
would succeed to the DLQ, which the DLQ alarm shows. A profile that refuses to recommend (too few samples), a job
type without a profile, and a profile without a deployed job type are listed, never failures; a profile of a stack
outside ``--stack`` is left out (:func:`jobqueues.ops.profiles.profiles_outside`): its stack was not searched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from jobqueues.ops.discovery import JobType, LambdaConsumer
from jobqueues.ops.duration_code import duration_code
from jobqueues.ops.queues import Deployed, missing_queue
from jobqueues.profiles_document import job_type_of, recommended_p99_s
from sqslease.config import SETTINGS
from sqslease.rules import (
    derive_visibility_timeout,
    lambda_timeout_for_p99,
    visibility_timeout_for_lambda,
    visibility_timeout_for_p99,
)

#: Default tolerance above the expected VT (a share: 0.25 is 25 %).
DEFAULT_TOLERANCE = 0.25

_UNREAD = "the queue's visibility timeout could not be read"

OK, TOO_SHORT, TOO_LONG = "ok", "too_short", "too_long"
NO_RECOMMENDATION, NO_PROFILE, NOT_DEPLOYED = "no_recommendation", "no_profile", "not_deployed"


def no_profile_reason(name: str) -> str:
    """The reason of a deployment ``name`` (``STACK/JOB_TYPE``) that no profile is named after."""
    return f"no profile {name!r} in the profiles document"


@dataclass(frozen=True)
class Drift:
    """One deployed job type against its profile. Durations in seconds; ``fixes`` are lines of stack code to change."""

    name: str  # STACK/JOB_TYPE; a profile not deployed: its name
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
    profile: str | None = None  # the name of the profile compared with

    @property
    def drifted(self) -> bool:
        """The exit-status 1 cases: a VT too short or too long, or a Lambda timeout too short."""
        return self.status in (TOO_SHORT, TOO_LONG)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form: every field above, plus ``drifted``."""
        return {**asdict(self), "drifted": self.drifted}


def _lambda_timeout(job: JobType, p99_s: float) -> tuple[float | None, str | None, str | None, float]:
    """A Lambda job's timeout once fixed (``None``: not a Lambda job), the fix, the problem, and the timeout the
    fix sets (0: none). Its VT follows its timeout: a timeout too short for the measured p99 is the first fix, and
    the expected VT is the one the stack derives once it is made."""
    lambda_timeout = job.lambda_timeout_s
    if lambda_timeout is None and isinstance(job.consumer, LambdaConsumer):
        lambda_timeout = job.consumer.timeout_s
    timeout_fix, timeout_problem, needed_timeout = None, None, 0
    if lambda_timeout is not None:
        needed = lambda_timeout_for_p99(p99_s)
        if needed is None:
            timeout_problem = f"a record of the measured p99 {p99_s:g} s cannot fit Lambda's 15 min: use an EcsJob"
        elif needed > lambda_timeout:
            timeout_problem = (
                f"the Lambda timeout {lambda_timeout:g} s cannot fit a record of the measured p99 {p99_s:g} s"
            )
            timeout_fix, lambda_timeout = f"timeout={duration_code(needed)}", needed
            needed_timeout = needed
    return lambda_timeout, timeout_fix, timeout_problem, needed_timeout


def _verdict(
    vt: int | None,
    expected_s: int,
    tolerance: float,
    p99_s: float,
    job: JobType,
    timeout_fix: str | None,
    needed_timeout: float,
) -> tuple[str, str, list[str]]:
    """The status, reason and fixes of a deployed VT (seconds) against the expected one, before the Lambda
    timeout's problem (:func:`_lambda_timeout`) is added."""
    fixes = [timeout_fix] if timeout_fix else []
    status, reason = OK, f"within {tolerance:.0%} above the expected {expected_s} s"
    p99_fix = f"processing_p99={duration_code(p99_s)}"
    if vt is None:
        status, reason = NO_RECOMMENDATION, _UNREAD
    elif vt < expected_s:
        status = TOO_SHORT
        reason = (
            f"VT {vt} s is below the expected {expected_s} s: "
            "jobs longer than the lease run twice unless a heartbeat extends it"
        )
        # the timeout fix alone raises the VT enough unless 2 x p99 is the larger rule
        if timeout_fix is None or visibility_timeout_for_p99(p99_s) > visibility_timeout_for_lambda(
            needed_timeout, job.max_batching_window_s, lease_extension=job.lease_extension
        ):
            fixes.append(p99_fix)
    elif vt > (1 + tolerance) * expected_s:
        status = TOO_LONG
        reason = (
            f"VT {vt} s is over {1 + tolerance:g} x the expected {expected_s} s: "
            "a crashed consumer's message waits that long"
        )
        fixes.append(p99_fix)
    return status, reason, fixes


def _explicit_visibility_timeout(job: JobType) -> int | None:
    """The VT the stack declares (seconds) when above what its numbers derive (given explicitly, or an adopted
    queue's own); ``None`` when it follows them, or is unknown."""
    if job.visibility_timeout_s is None or (job.processing_p99_s is None and job.lambda_timeout_s is None):
        return None
    declared = math.ceil(job.visibility_timeout_s)
    derived = derive_visibility_timeout(
        processing_p99_s=job.processing_p99_s,
        lambda_timeout_s=job.lambda_timeout_s,
        max_batching_window_s=job.max_batching_window_s,
        lease_extension=job.lease_extension,
    )
    return declared if declared > derived.seconds else None


def compare(job: JobType, entry: Mapping[str, Any] | None, deployed: Deployed, tolerance: float) -> Drift:
    """One job type's drift (pure)."""
    vt, mrc = deployed.visibility_timeout_s, deployed.max_receive_count
    if deployed.missing and job.queue_url is not None:  # nothing to compare: say which queue, and the way back
        gone = missing_queue(job.queue_url, job.adopted)
        row = compare(job, entry, Deployed(None, None), tolerance)
        return replace(row, reason=gone if row.reason == _UNREAD else f"{row.reason}; {gone}")
    base = Drift(
        name=job.name,
        job_type=job.job_type,
        status=NO_PROFILE,
        reason=no_profile_reason(job.name),
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
    lambda_timeout, timeout_fix, timeout_problem, needed_timeout = _lambda_timeout(job, p99_s)
    expected = derive_visibility_timeout(
        processing_p99_s=p99_s,
        lambda_timeout_s=lambda_timeout,
        max_batching_window_s=job.max_batching_window_s,
        lease_extension=job.lease_extension,
    )
    declared = None if job.visibility_timeout_s is None else math.ceil(job.visibility_timeout_s)
    outside = vt is not None and declared is not None and vt != declared  # the queue's VT is not the stack's
    status, reason, fixes = _verdict(vt, expected.seconds, tolerance, p99_s, job, timeout_fix, needed_timeout)
    stack_status = status
    if outside:  # what to change in the stack's code follows the VT it declares, not the queue's
        stack_status, _, fixes = _verdict(
            declared, expected.seconds, tolerance, p99_s, job, timeout_fix, needed_timeout
        )
    if timeout_problem is not None:
        reason = timeout_problem if status in (OK, NO_RECOMMENDATION) else f"{timeout_problem}; {reason}"
        status = stack_status = TOO_SHORT
        if timeout_fix is None:
            fixes.append("EcsJob(...) instead of LambdaJob")
    explicit_vt = _explicit_visibility_timeout(job)
    if explicit_vt is not None and stack_status in (TOO_SHORT, TOO_LONG):  # kept over what the p99 derives
        unchanged = f"processing_p99={duration_code(p99_s)}" if p99_s == job.processing_p99_s else None
        fixes = [*(f for f in fixes if f != unchanged), f"visibility_timeout={duration_code(expected.seconds)}"]
        reason += (
            f" (the stack declares visibility_timeout {explicit_vt} s, which its p99 does not change: make every "
            "change listed together)"
        )
    if outside:
        reason += (
            f" (from_queue_attributes declares {declared} s: the queue's owner changed it; have the owner set it "
            "back, or declare what it is)"
            if job.adopted
            else f" (the stack declares {declared} s: the queue was changed outside it; a deploy of the stack sets "
            "it back)"
        )
    if isinstance(recommended_mrc, int) and mrc is not None and mrc < recommended_mrc:
        fixes.append(
            f"maxReceiveCount {recommended_mrc} in the queue's redrive policy, by its owner"
            if job.adopted
            else f"max_receive_count={recommended_mrc}"
        )
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
    """Every deployed job type against its own profile (``profiles`` by name, ``STACK/JOB_TYPE``; ``deployed`` keyed
    by ``JobType.name``, a job type missing from it takes its template's numbers), then the profiles not compared."""
    rows, used = [], set()
    for job in job_types:
        numbers = deployed.get(job.name)
        if numbers is None:
            vt = None if job.visibility_timeout_s is None else math.ceil(job.visibility_timeout_s)
            numbers = Deployed(vt, job.max_receive_count)
        name, note = _profile_of(job, job_types, profiles)
        row = compare(job, profiles.get(name) if name else None, numbers, tolerance)
        if name is not None:
            used.add(name)
            row = replace(row, profile=name, reason=f"{row.reason} {note}".rstrip())
        elif note:
            row = replace(row, reason=note)
        rows.append(row)
    rows += [
        Drift(
            name=name,
            job_type=job_type_of(name, profiles[name]),
            status=NOT_DEPLOYED,
            reason="in the profiles, not in the stacks searched"
            if "/" in name or not any(j.job_type == name for j in job_types)
            else "names no stack, and several stacks searched run it: compared with none",
        )
        for name in sorted(set(profiles) - used)
    ]
    return rows


def _profile_of(job: JobType, job_types: Sequence[JobType], profiles: Mapping[str, Any]) -> tuple[str | None, str]:
    """The name of the profile ``job`` is compared with, and what to add to its reason: its own, else one of
    lines that name no stack when no other deployed stack runs the job type; else none, and why."""
    if job.name in profiles:
        return job.name, ""
    if job.job_type not in profiles:
        return None, ""
    stacks = sorted(j.stack for j in job_types if j.job_type == job.job_type)
    if len(stacks) == 1:
        return job.job_type, f"(profile {job.job_type!r}: lines that name no stack)"
    return None, (
        f"no profile {job.name!r}; the profile {job.job_type!r} names no stack and {len(stacks)} deployed stacks run "
        f"{job.job_type} ({', '.join(stacks)}): profile logs of consumers that write their stack (sqslease's "
        f"{SETTINGS['stack'].variable})"
    )
