"""CloudFormation handlers that moto lacks for the resource types jobqueues emits.

moto's CloudFormation looks resource types up in ``CloudFormationModel.__subclasses__()`` at
deploy time, so defining these classes in the ``moto_server`` process registers them. Each handler
drives the same backend the service's API uses, so what is deployed can be read back with boto3
(``describe_alarms``, ``get_queue_attributes(Policy)``, ``get_topic_attributes(Policy)``).

:func:`make_unsupported_types_fatal` turns moto's "skip with a warning" into a failed deploy.
"""

from __future__ import annotations

import json
from typing import Any

from moto.cloudformation import parsing
from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.models import CloudFormationBackend
from moto.cloudwatch.models import cloudwatch_backends
from moto.core.common_models import CloudFormationModel
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends
from moto.sqs.models import Queue, sqs_backends


def _policy_json(document: Any) -> str:
    return document if isinstance(document, str) else json.dumps(document)


class CloudWatchAlarm(CloudFormationModel):
    """``AWS::CloudWatch::Alarm`` for single-metric alarms, via ``put_metric_alarm``."""

    def __init__(self, name: str, account_id: str, region_name: str) -> None:
        self.name = name
        self.account_id = account_id
        self.region_name = region_name

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @staticmethod
    def cloudformation_name_type() -> str:
        return "AlarmName"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::Alarm"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name == "Arn":
            return f"arn:aws:cloudwatch:{self.region_name}:{self.account_id}:alarm:{self.name}"
        raise NotImplementedError(attribute_name)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> CloudWatchAlarm:
        p = cloudformation_json["Properties"]
        if "Metrics" in p:
            raise ValidationError(message=f"alarm {resource_name}: metric-math alarms are not supported locally")
        name = p.get("AlarmName", resource_name)
        cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=name,
            namespace=p["Namespace"],
            metric_name=p["MetricName"],
            comparison_operator=p["ComparisonOperator"],
            evaluation_periods=int(p["EvaluationPeriods"]),
            period=int(p["Period"]),
            threshold=float(p["Threshold"]),
            statistic=p.get("Statistic"),
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
        )
        return cls(name, account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: CloudWatchAlarm,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> CloudWatchAlarm:
        cloudwatch_backends[account_id][region_name].delete_alarms([original_resource.name])
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        name = cloudformation_json.get("Properties", {}).get("AlarmName", resource_name)
        cloudwatch_backends[account_id][region_name].delete_alarms([name])


class SQSQueuePolicy(CloudFormationModel):
    """``AWS::SQS::QueuePolicy``: sets the ``Policy`` attribute of each listed queue."""

    def __init__(self, name: str, queue_urls: list[str]) -> None:
        self.name = name
        self.queue_urls = queue_urls

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SQS::QueuePolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @staticmethod
    def _apply(queue_urls: list[str], policy: str, account_id: str, region_name: str) -> None:
        backend = sqs_backends[account_id][region_name]
        for url in queue_urls:
            backend.set_queue_attributes(url.rstrip("/").rsplit("/", 1)[-1], {"Policy": policy})

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> SQSQueuePolicy:
        p = cloudformation_json["Properties"]
        cls._apply(p["Queues"], _policy_json(p["PolicyDocument"]), account_id, region_name)
        return cls(resource_name, list(p["Queues"]))

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: SQSQueuePolicy,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> SQSQueuePolicy:
        cls._apply(original_resource.queue_urls, "", account_id, region_name)
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        cls._apply(cloudformation_json["Properties"]["Queues"], "", account_id, region_name)


class SNSTopicPolicy(CloudFormationModel):
    """``AWS::SNS::TopicPolicy``: sets the ``Policy`` attribute of each listed topic."""

    def __init__(self, name: str, topic_arns: list[str]) -> None:
        self.name = name
        self.topic_arns = topic_arns

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SNS::TopicPolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> SNSTopicPolicy:
        p = cloudformation_json["Properties"]
        backend = sns_backends[account_id][region_name]
        for arn in p["Topics"]:
            backend.set_topic_attribute(arn, "Policy", _policy_json(p["PolicyDocument"]))
        return cls(resource_name, list(p["Topics"]))

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: SNSTopicPolicy,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> SNSTopicPolicy:
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        """Nothing to undo: a topic without this policy falls back to the default one."""


class S3BucketPolicy(CloudFormationModel):
    """``AWS::S3::BucketPolicy`` (the CDK bootstrap stack has one)."""

    def __init__(self, name: str, bucket: str) -> None:
        self.name = name
        self.bucket = bucket

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::S3::BucketPolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> S3BucketPolicy:
        p = cloudformation_json["Properties"]
        document = p["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        # moto applies statements with principal "*" but ignores their conditions, so the bootstrap
        # bucket's "deny unless aws:SecureTransport" would deny everything over the emulator's plain
        # HTTP. Conditional statements are dropped locally; unconditional ones are kept.
        statements = [st for st in document.get("Statement", []) if "Condition" not in st]
        policy = json.dumps({**document, "Statement": statements})
        s3_backends[account_id]["global"].put_bucket_policy(p["Bucket"], policy.encode())
        return cls(resource_name, p["Bucket"])

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: S3BucketPolicy,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> S3BucketPolicy:
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        s3_backends[account_id]["global"].delete_bucket_policy(cloudformation_json["Properties"]["Bucket"])


class CdkMetadata(CloudFormationModel):
    """``AWS::CDK::Metadata`` (CDK version reporting): CloudFormation only records it; so does this."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CDK::Metadata"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> CdkMetadata:
        return cls(resource_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: CdkMetadata,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> CdkMetadata:
        return cls(new_resource_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        """Nothing was created."""


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
        change_set = self.change_sets.get(change_set_name) or next(
            (cs for cs in self.change_sets.values() if cs.change_set_name == change_set_name), None
        )
        if change_set is not None and change_set.execution_status == "EXECUTE_FAILED":
            raise ValidationError(message=f"change set {change_set_name} already failed; create a new one")
        try:
            original(self, change_set_name, stack_name)
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


def make_unsupported_types_fatal() -> None:
    """Fail the deploy on a resource type moto cannot create, instead of skipping it with a warning."""
    original = parsing.parse_resource

    def strict_parse_resource(resource_json: dict[str, Any], resources_map: Any) -> Any:
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
