"""DynamoDB: keep what moto's ``AWS::DynamoDB::Table`` handler drops (an idempotency table's TTL and recovery)."""

from __future__ import annotations

from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table

from local_emulator.patches.after_create import after_create


def keep_table_ttl_and_recovery() -> None:
    """Apply a table's ``TimeToLiveSpecification`` and ``PointInTimeRecoverySpecification`` (moto's handler drops
    both), through the backend's ``UpdateTimeToLive`` and ``UpdateContinuousBackups``, so that the post-deploy
    check compares them and ``describe_time_to_live`` answers as on AWS. moto never deletes an expired item (nor
    does ``sqslease`` rely on it: a record past ``expires_at`` is void whatever its ``ttl``)."""

    def apply(table: Table, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        backend = dynamodb_backends[account_id][region_name]
        ttl = properties.get("TimeToLiveSpecification")
        if ttl:
            backend.update_time_to_live(table.name, ttl)
        recovery = properties.get("PointInTimeRecoverySpecification")
        if recovery:
            backend.update_continuous_backups(table.name, recovery)

    after_create(Table, apply)
