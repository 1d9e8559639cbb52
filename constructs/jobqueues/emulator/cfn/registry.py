"""Which handler deploys each resource type jobqueues adds to moto: one handler per type (as LocalStack's providers).

Importing this module imports every handler, after moto's own models: moto's model map keeps the last class
defined for a type, so these replace moto's (the ECS types) or fill its gaps. Types not listed here deploy with
moto's own handlers, some extended by :mod:`jobqueues.emulator.patches`.
"""

from __future__ import annotations

from moto.cloudformation import parsing

from jobqueues.emulator.cfn.autoscaling import ScalableTarget, ScalingPolicy
from jobqueues.emulator.cfn.cdk import CdkMetadata
from jobqueues.emulator.cfn.cloudwatch import CloudWatchAlarm
from jobqueues.emulator.cfn.ec2 import SecurityGroupEgress
from jobqueues.emulator.cfn.ecs import EcsCluster, EcsClusterCapacityProviderAssociations, EcsService, EcsTaskDefinition
from jobqueues.emulator.cfn.handler import Handler
from jobqueues.emulator.cfn.s3 import S3BucketPolicy
from jobqueues.emulator.cfn.secretsmanager import SecretsManagerSecret
from jobqueues.emulator.cfn.sns import SNSTopicPolicy
from jobqueues.emulator.cfn.sqs import SQSQueuePolicy

#: Resource type -> the handler that deploys it in place of moto's own (if any).
HANDLERS: dict[str, type[Handler]] = {
    handler.cfn_type: handler
    for handler in (
        CloudWatchAlarm,
        SQSQueuePolicy,
        SNSTopicPolicy,
        S3BucketPolicy,
        CdkMetadata,
        SecurityGroupEgress,
        ScalableTarget,
        ScalingPolicy,
        EcsCluster,
        EcsClusterCapacityProviderAssociations,
        EcsTaskDefinition,
        EcsService,
        SecretsManagerSecret,
    )
}


def check_handlers_in_use() -> None:
    """Raise unless moto's CloudFormation will use these handlers, not its own, for every type listed."""
    model_map = parsing.get_model_map()
    wrong = [
        resource_type
        for resource_type, handler in HANDLERS.items()
        if model_map.get(resource_type) is not handler  # type: ignore[comparison-overlap]
    ]
    if wrong:
        raise RuntimeError(f"moto would not use the local emulator's handlers for {wrong}")
