"""SQS: ``AWS::SQS::QueuePolicy`` (moto's own ``AWS::SQS::Queue`` handler is kept)."""

from __future__ import annotations

from typing import Any, Self

from moto.core.common_models import CloudFormationModel
from moto.sqs.models import sqs_backends

from jobqueues.emulator.cfn.handler import Handler, policy_json


class SQSQueuePolicy(Handler, CloudFormationModel):
    """``AWS::SQS::QueuePolicy``: sets the ``Policy`` attribute of each listed queue."""

    cfn_type = "AWS::SQS::QueuePolicy"

    def _apply(self, policy: str, missing_ok: bool = False) -> None:
        backend = sqs_backends[self.account_id][self.region_name]
        for url in self.properties["Queues"]:
            name = url.rstrip("/").rsplit("/", 1)[-1]
            if missing_ok and name not in backend.queues:
                continue
            backend.set_queue_attributes(name, {"Policy": policy})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        handler = cls(name, properties, account_id, region_name)
        handler._apply(policy_json(properties["PolicyDocument"]))
        return handler

    def delete(self, account_id: str, region_name: str) -> None:
        # A stack deletion may delete the queue first: its policy went with it (a retained queue loses its policy).
        self._apply("", missing_ok=True)
