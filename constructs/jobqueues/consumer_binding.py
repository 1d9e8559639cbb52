"""The one binding path of every consumer, a Lambda function or an ECS service, declared or brought:
consumption grants, the lease alarms, notifications and the dashboard, from the job queue's declaration.

The kind-specific parts (an event source, scaling, the kind's own alarms and graphs) are the binders'
(:mod:`jobqueues.lambda_consumer`, :mod:`jobqueues.ecs_consumer`); everything they share is here, once.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

from jobqueues.alarms import notify
from jobqueues.consumer_alarms import ConsumerAlarms, create_consumer_alarms
from jobqueues.dashboard import job_dashboard
from jobqueues.errors import JobQueueError
from jobqueues.interface import IJobQueue
from jobqueues.metrics import ConsumerMetrics
from jobqueues.names import stack_facts, stack_of


@dataclass(frozen=True)
class Binding:
    """A consumer being bound: its metrics and the lease alarms every consumer has."""

    scope: Construct
    job_queue: IJobQueue
    metrics: ConsumerMetrics
    lease_leak: cloudwatch.Alarm
    lease_lost: cloudwatch.Alarm
    p99_drift: cloudwatch.Alarm

    def finish(
        self,
        widgets: list[cloudwatch.IWidget],
        *,
        errors: cloudwatch.Alarm | None = None,
        throttles: cloudwatch.Alarm | None = None,
        no_running_task: cloudwatch.Alarm | None = None,
    ) -> ConsumerAlarms:
        """Every alarm notifies the job queue's topic; one dashboard shows the queue, the leases and ``widgets``."""
        alarms = ConsumerAlarms(
            self.lease_leak,
            self.lease_lost,
            self.p99_drift,
            errors=errors,
            throttles=throttles,
            no_running_task=no_running_task,
        )
        notify(self.job_queue.alarm_topic, alarms.all())
        name = f"{stack_facts(stack_of(self.scope)).name}-{self.job_queue.job_type}"
        job_dashboard(self.scope, name, self.job_queue, self.metrics, widgets)
        return alarms


# Job queue -> the path of its consumer. Weak: separate apps in one process never mix.
_consumers: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def check_no_consumer(job_queue: IJobQueue, method: str) -> None:
    """Refuse a second consumer of one job type: its alarms, dashboard (named after the job type) and scaling are
    the job type's, once. Every binding path checks it before creating anything."""
    earlier = _consumers.get(job_queue)
    if earlier is not None:
        raise JobQueueError(
            f"{method} on {job_queue.node.path}: job type {job_queue.job_type!r} has a consumer already "
            f"({earlier}); a job type has one consumer: declare another job type (its own queue) for a second one"
        )


def claim_consumer(job_queue: IJobQueue, scope: Construct, method: str) -> None:
    """:func:`check_no_consumer`, then record ``scope`` as ``job_queue``'s consumer."""
    check_no_consumer(job_queue, method)
    _consumers[job_queue] = scope.node.path


def bind_consumer(
    scope: Construct, job_queue: IJobQueue, grantee: iam.IGrantable, *, function_timeout_s: float | None = None
) -> Binding:
    """Grant ``grantee`` consumption of ``job_queue`` (and its idempotency records, if any) and create the lease
    alarms in ``scope``; the binder adds its own parts and calls :meth:`Binding.finish`.

    :param function_timeout_s: a Lambda consumer's timeout, in seconds (the p99 drift is measured against it).
        Default: none (an ECS consumer).
    """
    job_queue.grant_consume_messages(grantee)
    job_queue.grant_idempotency(grantee)
    metrics = ConsumerMetrics.of(job_queue)
    leak, lost, drift = create_consumer_alarms(scope, job_queue, metrics, function_timeout_s=function_timeout_s)
    return Binding(scope, job_queue, metrics, leak, lost, drift)
