"""``EcsJob``: a job type consumed by an ECS Fargate service running ``python -m sqslease.worker``; and
:func:`bind_ecs_consumer`, the same wiring for a service you bring (``JobQueue.add_ecs_consumer``)."""

from __future__ import annotations

import os
import weakref
from typing import Any, Unpack

from aws_cdk import Acknowledgment, ArnFormat, Duration, Fn, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.alarms import alarm, notify
from jobqueues.consumer_alarms import ConsumerAlarms, create_consumer_alarms
from jobqueues.consumer_rules import DEFAULT_SHUTDOWN_GRACE_S, check_ecs_consumer, stop_timeout_s
from jobqueues.dashboard import job_dashboard
from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.errors import JobQueueError
from jobqueues.inputs import PropReader
from jobqueues.job_queue import JobQueue
from jobqueues.lambda_job import _ConsumerQueue
from jobqueues.metrics import ConsumerMetrics, consumer_period
from jobqueues.names import stack_facts
from jobqueues.props import EcsJobProps, LeaseOptions, QueueOptions
from jobqueues.scaling import running_tasks, scale_on_backlog
from jobqueues.stack_limits import count_resources

DEFAULT_IMAGE_DIRECTORY = "lambda_src"
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_TASKS = 10
DEFAULT_CPU = 256
DEFAULT_MEMORY_MIB = 512
CLUSTER_ID = "JobQueuesCluster"
#: Resources an EcsJob adds beside its queues: log group, task definition, task role + policy, execution role
#: + policy, service, security group, scalable target, 2 scaling policies, the step policy's alarm,
#: 4 alarms, dashboard.
RESOURCES_PER_ECS_CONSUMER = 17
_QUEUE_PROPS = set(QueueOptions.__annotations__) | set(LeaseOptions.__annotations__)


KIND = "EcsJob"


class EcsJob(Construct):
    """A job type consumed by a Fargate service running the ``sqslease`` worker: queue + DLQ, task definition,
    service, scaling on backlog per task, task scale-in protection, IAM, alarms and a dashboard, all from one
    declaration. The props are :class:`jobqueues.props.EcsJobProps`. Example::

        EcsJob(self, "VideoTranscode", handler="media.transcode:handle", processing_p99=Duration.minutes(4),
               max_processing_time=Duration.hours(3), cluster=cluster, concurrency=4, max_tasks=20)
        # VT 8 min, leases extended up to 3 h

    :param scope: parent construct.
    :param job_type: construct id and job type name (see :class:`JobQueue`).
    """

    def __init__(self, scope: Construct, job_type: str, **props: Unpack[EcsJobProps]) -> None:
        super().__init__(scope, job_type)
        read = PropReader(props, EcsJobProps.__annotations__)
        handler = read.string("handler")
        if handler is None and "handler" not in read.tokens and props.get("handler") is None:
            read.errors.append("handler is required: pass the per-message function, e.g. 'media.transcode:handle'")
        concurrency = _or(read.integer("concurrency", DEFAULT_CONCURRENCY), DEFAULT_CONCURRENCY)
        min_tasks = _or(read.integer("min_tasks", 0), 0)
        max_tasks = _or(read.integer("max_tasks", DEFAULT_MAX_TASKS), DEFAULT_MAX_TASKS)
        target_backlog = _or(read.integer("target_backlog_per_task", concurrency), concurrency)
        cpu = _or(read.integer("cpu", DEFAULT_CPU), DEFAULT_CPU)
        memory = _or(read.integer("memory_limit_mib", DEFAULT_MEMORY_MIB), DEFAULT_MEMORY_MIB)
        grace_s = read.duration_s("shutdown_grace")
        cluster = read.having("cluster", "cluster_name", "an ecs.ICluster, e.g. ecs.Cluster(self, 'Cluster')")
        image = read.instance("image", ecs.ContainerImage, "an ecs.ContainerImage")
        image_directory = read.string("image_directory")
        if image is not None and image_directory is not None:
            read.errors.append(
                f"image_directory={image_directory!r} builds the default image, which image replaces: pass one of them"
            )
        elif image is None and not _registry_image(self):
            read.errors += missing_dockerfile(image_directory or DEFAULT_IMAGE_DIRECTORY)
        check = check_ecs_consumer(
            concurrency=concurrency, min_tasks=min_tasks, max_tasks=max_tasks, shutdown_grace_s=grace_s
        )
        check.errors[:0] = read.errors
        queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
        queue_props.setdefault("lease_extension", True)  # the worker heartbeats by default
        #: The queue + DLQ pair.
        self.job_queue = _ConsumerQueue(self, job_type, queue_props, owner=(KIND, self), consumer=check)

        self.cluster: ecs.ICluster = cluster or shared_cluster(self)
        log_group = logs.LogGroup(self, "Logs", retention=props.get("log_retention", logs.RetentionDays.ONE_MONTH))
        #: The task definition (Fargate).
        self.task_definition = ecs.FargateTaskDefinition(self, "Task", cpu=cpu, memory_limit_mib=memory)
        grace = DEFAULT_SHUTDOWN_GRACE_S if grace_s is None else grace_s
        worker_image = image or _default_image(self, image_directory or DEFAULT_IMAGE_DIRECTORY)
        #: The worker container: ``python -m sqslease.worker`` with the declaration's settings as arguments.
        self.container = self.task_definition.add_container(
            "Worker",
            image=worker_image,
            command=worker_command(self.job_queue, handler or "", concurrency, grace),
            logging=ecs.LogDrivers.aws_logs(stream_prefix=job_type, log_group=log_group),
            stop_timeout=Duration.seconds(stop_timeout_s(grace)),
        )
        execution_role = self.task_definition.execution_role
        policy = execution_role.node.try_find_child("DefaultPolicy") if execution_role is not None else None
        if policy is not None and not isinstance(worker_image, ecs.RepositoryImage):
            # An ECR image (an asset, or a repository): the execution role pulls with a registry token.
            Validations.of(policy).acknowledge(
                Acknowledgment(
                    id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                    reason=(
                        "ecr:GetAuthorizationToken has no resource-level permissions, so AWS requires Resource *; "
                        "the image pull itself (ecr:BatchGetImage, GetDownloadUrlForLayer) is limited to the "
                        "asset repository"
                    ),
                )
            )
        #: The Fargate service; its task count is scaled on backlog per task.
        self.service = ecs.FargateService(
            self,
            "Service",
            cluster=self.cluster,
            task_definition=self.task_definition,
            desired_count=min_tasks,
            min_healthy_percent=100,
            max_healthy_percent=200,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
        )
        #: The consumer alarms.
        self.alarms = bind_ecs_consumer(
            self,
            self.job_queue,
            self.service,
            min_tasks=min_tasks,
            max_tasks=max_tasks,
            target_backlog_per_task=target_backlog,
        )


def worker_command(job_queue: JobQueue, handler: str, concurrency: int, shutdown_grace_s: float) -> list[str]:
    """The container command: the worker with every setting of the declaration as a command-line option.

    Options, not environment variables: the values are visible in the task definition, and cdk-nag's ECS2
    asks for no container environment.
    """
    settings = {**job_queue.consumer_settings(), "shutdown_grace": _number(shutdown_grace_s)}
    command = ["python", "-m", "sqslease.worker", "--handler", handler, "--concurrency", str(concurrency)]
    for name, value in settings.items():
        command += [f"--{name.replace('_', '-')}", value]
    return command


def bind_ecs_consumer(
    scope: Construct,
    job_queue: JobQueue,
    service: ecs.BaseService,
    *,
    min_tasks: int = 0,
    max_tasks: int = DEFAULT_MAX_TASKS,
    target_backlog_per_task: int = DEFAULT_CONCURRENCY,
) -> ConsumerAlarms:
    """Make ``service`` the consumer of ``job_queue``: grants (consume, task protection), scaling on backlog per
    task, alarms and a dashboard. Its container must run :func:`worker_command`.

    :param min_tasks: tasks when idle. Default: 0.
    :param max_tasks: tasks at most. Default: 10.
    :param target_backlog_per_task: outstanding messages per task the scaling aims at. Default: 4.
    """
    if not isinstance(service, ecs.BaseService):
        raise JobQueueError(f"add_ecs_consumer: service={service!r} is not an ecs.BaseService (FargateService)")
    stack = Stack.of(scope)
    task_role = service.task_definition.task_role
    job_queue.grant_consume_messages(task_role)
    cluster_name = service.cluster.cluster_name
    own_tasks = stack.format_arn(
        service="ecs", resource="task", resource_name=f"{cluster_name}/*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
    )
    protection = iam.PolicyStatement(
        actions=["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"], resources=[own_tasks]
    )
    task_role.add_to_principal_policy(protection)
    policy = task_role.node.try_find_child("DefaultPolicy")
    if policy is not None:
        Validations.of(policy).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{_nag(stack, own_tasks)}]",
                reason=(
                    "sqslease sets ECS task scale-in protection on its own task, whose id exists only at run time; "
                    "the wildcard is limited to the tasks of this cluster and to the two task-protection actions"
                ),
            )
        )
    scale_on_backlog(
        scope,
        service,
        cluster_name,
        job_queue.queue,
        min_tasks=min_tasks,
        max_tasks=max_tasks,
        target_backlog_per_task=target_backlog_per_task,
    )
    metrics = ConsumerMetrics.of(job_queue)
    leak, lost, drift = create_consumer_alarms(scope, job_queue, metrics)
    period = consumer_period()
    tasks = running_tasks(cluster_name, service.service_name, period)
    no_task = alarm(
        scope,
        "NoRunningTaskAlarm",
        cloudwatch.MathExpression(
            expression="IF(visible >= 1 AND FILL(tasks, 0) < 1, 1, 0)",
            using_metrics={"visible": metrics.visible, "tasks": tasks},
            label="backlog waiting, no task running",
            period=period,
        ),
        threshold=1,
        evaluation_periods=3,
        description=(
            f"{job_queue.job_type}: messages have waited 15 min with no task running: tasks fail to start "
            "(image, role, capacity) or scaling is off."
        ),
    )
    alarms = ConsumerAlarms(leak, lost, drift, no_running_task=no_task)
    notify(job_queue.alarm_topic, alarms.all())
    job_dashboard(
        scope,
        f"{stack_facts(stack).name}-{job_queue.job_type}",
        job_queue,
        metrics,
        [cloudwatch.GraphWidget(title="Running tasks", left=[tasks], width=8)],
    )
    count_resources(stack, RESOURCES_PER_ECS_CONSUMER, job_types=0)
    return alarms


def deploy_time_availability_zones(count: int = 2) -> list[str]:
    """The region's first ``count`` availability zones as CloudFormation resolves them at deploy time
    (``Fn::Select`` of ``Fn::GetAZs``): no zone name hard-coded in the template (cfn-lint W3010), none looked up.

    A stack with a concrete account can return these from its ``availability_zones`` property, so that no
    ``ec2.Vpc`` in it makes synth look up the account's zones (the example app's stack does).
    """
    return [Fn.select(i, Fn.get_azs()) for i in range(count)]


def shared_cluster(scope: Construct) -> ecs.ICluster:
    """The stack's cluster for ECS jobs that bring none: Container Insights on, in a new VPC with flow logs.

    Two availability zones, the region's first two as CloudFormation resolves them at deploy time
    (:func:`deploy_time_availability_zones`). CDK's ``ec2.Vpc`` still reads the stack's
    ``availability_zones`` (whatever zones it is given), a context lookup when the stack's account is concrete:
    such a stack returns :func:`deploy_time_availability_zones` from that property to synthesize without one.
    """
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(CLUSTER_ID)
    if existing is not None:
        return existing  # type: ignore[return-value]
    flow_log_group = logs.LogGroup(stack, "JobQueuesVpcFlowLogs", retention=logs.RetentionDays.ONE_MONTH)
    vpc = ec2.Vpc(
        stack,
        "JobQueuesVpc",
        availability_zones=deploy_time_availability_zones(),
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
            ec2.SubnetConfiguration(name="Workers", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
        ],
        # True adds a Custom::VpcRestrictDefaultSG resource (a Lambda); the services use their own groups.
        restrict_default_security_group=False,
        flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group))},
    )
    return ecs.Cluster(stack, CLUSTER_ID, vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)


def missing_dockerfile(image_directory: str) -> list[str]:
    """The error, if any, of building the default image from ``image_directory`` (relative to the current
    directory): checked here, as CDK's own error names neither the prop nor the fix."""
    dockerfile = os.path.join(os.path.abspath(image_directory), "Dockerfile")
    if os.path.isfile(dockerfile):
        return []
    return [
        f"image_directory={image_directory!r}: {dockerfile} does not exist (the default worker image is built "
        f"from the Dockerfile in image_directory, relative to the current directory {os.getcwd()}); pass "
        "image= your own image, or image_directory= a directory whose Dockerfile installs sqslease and your "
        f"handlers, or the registry image in context {IMAGE_CONTEXT}"
    ]


def _default_image(scope: Construct, directory: str) -> ecs.ContainerImage:
    registry_image = _registry_image(scope)
    if registry_image:
        return ecs.ContainerImage.from_registry(str(registry_image))
    # Absolute, as checked: the CDK kernel would resolve a relative path against its own start directory.
    return ecs.ContainerImage.from_asset(os.path.abspath(directory))


def _registry_image(scope: Construct) -> Any:
    stack = Stack.of(scope)
    if stack not in _registry_images:  # context is read once per stack: each read is a round-trip to jsii
        _registry_images[stack] = stack.node.try_get_context(IMAGE_CONTEXT)
    return _registry_images[stack]


_registry_images: weakref.WeakKeyDictionary[Stack, Any] = weakref.WeakKeyDictionary()


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _nag(stack: Stack, value: str) -> str:
    """How cdk-nag prints ``value`` in a finding id: ``<LogicalId>`` or ``<AWS::Region>`` for a reference."""

    def text(part: Any) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, dict) and "Ref" in part:
            return f"<{part['Ref']}>"
        if isinstance(part, dict) and "Fn::GetAtt" in part:
            return f"<{'.'.join(part['Fn::GetAtt'])}>"
        if isinstance(part, dict) and "Fn::Join" in part:
            separator, parts = part["Fn::Join"]
            return str(separator).join(text(p) for p in parts)
        return str(part)

    return text(stack.resolve(value))
