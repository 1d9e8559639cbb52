"""The timing rules of a declaration: the visibility timeout derived or checked, the Lambda timing, the lease a
consumer keeps and the longest processing time. Each error names the prop, the value and what to change."""

from __future__ import annotations

import math

from jobqueues.consumer_contract import ConsumerContract
from jobqueues.consumer_rules import check_lambda_timing
from jobqueues.queue_declaration import RuleContext, fmt
from sqslease.rules import (
    DEFAULT_MAX_TOTAL_LEASE_S,
    LAMBDA_MAX_BATCHING_WINDOW_S,
    LAMBDA_MAX_TIMEOUT_S,
    SQS_MAX_VISIBILITY_TIMEOUT_S,
    derive_visibility_timeout,
    lambda_visibility_timeout,
    total_lease_problems,
)
from sqslease.settings import INVALID_SETTINGS


def derivation_inputs(c: RuleContext) -> None:
    d, n = c.d, c.name
    if d.processing_p99 is not None:
        if d.processing_p99 <= 0:
            c.error(
                f"{n('processing_p99')} must be positive (got {fmt(d.processing_p99)}): "
                "declare the measured p99 handler time of one message"
            )
        elif d.processing_p99 > SQS_MAX_VISIBILITY_TIMEOUT_S:
            c.error(
                f"{n('processing_p99')} {fmt(d.processing_p99)} is over 12 h, the longest SQS lets a received "
                "message stay invisible even with lease extension: split the job into steps of under 12 h"
            )
        else:
            c.p99 = d.processing_p99
    if d.lambda_timeout is not None:
        if not 0 < d.lambda_timeout <= LAMBDA_MAX_TIMEOUT_S:
            c.error(
                f"{n('lambda_timeout')} must be between 1 s and 15 min (got {fmt(d.lambda_timeout)}): Lambda "
                "cannot run longer; use an ECS consumer with lease extension for longer jobs"
            )
        else:
            c.timeout = d.lambda_timeout
    window = d.max_batching_window
    if window is not None:
        if not 0 <= window <= LAMBDA_MAX_BATCHING_WINDOW_S:
            c.error(f"{n('max_batching_window')} must be between 0 s and 5 min (got {fmt(window)})")
        elif d.lambda_timeout is None and "lambda_timeout" not in d.tokens:
            c.error(
                f"{n('max_batching_window')} only applies to a Lambda consumer: declare {n('lambda_timeout')} as well"
            )
        else:
            c.window = window
        if d.fifo and window > 0:
            c.error(
                f"{n('max_batching_window')} {fmt(window)} is not supported for FIFO queues (Lambda's SQS event "
                f"source rejects it): remove {n('max_batching_window')} or set fifo=False"
            )


def derived_visibility_timeout(c: RuleContext) -> None:
    d, n = c.d, c.name
    leased_vt = d.lease_extension and (d.visibility_timeout is not None or "visibility_timeout" in d.tokens)
    if c.p99 is not None or c.timeout is not None:
        derived = derive_visibility_timeout(
            processing_p99_s=c.p99,
            lambda_timeout_s=c.timeout,
            max_batching_window_s=c.window or 0,
            lease_extension=d.lease_extension,
        )
        c.result.visibility_timeout = derived
        # With lease extension and an explicit VT, the derived VT is no queue setting: the 12 h limit is then
        # on total processing time (max_processing_time), checked below.
        if derived.seconds > SQS_MAX_VISIBILITY_TIMEOUT_S and not leased_vt:
            c.error(
                f"{derived.rule} gives a visibility timeout of {fmt(derived.seconds)}; SQS allows at most 12 h: "
                "split the job or run it on an ECS consumer with lease extension (lease_extension=True, a "
                "shorter visibility_timeout and max_processing_time of at most 12 h)"
            )
        return
    unknown = [p for p in ("processing_p99", "lambda_timeout") if p in d.tokens]
    explicit_vt = d.visibility_timeout is not None or "visibility_timeout" in d.tokens
    if unknown and not explicit_vt:
        names = " and ".join(n(p) for p in unknown)
        c.error(
            f"{names} is an unresolved token (e.g. a CfnParameter): a visibility timeout cannot be derived from "
            "a value unknown at synth; pass visibility_timeout explicitly, or a Duration known at synth"
        )
    elif not (unknown or leased_vt or d.adopted) and d.processing_p99 is None and d.lambda_timeout is None:
        lambda_basis = "" if d.ecs_consumer else f"or {n('lambda_timeout')} for a Lambda consumer, "
        c.error(
            f"no basis for the visibility timeout: declare {n('processing_p99')} (measured handler p99), "
            f"{lambda_basis}or visibility_timeout with lease_extension=True"
        )


def explicit_visibility_timeout(c: RuleContext) -> None:
    d, n = c.d, c.name
    vt = d.visibility_timeout
    derived = c.result.visibility_timeout
    if vt is None:
        if derived is not None and derived.seconds <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            c.vt = derived.seconds
        return
    if not 0 <= vt <= SQS_MAX_VISIBILITY_TIMEOUT_S:
        c.error(f"visibility_timeout must be between 0 s and 12 h (got {fmt(vt)})")
        return
    vt = math.ceil(vt)  # SQS takes whole seconds
    c.vt = vt
    if derived is not None and vt < derived.seconds and not d.lease_extension:
        c.error(
            f"visibility_timeout {fmt(vt)} is below the derived minimum {fmt(derived.seconds)} "
            f"({derived.rule}): remove visibility_timeout, raise it to at least {fmt(derived.seconds)}, "
            "or set lease_extension=True if the consumer extends its leases"
        )
    if c.timeout is not None and vt < c.timeout:
        c.error(
            f"visibility_timeout {fmt(vt)} is below {n('lambda_timeout')} {fmt(c.timeout)}: Lambda rejects "
            "such an event source mapping; raise visibility_timeout to at least the function timeout"
        )
    elif c.timeout is not None and d.lease_extension:
        # The rule add_lambda_consumer applies to the function too.
        least = lambda_visibility_timeout(c.timeout, c.window or 0, lease_extension=True)
        if vt < least.seconds:
            c.error(
                f"visibility_timeout {fmt(vt)} is below the {fmt(least.seconds)} a Lambda consumer needs "
                f"({least.rule}): raise visibility_timeout to at least {fmt(least.seconds)}"
            )


def lambda_timing(c: RuleContext) -> None:
    if c.timeout is not None:
        for problem in check_lambda_timing(
            c.timeout, processing_p99_s=c.p99, timeout_name=c.name("lambda_timeout"), p99_name=c.name("processing_p99")
        ):
            c.error(problem)


def consumer_lease(c: RuleContext) -> None:
    if c.vt is None:
        return
    # The settings a consumer gets must be ones sqslease accepts: its own validation, run on the contract.
    heartbeat = c.d.lease_extension
    problems = consumer_lease_problems(c.vt, heartbeat=heartbeat)
    if problems:
        shortest = next(s for s in range(1, 61) if not consumer_lease_problems(s, heartbeat=heartbeat))
        c.error(
            f"a lease of visibility_timeout {fmt(c.vt)} cannot be kept by sqslease ({problems[0]}): raise "
            f"visibility_timeout to at least {fmt(shortest)}" + (", or set lease_extension=False" if heartbeat else "")
        )


def consumer_lease_problems(vt_s: float, *, heartbeat: bool) -> list[str]:
    """Why ``sqslease`` refuses the lease settings a consumer of a ``vt_s`` queue gets; empty when none.

    The real ``LeaseSettings`` of the consumer's :class:`jobqueues.consumer_contract.ConsumerContract` is built,
    and its own validation answers: the synth check and the consumer cannot disagree.
    """
    try:
        ConsumerContract.of(
            job_type="check",
            queue_url="",
            dead_letter_queue_url=None,
            visibility_timeout_s=vt_s,
            lease_extension=heartbeat,
        )
    except ValueError as error:
        return str(error).removeprefix(INVALID_SETTINGS).split("; ")
    return []


def max_processing_time(c: RuleContext) -> None:
    d, n = c.d, c.name
    mpt = d.max_processing_time
    if mpt is None:
        return
    if mpt <= 0:
        c.error(f"{n('max_processing_time')} must be positive (got {fmt(mpt)})")
    elif mpt > SQS_MAX_VISIBILITY_TIMEOUT_S:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} exceeds 12 h, the longest SQS lets a received message stay "
            "invisible, even with lease extension: split the job into steps of under 12 h"
        )
    elif c.vt is not None and d.lease_extension and total_lease_problems(DEFAULT_MAX_TOTAL_LEASE_S, mpt, c.vt):
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} plus the visibility timeout {fmt(c.vt)} exceeds the "
            f"{fmt(DEFAULT_MAX_TOTAL_LEASE_S)} a lease can be held from its receive (12 h less a minute): the "
            "message would become visible while its handler may still run; lower max_processing_time to at most "
            f"{fmt(DEFAULT_MAX_TOTAL_LEASE_S - c.vt)} or split the job"
        )
    elif c.vt is not None and mpt > c.vt and not d.lease_extension:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} exceeds the visibility timeout {fmt(c.vt)}: long jobs "
            "would be delivered twice; set lease_extension=True or raise visibility_timeout"
        )
    elif c.p99 is not None and mpt < c.p99:
        c.error(
            f"{n('max_processing_time')} {fmt(mpt)} is below {n('processing_p99')} {fmt(c.p99)}: the longest a "
            "message may take cannot be shorter than the p99; raise it or lower the p99"
        )
