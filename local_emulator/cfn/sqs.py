"""SQS: ``AWS::SQS::QueuePolicy`` (moto's own ``AWS::SQS::Queue`` handler is kept)."""

from __future__ import annotations

from typing import Any, Self

from moto.core.common_models import CloudFormationModel
from moto.sqs.models import sqs_backends

from local_emulator.cfn.handler import Handler, policy_json


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
        handler._apply(policy_json(properties["PolicyDocument"]))
        return handler

    def delete(self, account_id: str, region_name: str) -> None:
        self._apply("")
