"""S3: ``AWS::S3::BucketPolicy`` (the CDK bootstrap stack has one)."""

from __future__ import annotations

import json
from typing import Any, Self

from moto.core.common_models import CloudFormationModel
from moto.s3.models import s3_backends

from jobqueues.emulator.cfn.handler import Handler


class S3BucketPolicy(Handler, CloudFormationModel):
    """``AWS::S3::BucketPolicy`` (the CDK bootstrap stack has one)."""

    cfn_type = "AWS::S3::BucketPolicy"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        document = properties["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        # moto applies statements with principal "*" but ignores their conditions, so the bootstrap
        # bucket's "deny unless aws:SecureTransport" would deny everything over the emulator's plain
        # HTTP. Conditional statements are dropped locally; unconditional ones are kept.
        statements = [st for st in document.get("Statement", []) if "Condition" not in st]
        policy = json.dumps({**document, "Statement": statements})
        s3_backends[account_id]["global"].put_bucket_policy(properties["Bucket"], policy.encode())
        return cls(name, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        s3_backends[account_id]["global"].delete_bucket_policy(self.properties["Bucket"])
