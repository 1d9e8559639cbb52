"""The one binding path of every consumer, a Lambda function or an ECS service, declared or brought:
consumption grants, the lease alarms, notifications and the dashboard, from the job queue's declaration.

The kind-specific parts (an event source, scaling, the kind's own alarms and graphs) are the binders'
(:mod:`jobqueues.lambda_consumer`, :mod:`jobqueues.ecs_consumer`); everything they share is here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from aws_cdk import CfnResource, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

from jobqueues.alarms import notify
from jobqueues.consumer_alarms import ConsumerAlarms, create_consumer_alarms
from jobqueues.dashboard import WIDTH as DASHBOARD_WIDTH
from jobqueues.dashboard import job_dashboard
from jobqueues.errors import JobQueueError
from jobqueues.inputs import is_token
from jobqueues.interface import IJobQueue
from jobqueues.metrics import ConsumerMetrics
from jobqueues.progress_alarms import create_progress_alarms, time_to_drain_widget
from jobqueues.registry import RegisteredConstruct, registry_of, stack_of


@dataclass(frozen=True)
class DeclaredConsumer:
    """What a construct that declares its consumer (``LambdaJob``, ``EcsJob``) knows of it without asking the CDK's
    Node kernel, given to the binder; a brought consumer's binder asks.

    :param resource: the resource that carries the consumer marker (the function's, the service's).
    :param references: the marker's references to the consumer's resources, by the marker's key (``function``;
        ``service``, ``cluster``, ``task_definition``), in :func:`jobqueues.marker.reference`'s form; a key left out
        is looked up.
    :param timeout_s: a function's timeout in seconds, as deployed; ``None``: a token.
    :param path: the consumer's construct path (``None``: looked up).
    :param task_role: a service's task role (``None``: looked up).
    :param cluster_name: a service's cluster's name (``None``: looked up).
    """

    resource: CfnResource
    references: Mapping[str, dict[str, str] | None]
    timeout_s: float | None = None
    path: str | None = None
    task_role: iam.IRole | None = None
    cluster_name: str | None = None


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
        """The progress alarms (:mod:`jobqueues.progress_alarms`); every alarm notifies the job queue's topic; one
        dashboard shows the queue, the leases, the time to drain and ``widgets``."""
        progress = create_progress_alarms(self.scope, self.job_queue, self.metrics)
        alarms = ConsumerAlarms(
            self.lease_leak,
            self.lease_lost,
            self.p99_drift,
            errors=errors,
            throttles=throttles,
            no_running_task=no_running_task,
            stalled=progress.stalled,
            time_to_drain=progress.time_to_drain,
        )
        notify(self.job_queue.alarm_topic, alarms.all())
        name = f"{registry_of(self.scope).facts.name}-{self.job_queue.job_type}"
        drain = time_to_drain_widget(self.job_queue, self.metrics, DASHBOARD_WIDTH)
        job_dashboard(self.scope, name, self.job_queue, self.metrics, [drain, *widgets])
        return alarms


def check_no_consumer(job_queue: IJobQueue, method: str) -> None:
    """Refuse a second consumer of one job type: its alarms, dashboard (named after the job type) and scaling are
    the job type's, once. Every binding path checks it before creating anything."""
    earlier = job_queue.bound_consumer
    if earlier is not None:
        raise JobQueueError(
            f"{method} on {job_queue.node.path}: job type {job_queue.job_type!r} has a consumer already "
            f"({earlier.node.path}); a job type has one consumer: declare another job type (its own queue) for a "
            "second one"
        )


#: Where a stack holds the bindings of consumers whose job queue is in another stack, one child per job type.
CROSS_STACK_CONSUMERS_ID = "JobQueueConsumers"


def consumer_scope(job_queue: IJobQueue, consumer: Any, method: str) -> Construct:
    """Where a brought consumer's binding is created (its alarms, dashboard, scaling, ``sqslease`` layer): under the
    job queue when both are in one stack, else in the consumer's stack, under ``JobQueueConsumers/<job type>``.

    The binding references both: in the job queue's stack, the job queue's stack would depend on the consumer's (its
    alarms read the consumer's metrics) while the consumer's depends on the job queue's (the queue's URL and ARN,
    its grants), a CloudFormation DependencyCycle. In the consumer's stack, the dependency goes one way.

    :param consumer: the function or service being bound (anything else is the binder's error to report).
    """
    check_no_consumer(job_queue, method)  # before the scope: a second one would be a duplicate construct id
    owner = cast(Construct, job_queue)  # every job queue, declared or imported, is a construct (JobQueueBase)
    consumer_stack = stack_of(consumer) if isinstance(consumer, Construct) else None
    if consumer_stack is None or consumer_stack is stack_of(owner):
        return RegisteredConstruct(owner, "Consumer")
    _check_environment(job_queue, cast(Construct, consumer), consumer_stack, stack_of(owner), method)
    holder = consumer_stack.node.try_find_child(CROSS_STACK_CONSUMERS_ID)
    if not isinstance(holder, Construct):
        holder = Construct(consumer_stack, CROSS_STACK_CONSUMERS_ID)
    return RegisteredConstruct(holder, job_queue.job_type)


def _check_environment(
    job_queue: IJobQueue, consumer: Construct, consumer_stack: Stack, queue_stack: Stack, method: str
) -> None:
    """A consumer in another stack must be in the job queue's account and region (a resolved one differing): its
    event source and the alarms on the queue's metrics are there."""
    theirs, ours = registry_of(consumer_stack).facts, registry_of(queue_stack).facts
    for what, consumer_value, queue_value in (
        ("account", theirs.account, ours.account),
        ("region", theirs.region, ours.region),
    ):
        if consumer_value != queue_value and not is_token(consumer_value) and not is_token(queue_value):
            raise JobQueueError(
                f"{method} on {job_queue.node.path}: the consumer {consumer.node.path} is in stack {theirs.name} "
                f"({what} {consumer_value}), the job queue in stack {ours.name} ({what} {queue_value}): a consumer "
                "is bound in its job queue's account and region (an event source, the alarms on the queue's "
                f"metrics); declare the consumer in a stack of {what} {queue_value}"
            )


def claim_consumer(job_queue: IJobQueue, scope: Construct, method: str) -> None:
    """:func:`check_no_consumer`, then record ``scope`` on ``job_queue`` as where its consumer is bound."""
    check_no_consumer(job_queue, method)
    job_queue.bound_consumer = scope


def bind_consumer(
    scope: Construct, job_queue: IJobQueue, grantee: iam.IGrantable, *, function_timeout_s: float | None = None
) -> Binding:
    """Grant ``grantee`` consumption of ``job_queue`` (and its idempotency records and payloads, if any) and create
    the lease alarms in ``scope``; the binder adds its own parts and calls :meth:`Binding.finish`.

    :param function_timeout_s: a Lambda consumer's timeout, in seconds (the p99 drift is measured against it).
        Default: none (an ECS consumer).
    """
    job_queue.grant_consume_messages(grantee)
    job_queue.grant_idempotency(grantee)
    job_queue.grant_payloads(grantee)
    metrics = ConsumerMetrics.of(job_queue)
    leak, lost, drift = create_consumer_alarms(scope, job_queue, metrics, function_timeout_s=function_timeout_s)
    return Binding(scope, job_queue, metrics, leak, lost, drift)
