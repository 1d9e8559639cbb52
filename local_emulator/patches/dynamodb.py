"""DynamoDB: keep what moto's ``AWS::DynamoDB::Table`` handler drops (an idempotency table's TTL, recovery and
encryption)."""

from __future__ import annotations

from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table

from local_emulator.patches.after_create import after_create


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
