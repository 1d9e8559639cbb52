"""SNS: ``AWS::SNS::TopicPolicy`` (moto's own ``AWS::SNS::Topic`` handler is kept)."""

from __future__ import annotations

from typing import Any, Self

from moto.core.common_models import CloudFormationModel
from moto.sns.models import sns_backends

from jobqueues.emulator.cfn.handler import Handler, policy_json


class SNSTopicPolicy(Handler, CloudFormationModel):
    """``AWS::SNS::TopicPolicy``: sets the ``Policy`` attribute of each listed topic.

    Deleting it undoes nothing: a topic without this policy falls back to the default one.
    """

    cfn_type = "AWS::SNS::TopicPolicy"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        backend = sns_backends[account_id][region_name]
        for arn in properties["Topics"]:
            backend.set_topic_attribute(arn, "Policy", policy_json(properties["PolicyDocument"]))
        return cls(name, properties, account_id, region_name)
