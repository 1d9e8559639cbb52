"""The post-deploy check of DynamoDB tables: keys, billing, time to live, point-in-time recovery, encryption."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison, kms_key

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::DynamoDB::Table": (
        "TTL never deletes an item (sqslease does not rely on it), point-in-time recovery keeps no backups, "
        "capacity and encryption cost nothing; IAM conditions (dynamodb:LeadingKeys) are not enforced"
    ),
}


def _dynamodb_table(server: Clients, physical_id: str, c: Comparison) -> None:
    dynamodb = server.client("dynamodb")
    table = dynamodb.describe_table(TableName=physical_id)["Table"]
    c.expect("KeySchema", table.get("KeySchema"))
    c.expect("AttributeDefinitions", table.get("AttributeDefinitions"))
    c.expect("BillingMode", table.get("BillingModeSummary", {}).get("BillingMode"), default="PROVISIONED")
    ttl = dynamodb.describe_time_to_live(TableName=physical_id)["TimeToLiveDescription"]
    spec = c.properties.get("TimeToLiveSpecification", {"Enabled": False})
    c.expect_value("TimeToLiveSpecification.Enabled", spec.get("Enabled"), ttl.get("TimeToLiveStatus") == "ENABLED")
    c.expect_value("TimeToLiveSpecification.AttributeName", spec.get("AttributeName"), ttl.get("AttributeName"))
    backups = dynamodb.describe_continuous_backups(TableName=physical_id)["ContinuousBackupsDescription"]
    recovery = backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    c.expect_value(
        "PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled",
        c.properties.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False),
        recovery,
    )
    sse = c.properties.get("SSESpecification", {})
    kept = table.get("SSEDescription", {})
    c.expect_value("SSESpecification.SSEEnabled", sse.get("SSEEnabled", False), kept.get("Status") == "ENABLED")
    c.expect_value(
        "SSESpecification.KMSMasterKeyId",
        kms_key(sse.get("KMSMasterKeyId"), c.stack),
        kms_key(kept.get("KMSMasterKeyArn")) if sse.get("KMSMasterKeyId") else "none",
    )


CHECKERS: dict[str, Checker] = {"AWS::DynamoDB::Table": _dynamodb_table}
