"""``EcsJob``: a job type consumed by an ECS Fargate service running ``python -m sqslease.worker``, and the
worker image it is built from."""

from __future__ import annotations

import os
import weakref
from typing import Any, Unpack

from aws_cdk import Acknowledgment, Duration, Stack, Validations
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.cluster import shared_cluster
from jobqueues.consumer_options import read_runtime_options
from jobqueues.consumer_rules import check_ecs_consumer, check_handler, stop_timeout_s
from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.ecs_consumer import DEFAULT_MAX_TASKS, DEFAULT_MIN_TASKS, acknowledge_environment, bind_ecs_consumer
from jobqueues.ecs_service_plan import EcsServicePlan, plan_ecs_service
from jobqueues.execute_command import (
    acknowledge_execute_command,
    cdk_configures_execute_command,
    enable_execute_command,
)
from jobqueues.inputs import PropReader
from jobqueues.job_queue import JobQueue
from jobqueues.marker_format import IMAGE_DIRECTORY_MARKER
from jobqueues.names import stack_of
from jobqueues.planning import plan_from_props
from jobqueues.props import EcsJobProps, LeaseOptions, QueueOptions
from sqslease.rules import DEFAULT_SHUTDOWN_GRACE_S, DEFAULT_WORKER_CONCURRENCY

DEFAULT_IMAGE_DIRECTORY = "lambda_src"
DEFAULT_CPU = 256
DEFAULT_MEMORY_MIB = 512
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
        elif handler is not None:
            read.errors += check_handler(handler, "package.module:function", "handler='media.transcode:handle'")
        concurrency = _or(read.integer("concurrency", DEFAULT_WORKER_CONCURRENCY), DEFAULT_WORKER_CONCURRENCY)
        min_tasks = _or(read.integer("min_tasks", DEFAULT_MIN_TASKS), DEFAULT_MIN_TASKS)
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
        service_plan = plan_ecs_service(read, cluster)
        sqslease_options = read_runtime_options(read, idempotency=props.get("idempotency") not in (None, False))
        check = check_ecs_consumer(
            concurrency=concurrency, min_tasks=min_tasks, max_tasks=max_tasks, shutdown_grace_s=grace_s
        )
        check.errors[:0] = read.errors + service_plan.errors
        queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
        queue_props.setdefault("lease_extension", True)  # the worker heartbeats by default
        #: The queue + DLQ pair.
        plan = plan_from_props(self, KIND, job_type, queue_props, consumer=check, ecs_consumer=True)
        self.job_queue = JobQueue(self, "Queue", plan=plan)

        #: The service plan: every deployment option, checked.
        self.service_plan = service_plan
        self.cluster: ecs.ICluster = cluster or shared_cluster(self, service_plan.vpc)
        if service_plan.capacity_provider_strategies is not None and isinstance(self.cluster, ecs.Cluster):
            self.cluster.enable_fargate_capacity_providers()  # idempotent; an imported cluster must have them
        log_group = logs.LogGroup(self, "Logs", retention=props.get("log_retention", logs.RetentionDays.ONE_MONTH))
        #: The task definition (Fargate).
        self.task_definition = ecs.FargateTaskDefinition(
            self,
            "Task",
            cpu=cpu,
            memory_limit_mib=memory,
            runtime_platform=_runtime_platform(service_plan),
        )
        grace = DEFAULT_SHUTDOWN_GRACE_S if grace_s is None else grace_s
        # The worker's options are the lease settings; idempotency is read from its variables.
        environment = {**service_plan.environment, **self.job_queue.consumer_contract().idempotency_environment()}
        worker_image = image or _default_image(self, image_directory or DEFAULT_IMAGE_DIRECTORY, service_plan)
        #: The worker container: ``python -m sqslease.worker`` with the declaration's settings as arguments.
        self.container = self.task_definition.add_container(
            "Worker",
            image=worker_image,
            command=sqslease_options.apply(self.job_queue.consumer_contract()).worker_command(
                handler or "", concurrency, grace
            ),
            logging=ecs.LogDrivers.aws_logs(stream_prefix=job_type, log_group=log_group),
            stop_timeout=Duration.seconds(stop_timeout_s(grace)),
            environment=environment or None,
            secrets=service_plan.secrets or None,
        )
        if environment:
            acknowledge_environment(self.task_definition, environment)
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
        exec_by_cdk = service_plan.enable_execute_command and cdk_configures_execute_command(self.cluster)
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
            capacity_provider_strategies=service_plan.capacity_provider_strategies,
            platform_version=service_plan.platform_version,
            vpc_subnets=service_plan.vpc_subnets,
            security_groups=service_plan.security_groups,
            assign_public_ip=service_plan.assign_public_ip or None,
            enable_execute_command=exec_by_cdk or None,
            propagate_tags=service_plan.propagate_tags,
        )
        if exec_by_cdk:
            acknowledge_execute_command(self.task_definition.task_role)
        elif service_plan.enable_execute_command:
            enable_execute_command(self.service, log_group)
        #: The consumer alarms.
        self.alarms = bind_ecs_consumer(
            self,
            self.job_queue,
            self.service,
            min_tasks=min_tasks,
            max_tasks=max_tasks,
            target_backlog_per_task=target_backlog,
            add_environment=False,
        )
        if image is None:
            # Where `jobqueues local up` finds the handlers to run the worker as a local process (relative to
            # the app's directory, as given: an absolute path would differ between machines).
            service_resource: Any = self.service.node.default_child
            service_resource.add_metadata(IMAGE_DIRECTORY_MARKER, image_directory or DEFAULT_IMAGE_DIRECTORY)


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


def _default_image(scope: Construct, directory: str, plan: EcsServicePlan) -> ecs.ContainerImage:
    registry_image = _registry_image(scope)
    if registry_image:
        return ecs.ContainerImage.from_registry(str(registry_image))
    # Built for the task's architecture: an x86 image on ARM64 Fargate exits with "exec format error".
    platform = ecr_assets.Platform.LINUX_ARM64 if plan.architecture == "ARM64" else None
    # Absolute, as checked: the CDK kernel would resolve a relative path against its own start directory.
    return ecs.ContainerImage.from_asset(os.path.abspath(directory), platform=platform)


def _runtime_platform(plan: EcsServicePlan) -> ecs.RuntimePlatform | None:
    if plan.cpu_architecture is None:
        return None  # Fargate's default, X86_64 Linux: no RuntimePlatform in the template
    return ecs.RuntimePlatform(
        cpu_architecture=plan.cpu_architecture, operating_system_family=ecs.OperatingSystemFamily.LINUX
    )


def _registry_image(scope: Construct) -> Any:
    stack = stack_of(scope)
    if stack not in _registry_images:  # context is read once per stack: each read is a round-trip to jsii
        _registry_images[stack] = stack.node.try_get_context(IMAGE_CONTEXT)
    return _registry_images[stack]


_registry_images: weakref.WeakKeyDictionary[Stack, Any] = weakref.WeakKeyDictionary()


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
