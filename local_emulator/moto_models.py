"""CloudFormation handlers and patches that make moto deploy what jobqueues emits, strictly.

moto's CloudFormation looks resource types up in ``CloudFormationModel.__subclasses__()`` (direct
subclasses only, cached on first use), so each handler here lists ``CloudFormationModel`` as a base
next to the :class:`Handler` mixin, and the module must be imported before the first deploy. Each
handler drives the same backend the service's API uses, so what is deployed can be read back with
boto3 (``describe_alarms``, ``describe_scalable_targets``, ``describe_services``, ...).

Handlers replace moto's own for the ECS types, whose moto versions drop most properties
(``ClusterSettings``, ``Cpu``, ``NetworkMode``, roles, ``LaunchType``, ``NetworkConfiguration``).
The functions after the handlers (``keep_*``, ``make_*``, ``harden_*``, ...) patch moto's classes in the
server process; see :func:`install`, which the server calls before serving.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, ClassVar, Self

from moto.applicationautoscaling.models import applicationautoscaling_backends
from moto.awslambda.models import LambdaBackend, LambdaFunction, LayerVersion
from moto.cloudformation import parsing
from moto.cloudformation.exceptions import (
    CloudFormationError,
    UnformattedGetAttTemplateException,
    ValidationError,
)
from moto.cloudformation.models import ChangeSet, CloudFormationBackend
from moto.cloudformation.responses import CloudFormationResponse
from moto.cloudwatch.models import Dimension, Metric, MetricDataQuery, MetricStat, cloudwatch_backends
from moto.core.common_models import CloudFormationModel
from moto.core.responses import ActionResult, EmptyResult
from moto.core.utils import pascal_to_camelcase, remap_nested_keys
from moto.ec2.models import ec2_backends
from moto.ecs.models import ecs_backends
from moto.iam.models import Role, iam_backends
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends
from moto.sqs.models import Queue, SQSBackend, sqs_backends

#: Types whose resources moto would report created while the Lambda behind them never ran.
CUSTOM_RESOURCE_HINTS = {
    "Custom::VpcRestrictDefaultSG": "create the Vpc with restrict_default_security_group=False",
    "Custom::LogRetention": "pass an explicit logs.LogGroup(retention=...) instead of log_retention=",
    "Custom::S3AutoDeleteObjects": "drop auto_delete_objects=True from the bucket",
    "Custom::AWS": "replace the AwsCustomResource with a native CloudFormation resource",
}


def _camel(value: Any) -> Any:
    """CloudFormation's PascalCase keys, recursively, as the camelCase the ECS API takes."""
    return remap_nested_keys(value, pascal_to_camelcase)


def _policy_json(document: Any) -> str:
    return document if isinstance(document, str) else json.dumps(document)


class Handler:
    """The ``CloudFormationModel`` boilerplate every handler here shares.

    A handler sets :attr:`cfn_type` (and :attr:`name_property`, :attr:`cfn_attributes` if it has
    them) and writes :meth:`create` (drive the backend, return the handler) and, if something must be
    undone, :meth:`delete`. An update deletes the old resource and creates the new one.
    """

    #: The CloudFormation resource type, e.g. ``AWS::CloudWatch::Alarm``.
    cfn_type: ClassVar[str]
    #: The property that names the resource (moto generates a name when it is absent), or "".
    name_property: ClassVar[str] = ""
    #: ``Fn::GetAtt`` attributes :meth:`attribute` answers.
    cfn_attributes: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        self.name = name
        self.properties = properties
        self.account_id = account_id
        self.region_name = region_name

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        """Create the resource in moto's backend; ``name`` is the physical name moto chose."""
        raise NotImplementedError

    def delete(self, account_id: str, region_name: str) -> None:
        """Undo :meth:`create` (moto calls this on stack deletion and resource removal)."""

    def attribute(self, name: str) -> Any:
        """The value of ``Fn::GetAtt [resource, name]``, for a name in :attr:`cfn_attributes`."""
        raise NotImplementedError(name)

    # The CloudFormationModel protocol, in terms of the hooks above.

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @classmethod
    def cloudformation_name_type(cls) -> str:
        return cls.name_property

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.cfn_type

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.cfn_attributes

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name not in self.cfn_attributes:
            raise UnformattedGetAttTemplateException()
        return self.attribute(attribute_name)

    @classmethod
    def create_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> Self:
        return cls.create(resource_name, cloudformation_json.get("Properties", {}), account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: Handler,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> Self:
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)


# CloudWatch


def _metric_data_query(query: dict[str, Any]) -> MetricDataQuery:
    """One entry of an alarm's ``Metrics`` as moto's model (what its PutMetricAlarm API builds)."""
    stat = query.get("MetricStat")
    metric_stat = None
    if stat:
        metric = stat["Metric"]
        metric_stat = MetricStat(
            metric=Metric(
                metric_name=metric["MetricName"],
                namespace=metric["Namespace"],
                dimensions=[Dimension(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])],
            ),
            period=stat["Period"],
            stat=stat["Stat"],
            unit=stat.get("Unit"),  # type: ignore[arg-type]
        )
    return MetricDataQuery(
        query_id=query["Id"],
        label=query.get("Label"),  # type: ignore[arg-type]
        period=query.get("Period"),  # type: ignore[arg-type]
        return_data=query.get("ReturnData", True),
        expression=query.get("Expression"),
        metric_stat=metric_stat,
    )


class CloudWatchAlarm(Handler, CloudFormationModel):
    """``AWS::CloudWatch::Alarm``, single-metric or metric math (``Metrics``), via ``put_metric_alarm``."""

    cfn_type = "AWS::CloudWatch::Alarm"
    name_property = "AlarmName"
    cfn_attributes = frozenset({"Arn"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        queries = [_metric_data_query(q) for q in p["Metrics"]] if "Metrics" in p else None
        cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=name,
            namespace=p.get("Namespace"),  # type: ignore[arg-type]
            metric_name=p.get("MetricName"),  # type: ignore[arg-type]
            metric_data_queries=queries,
            comparison_operator=p["ComparisonOperator"],
            evaluation_periods=int(p["EvaluationPeriods"]),
            period=int(p["Period"]) if "Period" in p else None,  # type: ignore[arg-type]
            threshold=float(p["Threshold"]) if "Threshold" in p else None,  # type: ignore[arg-type]
            threshold_metric_id=p.get("ThresholdMetricId"),
            statistic=p.get("Statistic"),  # type: ignore[arg-type]
            extended_statistic=p.get("ExtendedStatistic"),
            description=p.get("AlarmDescription", ""),
            dimensions=[{"Name": d["Name"], "Value": d["Value"]} for d in p.get("Dimensions", [])],
            alarm_actions=p.get("AlarmActions", []),
            ok_actions=p.get("OKActions", []),
            insufficient_data_actions=p.get("InsufficientDataActions", []),
            datapoints_to_alarm=p.get("DatapointsToAlarm"),
            unit=p.get("Unit"),
            actions_enabled=p.get("ActionsEnabled", True),
            treat_missing_data=p.get("TreatMissingData"),
            evaluate_low_sample_count_percentile=p.get("EvaluateLowSampleCountPercentile"),
        )
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        cloudwatch_backends[account_id][region_name].delete_alarms([self.name])

    def attribute(self, name: str) -> str:
        return f"arn:aws:cloudwatch:{self.region_name}:{self.account_id}:alarm:{self.name}"


# Resource policies


class SQSQueuePolicy(Handler, CloudFormationModel):
    """``AWS::SQS::QueuePolicy``: sets the ``Policy`` attribute of each listed queue."""

    cfn_type = "AWS::SQS::QueuePolicy"

    def _apply(self, policy: str) -> None:
        backend = sqs_backends[self.account_id][self.region_name]
        for url in self.properties["Queues"]:
            backend.set_queue_attributes(url.rstrip("/").rsplit("/", 1)[-1], {"Policy": policy})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        handler = cls(name, properties, account_id, region_name)
        handler._apply(_policy_json(properties["PolicyDocument"]))
        return handler

    def delete(self, account_id: str, region_name: str) -> None:
        self._apply("")


class SNSTopicPolicy(Handler, CloudFormationModel):
    """``AWS::SNS::TopicPolicy``: sets the ``Policy`` attribute of each listed topic.

    Deleting it undoes nothing: a topic without this policy falls back to the default one.
    """

    cfn_type = "AWS::SNS::TopicPolicy"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        backend = sns_backends[account_id][region_name]
        for arn in properties["Topics"]:
            backend.set_topic_attribute(arn, "Policy", _policy_json(properties["PolicyDocument"]))
        return cls(name, properties, account_id, region_name)


class S3BucketPolicy(Handler, CloudFormationModel):
    """``AWS::S3::BucketPolicy`` (the CDK bootstrap stack has one)."""

    cfn_type = "AWS::S3::BucketPolicy"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        document = properties["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        # moto applies statements with principal "*" but ignores their conditions, so the bootstrap
        # bucket's "deny unless aws:SecureTransport" would deny everything over the emulator's plain
        # HTTP. Conditional statements are dropped locally; unconditional ones are kept.
        statements = [st for st in document.get("Statement", []) if "Condition" not in st]
        policy = json.dumps({**document, "Statement": statements})
        s3_backends[account_id]["global"].put_bucket_policy(properties["Bucket"], policy.encode())
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        s3_backends[account_id]["global"].delete_bucket_policy(self.properties["Bucket"])


class CdkMetadata(Handler, CloudFormationModel):
    """``AWS::CDK::Metadata`` (CDK version reporting): CloudFormation only records it; so does this."""

    cfn_type = "AWS::CDK::Metadata"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        return cls(name, properties, account_id, region_name)


# EC2


class SecurityGroupEgress(Handler, CloudFormationModel):
    """``AWS::EC2::SecurityGroupEgress`` (CDK emits one per ``connections.allow_to`` between groups)."""

    cfn_type = "AWS::EC2::SecurityGroupEgress"

    def _rule(self) -> dict[str, Any]:
        p = self.properties
        ip_ranges = [{"CidrIp": p["CidrIp"], "Description": p.get("Description", "")}] if "CidrIp" in p else []
        return {
            "group_name_or_id": p["GroupId"],
            "ip_protocol": str(p["IpProtocol"]),
            "from_port": p.get("FromPort", -1),
            "to_port": p.get("ToPort", -1),
            "ip_ranges": ip_ranges,
            "source_groups": [{"GroupId": p["DestinationSecurityGroupId"]}]
            if "DestinationSecurityGroupId" in p
            else [],
            "prefix_list_ids": [{"PrefixListId": p["DestinationPrefixListId"]}]
            if "DestinationPrefixListId" in p
            else [],
        }

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        if "CidrIpv6" in properties:
            raise ValidationError(message=f"{cls.cfn_type} {name}: CidrIpv6 is not supported locally")
        handler = cls(name, properties, account_id, region_name)
        ec2_backends[account_id][region_name].authorize_security_group_egress(**handler._rule())
        return handler

    def delete(self, account_id: str, region_name: str) -> None:
        ec2_backends[account_id][region_name].revoke_security_group_egress(**self._rule())


# Application Auto Scaling (moto has the backend but no CloudFormation model)


class ScalableTarget(Handler, CloudFormationModel):
    """``AWS::ApplicationAutoScaling::ScalableTarget`` via ``register_scalable_target``.

    Its ``Ref`` is ``resource id|scalable dimension|service namespace``, as in CloudFormation, which
    a ``ScalingPolicy``'s ``ScalingTargetId`` carries.
    """

    cfn_type = "AWS::ApplicationAutoScaling::ScalableTarget"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        if p.get("ScheduledActions"):
            raise ValidationError(message=f"{cls.cfn_type} {name}: ScheduledActions are not supported locally")
        applicationautoscaling_backends[account_id][region_name].register_scalable_target(
            namespace=p["ServiceNamespace"],
            r_id=p["ResourceId"],
            dimension=p["ScalableDimension"],
            min_capacity=int(p["MinCapacity"]),
            max_capacity=int(p["MaxCapacity"]),
            role_arn=p.get("RoleARN", ""),
            suspended_state=p.get("SuspendedState"),  # type: ignore[arg-type]
        )
        target_id = "|".join((p["ResourceId"], p["ScalableDimension"], p["ServiceNamespace"]))
        return cls(target_id, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        p = self.properties
        applicationautoscaling_backends[account_id][region_name].deregister_scalable_target(
            p["ServiceNamespace"], p["ResourceId"], p["ScalableDimension"]
        )


class ScalingPolicy(Handler, CloudFormationModel):
    """``AWS::ApplicationAutoScaling::ScalingPolicy`` (step or target tracking) via ``put_scaling_policy``.

    The target is ``ScalingTargetId`` or the ``ResourceId``/``ScalableDimension``/``ServiceNamespace``
    triple. Its ``Ref`` and ``Arn`` are the policy ARN (step-scaling alarms act on it).
    """

    cfn_type = "AWS::ApplicationAutoScaling::ScalingPolicy"
    name_property = "PolicyName"
    cfn_attributes = frozenset({"Arn"})

    def __init__(
        self,
        name: str,
        properties: dict[str, Any],
        account_id: str,
        region_name: str,
        arn: str,
        target: tuple[str, ...],
    ) -> None:
        super().__init__(name, properties, account_id, region_name)
        self.arn = arn
        self.policy_name = name
        self.target = target

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        if "ScalingTargetId" in p:
            resource_id, dimension, namespace = p["ScalingTargetId"].split("|")
        else:
            resource_id, dimension, namespace = p["ResourceId"], p["ScalableDimension"], p["ServiceNamespace"]
        body_key = {
            "StepScaling": "StepScalingPolicyConfiguration",
            "TargetTrackingScaling": "TargetTrackingScalingPolicyConfiguration",
        }.get(p["PolicyType"])
        if body_key is None or body_key not in p:
            raise ValidationError(
                message=f"{cls.cfn_type} {name}: PolicyType {p['PolicyType']} is not supported locally"
            )
        policy = applicationautoscaling_backends[account_id][region_name].put_scaling_policy(
            policy_name=name,
            service_namespace=namespace,
            resource_id=resource_id,
            scalable_dimension=dimension,
            policy_body=p[body_key],
            policy_type=p["PolicyType"],
        )
        return cls(name, properties, account_id, region_name, policy.policy_arn, (namespace, resource_id, dimension))

    def delete(self, account_id: str, region_name: str) -> None:
        namespace, resource_id, dimension = self.target
        applicationautoscaling_backends[account_id][region_name].delete_scaling_policy(
            self.policy_name, namespace, resource_id, dimension
        )

    def attribute(self, name: str) -> str:
        return self.arn


# ECS: replaces moto's handlers, which keep little beyond names, containers and desired count


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
            tags=_camel(p.get("Tags")),
            cluster_settings=_camel(p.get("ClusterSettings")),
            configuration=_camel(p.get("Configuration")),
            capacity_providers=p.get("CapacityProviders"),
            default_capacity_provider_strategy=_camel(p.get("DefaultCapacityProviderStrategy")),
        )
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].delete_cluster(self.name)

    def attribute(self, name: str) -> str:
        return str(ecs_backends[self.account_id][self.region_name].clusters[self.name].arn)


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
            container_definitions=_camel(p.get("ContainerDefinitions", [])),
            volumes=_camel(p.get("Volumes")),
            network_mode=p.get("NetworkMode"),
            tags=_camel(p.get("Tags")),
            placement_constraints=_camel(p.get("PlacementConstraints")),
            requires_compatibilities=p.get("RequiresCompatibilities"),
            cpu=p.get("Cpu"),
            memory=p.get("Memory"),
            task_role_arn=p.get("TaskRoleArn"),
            execution_role_arn=p.get("ExecutionRoleArn"),
            proxy_configuration=_camel(p.get("ProxyConfiguration")),
            runtime_platform=_camel(p.get("RuntimePlatform")),
            ipc_mode=p.get("IpcMode"),
            pid_mode=p.get("PidMode"),
            ephemeral_storage=_camel(p.get("EphemeralStorage")),
        )
        return cls(task_definition.arn, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].deregister_task_definition(self.name)

    def attribute(self, name: str) -> str:
        return self.name


class EcsService(Handler, CloudFormationModel):
    """``AWS::ECS::Service`` with launch type, network configuration and platform version.

    Its ``Ref`` is the service ARN. ``DeploymentConfiguration``, ``CapacityProviderStrategy``,
    ``EnableECSManagedTags`` and ``HealthCheckGracePeriodSeconds`` have no place in moto's model.
    """

    cfn_type = "AWS::ECS::Service"
    name_property = "ServiceName"
    cfn_attributes = frozenset({"Name", "ServiceArn"})

    def __init__(self, name: str, properties: dict[str, Any], account_id: str, region_name: str, arn: str) -> None:
        super().__init__(name, properties, account_id, region_name)
        self.arn = arn

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        service = ecs_backends[account_id][region_name].create_service(
            cluster_str=p.get("Cluster", "default"),
            service_name=name,
            desired_count=int(p.get("DesiredCount", 1)),
            task_definition_str=p.get("TaskDefinition"),
            load_balancers=_camel(p.get("LoadBalancers")),
            scheduling_strategy=p.get("SchedulingStrategy"),
            tags=_camel(p.get("Tags")),
            deployment_controller=_camel(p.get("DeploymentController")),
            launch_type=p.get("LaunchType"),
            service_registries=_camel(p.get("ServiceRegistries")),
            platform_version=p.get("PlatformVersion"),
            propagate_tags=p.get("PropagateTags", "NONE"),
            network_configuration=_camel(p.get("NetworkConfiguration")),
            role_arn=p.get("Role"),
        )
        return cls(name, properties, account_id, region_name, service.arn)

    def delete(self, account_id: str, region_name: str) -> None:
        ecs_backends[account_id][region_name].delete_service(self.properties.get("Cluster", "default"), self.name, True)

    def attribute(self, name: str) -> str:
        return self.name if name == "Name" else self.arn


# Patches of moto's own handlers and backends


def keep_lambda_layers() -> None:
    """Give functions created by CloudFormation their ``Layers`` and ``Architectures`` (moto drops them).

    moto's ``AWS::Lambda::LayerVersion`` has no physical id, so its ``Ref`` would be the Python
    object; CloudFormation's is the layer version ARN.
    """
    LayerVersion.physical_resource_id = property(lambda self: self.arn)  # type: ignore[attr-defined]
    original = LambdaFunction.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create_from_cloudformation_json(
        cls: type[LambdaFunction],
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> LambdaFunction:
        function = original(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        properties = cloudformation_json["Properties"]
        if "Layers" in properties:
            # Resolves each layer version ARN, so an unknown layer fails the deploy as it would on AWS.
            function.update_configuration({"Layers": properties["Layers"]})
        if "Architectures" in properties:
            function.architectures = list(properties["Architectures"])
        return function

    LambdaFunction.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)  # type: ignore[assignment,method-assign]


def attach_managed_policies() -> None:
    """Attach a CloudFormation role's ``ManagedPolicyArns`` (moto drops them).

    AWS managed policies exist only if moto loads them (``MOTO_IAM_LOAD_MANAGED_POLICIES``, which
    the server sets); an unknown ARN fails the deploy, as on AWS.
    """
    original = Role.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create_from_cloudformation_json(
        cls: type[Role],
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Role:
        role = original(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        backend = iam_backends[account_id]["aws"]
        for arn in cloudformation_json["Properties"].get("ManagedPolicyArns", []):
            backend.attach_role_policy(arn, role.name)
        return role

    Role.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)  # type: ignore[assignment,method-assign]


def make_sqs_event_source_mappings_inert() -> None:
    """Keep SQS event source mappings as records only: moto would act on them at every SendMessage.

    moto registers a mapping on its queue, and each SendMessage then receives the messages and
    invokes the function in Docker; without Docker that fails, so the messages burn receive counts
    and end in the DLQ unprocessed. Here the mapping is created and readable
    (``list_event_source_mappings``/``get_event_source_mapping``, state "Enabled") but never
    registered on the queue, so nothing consumes the queue except the local driver that reads it.
    """
    original = LambdaBackend.create_event_source_mapping

    def create_event_source_mapping(self: LambdaBackend, spec: dict[str, Any]) -> Any:
        mapping = original(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            if queue.lambda_event_source_mappings.get(mapping.function_arn) is mapping:
                del queue.lambda_event_source_mappings[mapping.function_arn]
        return mapping

    LambdaBackend.create_event_source_mapping = create_event_source_mapping  # type: ignore[method-assign]


#: A long poll looks for messages again at least every RECEIVE_RECHECK_MAX_S, and never within RECEIVE_RECHECK_MIN_S.
RECEIVE_RECHECK_MIN_S = 0.02
RECEIVE_RECHECK_MAX_S = 1.0


def make_fifo_redelivery_ordered(backend: type[SQSBackend] = SQSBackend) -> None:
    """Redeliver a FIFO message group from its first message when several of its leases run out, as SQS does.

    moto takes a message out of its pending set only when its scan reaches it visible again, and then recomputes
    the groups still pending. A consumer that crashed holding a group's #0..#2 left all three pending: the scan
    finds the group still pending at #0 and #1 (skipped), no longer at #2, and delivers #2 first. Here every
    message whose lease ran out leaves the pending set before the scan, so the group is free from its first
    message. Apply it before :func:`make_sqs_receives_atomic`, whose lock then covers it and whose passes do not
    wait (a lease that ran out during one of moto's own long polls, or within one pass, would go unseen here).
    """
    original = backend.receive_message

    def receive_message(
        self: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> Any:
        pending = self.get_queue(queue_name).pending_messages
        pending.difference_update([message for message in pending if message.visible])
        return original(self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names)

    backend.receive_message = receive_message  # type: ignore[method-assign]


def make_sqs_receives_atomic(backend: type[SQSBackend] = SQSBackend) -> None:
    """Hand each visible message to one ReceiveMessage only, as SQS does within a visibility timeout.

    moto checks that a message is visible, then marks it received, with no lock between, and moto_server
    serves requests on threads: two concurrent receives could both take one message (the fault fleet saw it).
    Here each pass over a queue holds one lock (shared by all queues: passes are short); a long poll waits for
    new messages outside it.
    """
    original = backend.receive_message
    lock = threading.Lock()

    def receive_message(
        self: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> Any:
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        while True:
            with lock:
                result = original(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
            remaining = deadline - time.monotonic()
            if result or remaining <= 0:
                return result
            waited = time.monotonic()
            self.get_queue(queue_name).wait_for_messages(min(RECEIVE_RECHECK_MAX_S, remaining))  # type: ignore[arg-type]
            # Visible messages none can take (a FIFO group in flight) end the wait at once: do not spin.
            time.sleep(max(0.0, RECEIVE_RECHECK_MIN_S - (time.monotonic() - waited)))

    backend.receive_message = receive_message  # type: ignore[method-assign]


class ChangeSetNotFound(CloudFormationError):
    """CloudFormation's answer to a change set that does not exist (cdk waits for it after a delete)."""

    code = "ChangeSetNotFoundException"


def find_change_set(
    backend: CloudFormationBackend, change_set_name: str, stack_name: str | None = None
) -> ChangeSet | None:
    """The change set with this ARN, else the newest one of this name for ``stack_name`` (a name or ARN), if any.

    cdk names every stack's change set "cdk-deploy-change-set"; moto's own lookups ignore the stack, so with
    ``cdk deploy --concurrency N`` a stack could be answered, or executed, with another stack's change set.
    """
    if change_set_name in backend.change_sets:
        return backend.change_sets[change_set_name]
    named = [
        cs
        for cs in backend.change_sets.values()
        if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id)
    ]
    return named[-1] if named else None


def tell_change_sets_apart_by_stack() -> None:
    """Make ``DescribeChangeSet`` and ``DeleteChangeSet`` find the change set of the stack they name.

    A describe that answered another stack's same-named change set made cdk execute that one and leave its own
    stack in ``REVIEW_IN_PROGRESS`` while reporting success. Deleting a change set that does not exist succeeds,
    as CloudFormation's does for an existing stack (cdk deletes its old change set before each update).
    """

    def describe_change_set(
        self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None
    ) -> ChangeSet:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise ChangeSetNotFound(f"ChangeSet [{change_set_name}] does not exist")
        return change_set

    def delete_change_set(self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is not None:
            del self.change_sets[change_set.change_set_id]

    def describe_change_set_response(self: CloudFormationResponse) -> ActionResult:
        name, stack = self._get_param("ChangeSetName"), self._get_param("StackName")
        return ActionResult(describe_change_set(self.cloudformation_backend, name, stack))

    def delete_change_set_response(self: CloudFormationResponse) -> EmptyResult:
        delete_change_set(self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
        return EmptyResult()

    CloudFormationBackend.describe_change_set = describe_change_set  # type: ignore[method-assign]
    CloudFormationBackend.delete_change_set = delete_change_set  # type: ignore[method-assign]
    CloudFormationResponse.describe_change_set = describe_change_set_response  # type: ignore[method-assign]
    CloudFormationResponse.delete_change_set = delete_change_set_response  # type: ignore[method-assign]


def harden_change_set_execution() -> None:
    """Make ``ExecuteChangeSet`` (how ``cdk deploy`` creates stacks) fail loudly and publish Outputs.

    moto answers a resource that fails to create with a 500, which SDKs retry; the retry then finds
    nothing left to add and "succeeds". Here a failure marks the stack and change set failed and
    answers a 400 naming the resource, which no client retries. moto also creates a change-set stack
    with an empty template and never rebuilds its outputs, so ``cdk`` could not read
    ``BootstrapVersion`` from ``CDKToolkit``; they are rebuilt after each execution.
    """
    original = CloudFormationBackend.execute_change_set

    def execute_change_set(self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is not None and change_set.execution_status == "EXECUTE_FAILED":
            raise ValidationError(message=f"change set {change_set_name} already failed; create a new one")
        try:
            original(self, change_set.change_set_id if change_set else change_set_name, stack_name)
        except Exception as error:
            if change_set is not None:
                change_set.execution_status = "EXECUTE_FAILED"
                stack = self.stacks[change_set.stack_id]
                stack.status = "ROLLBACK_COMPLETE" if change_set.change_set_type == "CREATE" else "UPDATE_FAILED"
                stack._add_stack_event(stack.status, resource_status_reason=str(error))
            if isinstance(error, ValidationError):
                raise
            raise ValidationError(message=f"local emulator failed to create a resource: {error!r}") from error
        for stack in self.stacks.values():
            if stack.status.endswith("_COMPLETE") and stack.template:
                stack._parse_template()
                stack.output_map = stack._create_output_map()

    CloudFormationBackend.execute_change_set = execute_change_set  # type: ignore[method-assign]


def report_redrive_allow_policy() -> None:
    """Return ``RedriveAllowPolicy`` from ``GetQueueAttributes``: moto stores it but leaves it out."""
    original = Queue.attributes

    def attributes(self: Queue) -> dict[str, Any]:
        result = original.fget(self)  # type: ignore[attr-defined]
        policy = getattr(self, "redrive_allow_policy", None)
        if policy:
            result["RedriveAllowPolicy"] = policy if isinstance(policy, str) else json.dumps(policy)
        return result

    Queue.attributes = property(attributes)  # type: ignore[method-assign,assignment]


def keep_one_queue_encryption() -> None:
    """Give a queue one kind of server-side encryption, as SQS does: SSE-KMS or SSE-SQS.

    moto enables SSE-SQS on every queue, so a queue with a ``KmsMasterKeyId`` read back with
    ``SqsManagedSseEnabled`` "true" as well, and a template's wrong encryption could not be told. Here a KMS key
    turns SSE-SQS off, and turning SSE-SQS on drops the KMS key.
    """
    original = Queue._set_attributes

    def _set_attributes(self: Queue, attributes: dict[str, Any], now: float | None = None) -> None:
        original(self, attributes, now)
        if attributes.get("KmsMasterKeyId"):
            self.sqs_managed_sse_enabled = False  # type: ignore[attr-defined]
        elif str(attributes.get("SqsManagedSseEnabled", "")).lower() == "true":
            self.kms_master_key_id = None  # type: ignore[attr-defined]

    Queue._set_attributes = _set_attributes  # type: ignore[method-assign]


def custom_resource_error(resource_type: str) -> str | None:
    """Why a custom resource cannot deploy locally and how to avoid it, or None for other types."""
    if not (resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource"):
        return None
    hint = CUSTOM_RESOURCE_HINTS.get(resource_type, "replace it with native CloudFormation resources")
    return (
        f"{resource_type} is a custom resource: the local emulator would report it created while its "
        f"Lambda never ran, so it refuses it. To avoid it: {hint}"
    )


def make_unsupported_types_fatal() -> None:
    """Fail the deploy on a resource moto cannot really create, instead of skipping or faking it.

    moto skips an unknown type with a warning, and reports a custom resource created without its
    Lambda having run; both fail here, naming the resource.
    """
    original = parsing.parse_resource

    def strict_parse_resource(resource_json: dict[str, Any], resources_map: Any) -> Any:
        custom = custom_resource_error(resource_json["Type"])
        if custom:
            raise ValidationError(message=custom)
        parsed = original(resource_json, resources_map)
        if not parsed:
            raise ValidationError(
                message=(
                    f"{resource_json['Type']} is not supported by the local emulator: "
                    "add a CloudFormationModel for it in local_emulator/moto_models.py"
                )
            )
        return parsed

    parsing.parse_resource = strict_parse_resource


#: Types this module handles in place of moto's own handlers (if any).
HANDLERS: tuple[type[Handler], ...] = (
    CloudWatchAlarm,
    SQSQueuePolicy,
    SNSTopicPolicy,
    S3BucketPolicy,
    CdkMetadata,
    SecurityGroupEgress,
    ScalableTarget,
    ScalingPolicy,
    EcsCluster,
    EcsTaskDefinition,
    EcsService,
)


def install() -> None:
    """Apply every patch and check that moto will use this module's handlers, not its own."""
    make_unsupported_types_fatal()
    harden_change_set_execution()
    tell_change_sets_apart_by_stack()
    report_redrive_allow_policy()
    keep_one_queue_encryption()
    keep_lambda_layers()
    attach_managed_policies()
    make_sqs_event_source_mappings_inert()
    make_fifo_redelivery_ordered()
    make_sqs_receives_atomic()
    # The model map keeps the last class defined for a type; these classes come after moto's.
    model_map = parsing.get_model_map()
    wrong = [h.cfn_type for h in HANDLERS if model_map.get(h.cfn_type) is not h]
    if wrong:
        raise RuntimeError(f"moto would not use the local emulator's handlers for {wrong}")
