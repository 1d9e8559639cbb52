"""S3: a bucket keeps its lifecycle rules and its public access block, which moto's CloudFormation handler drops."""

from __future__ import annotations

from typing import Any

from moto.s3.models import FakeBucket, s3_backends

from jobqueues.emulator.patches.after_create import after_create


def lifecycle_rules(configuration: dict[str, Any]) -> list[dict[str, Any]]:
    """A template's ``LifecycleConfiguration`` as the rules ``PutBucketLifecycleConfiguration`` takes (the API's
    shape: ``Expiration.Days`` for ``ExpirationInDays``, a ``Filter`` for the ``Prefix``)."""
    rules = []
    for rule in configuration.get("Rules", []):
        converted: dict[str, Any] = {
            "Status": rule.get("Status", "Enabled"),
            "Filter": {"Prefix": rule.get("Prefix", "")},
        }
        if "Id" in rule:
            converted["ID"] = rule["Id"]
        if "ExpirationInDays" in rule:
            converted["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
        if "AbortIncompleteMultipartUpload" in rule:
            days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
            converted["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(days)}
        noncurrent = rule.get("NoncurrentVersionExpiration") or (
            {"NoncurrentDays": rule["NoncurrentVersionExpirationInDays"]}
            if "NoncurrentVersionExpirationInDays" in rule
            else None
        )
        if noncurrent:
            converted["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(noncurrent["NoncurrentDays"])}
        rules.append(converted)
    return rules


def keep_bucket_lifecycle_and_public_access() -> None:
    """Apply a bucket's ``LifecycleConfiguration`` (expiration, incomplete uploads, noncurrent versions) and
    ``PublicAccessBlockConfiguration``, so that the post-deploy check compares them (a payload bucket's expiry and
    its blocked public access) and the API answers as on AWS. moto never expires an object."""

    def apply(bucket: FakeBucket, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        backend = s3_backends[account_id]["global"]
        lifecycle = properties.get("LifecycleConfiguration")
        if lifecycle and lifecycle.get("Rules"):
            backend.put_bucket_lifecycle_configuration(bucket.name, lifecycle_rules(lifecycle))
        public_access = properties.get("PublicAccessBlockConfiguration")
        if public_access:
            backend.put_public_access_block(bucket.name, public_access)

    after_create(FakeBucket, apply)
