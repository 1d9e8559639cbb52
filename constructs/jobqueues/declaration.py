"""A job type's queue declaration, validated by a table of rules (as aws-cdk-lib's ``validate-queue-props.ts``):
:func:`check_declaration` runs :data:`RULES` in order and returns every error and warning at once. No rule stops
the others, but their order matters: a rule may resolve a value (the p99, the Lambda timing, the visibility
timeout, on :class:`~jobqueues.queue_declaration.RuleContext`) that the later ones read.

Pure Python (no aws_cdk) so every rule runs and is tested without the CDK's Node kernel. The rules live beside
this module by concern: :mod:`jobqueues.timing_rules`, :mod:`jobqueues.queue_rules` and
:mod:`jobqueues.queue_option_rules`; the declaration and the result in :mod:`jobqueues.queue_declaration`.
:func:`jobqueues.plan.plan_job_queue` turns a checked declaration into the values its queues get.

Unresolved tokens (a ``CfnParameter``, an imported value) are not known at synth: they are never checked, and
a visibility timeout is never derived from one. An explicit ``visibility_timeout`` token is used as given.
"""

from __future__ import annotations

from collections.abc import Callable

from jobqueues.payload_rules import payload_bucket
from jobqueues.queue_declaration import CheckResult, QueueDeclaration, RuleContext, in_flight_threshold
from jobqueues.queue_option_rules import (
    delay_within_retention,
    delivery_delay,
    fair_queue,
    fifo_high_throughput,
    message_size,
    removal_policies,
)
from jobqueues.queue_rules import (
    alarm_thresholds,
    fifo_and_names,
    fifo_lambda_retries,
    queue_time_slo,
    resolve_visibility_timeout,
    retries_and_retention,
    time_to_drain_bound,
)
from jobqueues.timing_rules import (
    consumer_lease,
    consumer_lease_problems,
    derivation_inputs,
    derived_visibility_timeout,
    explicit_visibility_timeout,
    lambda_timing,
    max_processing_time,
)

__all__ = [
    "RULES",
    "CheckResult",
    "QueueDeclaration",
    "check_declaration",
    "consumer_lease_problems",
    "in_flight_threshold",
]

#: The rules, in order: each may resolve values the later ones read.
RULES: tuple[Callable[[RuleContext], None], ...] = (
    derivation_inputs,
    lambda_timing,
    derived_visibility_timeout,
    explicit_visibility_timeout,
    consumer_lease,
    max_processing_time,
    delivery_delay,
    retries_and_retention,
    fifo_and_names,
    fifo_lambda_retries,
    fifo_high_throughput,
    fair_queue,
    message_size,
    payload_bucket,
    removal_policies,
    alarm_thresholds,
    delay_within_retention,
    queue_time_slo,
    time_to_drain_bound,
    resolve_visibility_timeout,
)


def check_declaration(d: QueueDeclaration) -> CheckResult:
    """Validate a declaration and derive its visibility timeout and queue names.

    Returns every error (each names the prop, the value and what to change) and every warning.
    """
    context = RuleContext(d, CheckResult(visibility_timeout=None))
    for rule in RULES:
        rule(context)
    return context.result
