"""An SQS client stub that holds some queues by name: ``GetQueueAttributes`` of any other answers as SQS does for a
queue that does not exist. For the code that reads what an emulator or an account holds (notes, tables)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


class ExistingQueues:
    """An SQS client holding the queues named ``names``, each with 2 visible messages and none in flight."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> Any:
        if QueueUrl.rsplit("/", 1)[-1] not in self.names:
            raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "GetQueueAttributes")
        return {"Attributes": {"ApproximateNumberOfMessages": "2", "ApproximateNumberOfMessagesNotVisible": "0"}}
