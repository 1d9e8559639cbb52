"""The CDK's own resource type, ``AWS::CDK::Metadata``."""

from __future__ import annotations

from typing import Any, Self

from moto.core.common_models import CloudFormationModel

from jobqueues.emulator.cfn.handler import Handler


class CdkMetadata(Handler, CloudFormationModel):
    """``AWS::CDK::Metadata`` (CDK version reporting): CloudFormation only records it; so does this."""

    cfn_type = "AWS::CDK::Metadata"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        return cls(name, properties, account_id, region_name)
