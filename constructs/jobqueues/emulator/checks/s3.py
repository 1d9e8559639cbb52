"""The post-deploy check of S3 buckets: default encryption, lifecycle rules and the public access block."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison, kms_key

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::S3::Bucket": (
        "lifecycle rules never expire an object, encryption and the TLS-only policy are not applied (moto stores "
        "objects in plain text and the emulator speaks plain HTTP), no access is refused"
    ),
}


def _s3_bucket(server: Clients, physical_id: str, c: Comparison) -> None:
    s3 = server.client("s3")
    expected = (c.properties.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration") or [{}]
    by_default = expected[0].get("ServerSideEncryptionByDefault", {})
    if by_default:
        rules = s3.get_bucket_encryption(Bucket=physical_id)["ServerSideEncryptionConfiguration"]["Rules"]
        actual = rules[0]["ApplyServerSideEncryptionByDefault"]
        c.expect_value("BucketEncryption.SSEAlgorithm", by_default.get("SSEAlgorithm"), actual.get("SSEAlgorithm"))
        c.expect_value(
            "BucketEncryption.KMSMasterKeyID",
            kms_key(by_default.get("KMSMasterKeyID"), c.stack),
            kms_key(actual.get("KMSMasterKeyID")),
        )
    template_rules = (c.properties.get("LifecycleConfiguration") or {}).get("Rules", [])
    if template_rules:
        kept = s3.get_bucket_lifecycle_configuration(Bucket=physical_id)["Rules"]
        for i, rule in enumerate(template_rules):
            actual_rule = kept[i] if i < len(kept) else {}
            c.expect_value(f"LifecycleConfiguration.Rules[{i}].Status", rule.get("Status"), actual_rule.get("Status"))
            c.expect_value(
                f"LifecycleConfiguration.Rules[{i}].ExpirationInDays",
                rule.get("ExpirationInDays"),
                actual_rule.get("Expiration", {}).get("Days"),
            )
    public_access = c.properties.get("PublicAccessBlockConfiguration")
    if public_access:
        actual_block = s3.get_public_access_block(Bucket=physical_id)["PublicAccessBlockConfiguration"]
        for name, value in public_access.items():
            c.expect_value(f"PublicAccessBlockConfiguration.{name}", value, actual_block.get(name))


CHECKERS: dict[str, Checker] = {"AWS::S3::Bucket": _s3_bucket}
