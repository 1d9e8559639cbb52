"""``EcsJob``: a job type consumed by an ECS Fargate service running ``python -m sqslease.worker``, and the
worker image it is built from."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Unpack, cast

from aws_cdk import Acknowledgment, CfnElement, CfnResource, Validations
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from jobqueues.cluster import CLUSTER_ID, shared_cluster
from jobqueues.consumer_binding import DeclaredConsumer
from jobqueues.consumer_options import RuntimeOptions
from jobqueues.ecs_consumer import acknowledge_environment, bind_ecs_consumer
from jobqueues.ecs_job_plan import EcsJobPlan, plan_ecs_job
from jobqueues.ecs_options import ecs_job_declaration
from jobqueues.ecs_service_plan import EcsServicePlan
from jobqueues.errors import JobQueueError
from jobqueues.execute_command import (
    acknowledge_execute_command,
    cdk_configures_execute_command,
    enable_execute_command,
)
from jobqueues.job_queue import JobQueue
from jobqueues.marker_format import IMAGE_DIRECTORY_MARKER
from jobqueues.plan import Given
from jobqueues.planning import claim_names
from jobqueues.props import EcsJobProps
from jobqueues.registry import RegisteredConstruct, StackRegistry, registry_of

KIND = "EcsJob"


class EcsJob(RegisteredConstruct):
    """A job type consumed by a Fargate service running the ``sqslease`` worker: queue + DLQ, task definition,
    service, scaling on backlog per task, task scale-in protection, IAM, alarms and a dashboard, all from one
    declaration. The props are :class:`jobqueues.props.EcsJobProps`. Example::

        EcsJob(self, "VideoTranscode", handler="media.transcode:handle", processing_p99=Duration.minutes(4),
               max_processing_time=Duration.hours(3), cluster=cluster, concurrency=4, max_tasks=20)
        # VT 8 min, leases extended up to 3 h

    :param scope: parent construct.
    :param job_type: construct id and job type name (see :class:`JobQueue`).
    :param plan: build from this plan (:func:`jobqueues.ecs_job_plan.plan_ecs_job`) instead of props; the job type
        is the plan's and ``job_type`` is then only the construct id. Default: planned from the props.
    """

    def __init__(
        self, scope: Construct, job_type: str, *, plan: EcsJobPlan | None = None, **props: Unpack[EcsJobProps]
    ) -> None:
        super().__init__(scope, job_type)
        registry = registry_of(self)
        if plan is None:
            plan = plan_ecs_job(ecs_job_declaration(self, KIND, job_type, props, registry))
        elif props:
            raise JobQueueError(f"{KIND} {self.node.path}: pass a plan or props, not both (got {sorted(props)})")
        claim_names(KIND, self, registry, plan.queue)
        #: The plan the job was built from: every final value, the rules' findings.
        self.plan = plan
        #: The queue + DLQ pair.
        self.job_queue = JobQueue(self, "Queue", plan=plan.queue, claimed_by=self)
        #: The service plan: every deployment option, checked.
        self.service_plan = plan.service
        self.cluster: ecs.ICluster = plan.cluster or shared_cluster(self, plan.service.vpc)
        if plan.service.capacity_provider_strategies is not None and isinstance(self.cluster, ecs.Cluster):
            self.cluster.enable_fargate_capacity_providers()  # idempotent; an imported cluster must have them
        log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays[plan.log_retention])
        #: The task definition (Fargate).
        self.task_definition = ecs.FargateTaskDefinition(
            self,
            "Task",
            cpu=plan.cpu,
            memory_limit_mib=plan.memory_limit_mib,
            runtime_platform=_runtime_platform(plan.service),
        )
        #: The worker container: ``python -m sqslease.worker`` with the declaration's settings as arguments.
        self.container = self._worker(plan, log_group)
        #: The Fargate service; its task count is scaled on backlog per task.
        self.service = self._service(plan, log_group)
        service_resource: CfnResource = self.service.node.default_child  # type: ignore[assignment]
        #: The consumer alarms.
        self.alarms = bind_ecs_consumer(
            self,
            self.job_queue,
            self.service,
            min_tasks=plan.min_tasks,
            max_tasks=plan.max_tasks,
            target_backlog_per_task=plan.target_backlog_per_task,
            add_settings=False,
            declared=self._declared(plan, service_resource, registry),
        )
        if plan.image is None:
            # Where `jobqueues local up` finds the handlers to run the worker as a local process (relative to
            # the app's directory, as given: an absolute path would differ between machines).
            service_resource.add_metadata(IMAGE_DIRECTORY_MARKER, plan.image_directory)

    def _declared(self, plan: EcsJobPlan, service: CfnResource, registry: StackRegistry) -> DeclaredConsumer:
        """The service's resource and the logical ids of the marker's resources, computed in Python (the shared
        cluster's too; a cluster of the user's is looked up)."""
        service_id = registry.logical_id(self.path_below_stack("Service", "Service"), lambda: service)
        task_id = registry.logical_id(self.path_below_stack("Task", "Resource"), _default_child(self.task_definition))
        references: dict[str, dict[str, str] | None] = {
            "service": {"logical_id": service_id},
            "task_definition": {"logical_id": task_id},
        }
        if plan.cluster is None and plan.service.vpc is None:
            cluster_id = registry.logical_id([CLUSTER_ID, "Resource"], _default_child(self.cluster))
            references["cluster"] = {"logical_id": cluster_id}
        return DeclaredConsumer(
            service,
            references,
            path=f"{self.construct_path}/Service",
            task_role=self.task_definition.task_role,
            cluster_name=self.cluster.cluster_name,
        )

    def _worker(self, plan: EcsJobPlan, log_group: logs.LogGroup) -> ecs.ContainerDefinition:
        """The worker container, its image pull acknowledged for cdk-nag."""
        contract = self.job_queue.consumer_contract()
        # Everything sqslease is told is the worker's options: the container's variables are the environment= prop's.
        environment = dict(plan.service.environment)
        image = plan.image or _default_image(plan)
        handler = plan.handler.value if isinstance(plan.handler, Given) else plan.handler
        container = self.task_definition.add_container(
            "Worker",
            image=image,
            command=RuntimeOptions(plan.hooks, plan.idempotency_key)
            .apply(contract)
            .worker_command(handler or "", plan.concurrency, plan.shutdown_grace),
            logging=ecs.LogDrivers.aws_logs(stream_prefix=plan.queue.job_type, log_group=log_group),
            stop_timeout=registry_of(self).seconds(plan.stop_timeout),  # whole seconds: shared in the stack
            environment=environment or None,
            secrets=dict(plan.service.secrets) or None,
        )
        if environment:
            acknowledge_environment(self.task_definition, environment)
        if isinstance(image, ecs.RepositoryImage):
            return container  # pulled without ECR: nothing to acknowledge (and no round trips to find the policy)
        execution_role = self.task_definition.execution_role
        policy = execution_role.node.try_find_child("DefaultPolicy") if execution_role is not None else None
        if policy is not None:
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
        return container

    def _service(self, plan: EcsJobPlan, log_group: logs.LogGroup) -> ecs.FargateService:
        """The Fargate service, with ECS Exec as declared."""
        service_plan = plan.service
        exec_by_cdk = service_plan.enable_execute_command and cdk_configures_execute_command(self.cluster)
        service = ecs.FargateService(
            self,
            "Service",
            cluster=self.cluster,
            task_definition=self.task_definition,
            desired_count=plan.min_tasks,
            min_healthy_percent=100,
            max_healthy_percent=200,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            capacity_provider_strategies=service_plan.capacity_provider_strategies,
            platform_version=(
                ecs.FargatePlatformVersion[service_plan.platform_version] if service_plan.platform_version else None
            ),
            vpc_subnets=service_plan.vpc_subnets,
            security_groups=service_plan.security_groups,
            assign_public_ip=service_plan.assign_public_ip or None,
            enable_execute_command=exec_by_cdk or None,
            propagate_tags=service_plan.propagate_tags,
        )
        if exec_by_cdk:
            acknowledge_execute_command(self.task_definition.task_role)
        elif service_plan.enable_execute_command:
            enable_execute_command(service, log_group)
        return service


def _default_child(construct: IConstruct) -> Callable[[], CfnElement]:
    return lambda: cast(CfnElement, construct.node.default_child)


def _default_image(plan: EcsJobPlan) -> ecs.ContainerImage:
    if plan.registry_image:
        return ecs.ContainerImage.from_registry(str(plan.registry_image))
    # Built for the task's architecture: an x86 image on ARM64 Fargate exits with "exec format error".
    platform = ecr_assets.Platform.LINUX_ARM64 if plan.service.architecture == "ARM64" else None
    # Absolute, as checked: the CDK kernel would resolve a relative path against its own start directory.
    return ecs.ContainerImage.from_asset(os.path.abspath(plan.image_directory), platform=platform)


def _runtime_platform(plan: EcsServicePlan) -> ecs.RuntimePlatform | None:
    if plan.cpu_architecture is None:
        return None  # Fargate's default, X86_64 Linux: no RuntimePlatform in the template
    return ecs.RuntimePlatform(
        cpu_architecture=plan.cpu_architecture, operating_system_family=ecs.OperatingSystemFamily.LINUX
    )
