"""ECS: ``Cluster``, ``ClusterCapacityProviderAssociations``, ``TaskDefinition`` and ``Service``, replacing (or
filling in for) moto's handlers.

moto's own keep little beyond names, containers and desired count: they drop ``ClusterSettings``, ``Cpu``,
``NetworkMode``, roles, ``LaunchType``, ``NetworkConfiguration``, ``RuntimePlatform``, ``PropagateTags``; moto's
backend has no place for a service's ``CapacityProviderStrategy`` or ``EnableExecuteCommand``, which these keep
on its service (``DescribeServices`` returns them), and no handler for capacity provider associations.
"""

from __future__ import annotations

from typing import Any, Self

from moto.core.common_models import CloudFormationModel
from moto.ecs.models import ecs_backends

from jobqueues.emulator.cfn.handler import ArnHandler, Handler, camel


class EcsCluster(Handler, CloudFormationModel):
    """``AWS::ECS::Cluster`` with ``ClusterSettings`` (Container Insights) and capacity providers."""

    cfn_type = "AWS::ECS::Cluster"
    name_property = "ClusterName"
    cfn_attributes = frozenset({"Arn"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        ecs_backends[account_id][region_name].create_cluster(
            cluster_name=name,
            tags=camel(p.get("Tags")),
            cluster_settings=camel(p.get("ClusterSettings")),
            configuration=camel(p.get("Configuration")),
            capacity_providers=p.get("CapacityProviders"),
            default_capacity_provider_strategy=camel(p.get("DefaultCapacityProviderStrategy")),
        )
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].delete_cluster(self.name)

    def attribute(self, name: str) -> str:
        return str(ecs_backends[self.account_id][self.region_name].clusters[self.name].arn)


class EcsClusterCapacityProviderAssociations(Handler, CloudFormationModel):
    """``AWS::ECS::ClusterCapacityProviderAssociations``: the cluster's capacity providers and default strategy
    (``DescribeClusters`` returns them). Its ``Ref`` is the cluster name."""

    cfn_type = "AWS::ECS::ClusterCapacityProviderAssociations"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        cluster = str(properties["Cluster"]).rsplit("/", 1)[-1]  # a name or an ARN
        ecs_backends[account_id][region_name].put_cluster_capacity_providers(
            cluster,
            properties.get("CapacityProviders", []),
            camel(properties.get("DefaultCapacityProviderStrategy", [])),
        )
        return cls(cluster, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        clusters = ecs_backends[account_id][region_name].clusters
        if self.name in clusters:
            ecs_backends[account_id][region_name].put_cluster_capacity_providers(self.name, [], [])


class EcsTaskDefinition(Handler, CloudFormationModel):
    """``AWS::ECS::TaskDefinition`` with every property ``register_task_definition`` takes.

    Its ``Ref`` is the task definition ARN (family:revision).
    """

    cfn_type = "AWS::ECS::TaskDefinition"
    cfn_attributes = frozenset({"TaskDefinitionArn"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        task_definition = ecs_backends[account_id][region_name].register_task_definition(
            family=p.get("Family", name),
            container_definitions=camel(p.get("ContainerDefinitions", [])),
            volumes=camel(p.get("Volumes")),
            network_mode=p.get("NetworkMode"),
            tags=camel(p.get("Tags")),
            placement_constraints=camel(p.get("PlacementConstraints")),
            requires_compatibilities=p.get("RequiresCompatibilities"),
            cpu=p.get("Cpu"),
            memory=p.get("Memory"),
            task_role_arn=p.get("TaskRoleArn"),
            execution_role_arn=p.get("ExecutionRoleArn"),
            proxy_configuration=camel(p.get("ProxyConfiguration")),
            runtime_platform=camel(p.get("RuntimePlatform")),
            ipc_mode=p.get("IpcMode"),
            pid_mode=p.get("PidMode"),
            ephemeral_storage=camel(p.get("EphemeralStorage")),
        )
        return cls(task_definition.arn, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].deregister_task_definition(self.name)

    def attribute(self, name: str) -> str:
        return self.name


class EcsService(ArnHandler, CloudFormationModel):
    """``AWS::ECS::Service`` with launch type or capacity provider strategy, network configuration, platform
    version, tag propagation and ECS Exec.

    Its ``Ref`` is the service ARN. ``DeploymentConfiguration``, ``EnableECSManagedTags`` and
    ``HealthCheckGracePeriodSeconds`` have no place in moto's model.
    """

    cfn_type = "AWS::ECS::Service"
    name_property = "ServiceName"
    cfn_attributes = frozenset({"Name", "ServiceArn"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        service = ecs_backends[account_id][region_name].create_service(
            cluster_str=p.get("Cluster", "default"),
            service_name=name,
            desired_count=int(p.get("DesiredCount", 1)),
            task_definition_str=p.get("TaskDefinition"),
            load_balancers=camel(p.get("LoadBalancers")),
            scheduling_strategy=p.get("SchedulingStrategy"),
            tags=camel(p.get("Tags")),
            deployment_controller=camel(p.get("DeploymentController")),
            launch_type=p.get("LaunchType"),
            service_registries=camel(p.get("ServiceRegistries")),
            platform_version=p.get("PlatformVersion"),
            propagate_tags=p.get("PropagateTags", "NONE"),
            network_configuration=camel(p.get("NetworkConfiguration")),
            role_arn=p.get("Role"),
        )
        strategy = camel(p.get("CapacityProviderStrategy"))
        if strategy:
            # A strategy replaces the launch type (moto's create_service would default it to EC2).
            service.launch_type = None
            for deployment in service.deployments:
                deployment["launchType"] = None
                deployment["capacityProviderStrategy"] = strategy
        # Attributes moto's Service lacks; DescribeServices serializes them by name.
        setattr(service, "capacity_provider_strategy", strategy or [])  # noqa: B010
        setattr(service, "enable_execute_command", _flag(p.get("EnableExecuteCommand", False)))  # noqa: B010
        return cls(name, properties, account_id, region_name, service.arn)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].delete_service(self.properties.get("Cluster", "default"), self.name, True)

    def attribute(self, name: str) -> str:
        return self.name if name == "Name" else self.arn


def _flag(value: Any) -> bool:
    """A CloudFormation boolean: ``true``, ``"true"`` or ``"True"``."""
    return str(value).lower() == "true"
