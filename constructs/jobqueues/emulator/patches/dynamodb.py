"""DynamoDB: keep what moto's ``AWS::DynamoDB::Table`` handler drops (an idempotency table's TTL, recovery and
encryption)."""

from __future__ import annotations

import threading
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler

from jobqueues.emulator.patches.after_create import after_create


def keep_table_ttl_recovery_and_encryption() -> None:
    """Apply a table's ``TimeToLiveSpecification``, ``PointInTimeRecoverySpecification`` and ``SSESpecification``,
    which moto's handler drops, so that the post-deploy check compares them and the API answers as on AWS.

    TTL and recovery go through the backend's ``UpdateTimeToLive`` and ``UpdateContinuousBackups``. Encryption is
    read in the API's shape (``Enabled``), not CloudFormation's (``SSEEnabled``), so a template's is lost: it is
    set here as ``CreateTable`` would, with the AWS managed key (``alias/aws/dynamodb``) when no key is named.
    moto never deletes an expired item, and encrypts nothing (``sqslease`` relies on neither).
    """

    def apply(table: Table, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        backend = dynamodb_backends[account_id][region_name]
        ttl = properties.get("TimeToLiveSpecification")
        if ttl:
            backend.update_time_to_live(table.name, ttl)
        recovery = properties.get("PointInTimeRecoverySpecification")
        if recovery:
            backend.update_continuous_backups(table.name, recovery)
        sse = properties.get("SSESpecification") or {}
        if sse.get("SSEEnabled") in (True, "true"):
            key = sse.get("KMSMasterKeyId") or table._get_default_encryption_key(account_id, region_name)
            table.sse_specification = {"Enabled": True, "SSEType": sse.get("SSEType", "KMS"), "KMSMasterKeyId": key}

    after_create(Table, apply)


def make_dynamodb_requests_atomic(handler: type[DynamoHandler] = DynamoHandler) -> None:
    """Serve one DynamoDB request at a time, so that a cancelled transaction cannot undo another request's write.

    moto cancels a TransactWriteItems by restoring a deep copy of each table it took when the transaction began,
    and moto_server serves requests on threads: a PutItem or UpdateItem acknowledged in between was silently
    reverted (the fault fleet saw a COMPLETED idempotency record reverted by a heartbeat's cancelled extension,
    and its redelivered job ran again). DynamoDB applies each request atomically; one lock for every request of
    every table is stricter, and cheap at an emulator's rates.
    """
    original = handler.call_action
    lock = threading.Lock()

    def call_action(self: DynamoHandler) -> Any:
        with lock:
            return original(self)

    handler.call_action = call_action  # type: ignore[method-assign]
