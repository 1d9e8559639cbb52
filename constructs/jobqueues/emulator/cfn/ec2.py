"""EC2: ``AWS::EC2::SecurityGroupEgress`` (moto's handlers for the VPC and its parts are kept)."""

from __future__ import annotations

from typing import Any, Self

from moto.cloudformation.exceptions import ValidationError
from moto.core.common_models import CloudFormationModel
from moto.ec2.models import ec2_backends

from jobqueues.emulator.cfn.handler import Handler


class SecurityGroupEgress(Handler, CloudFormationModel):
    """``AWS::EC2::SecurityGroupEgress`` (CDK emits one per ``connections.allow_to`` between groups)."""

    cfn_type = "AWS::EC2::SecurityGroupEgress"

    def _rule(self) -> dict[str, Any]:
        p = self.properties
        ip_ranges = [{"CidrIp": p["CidrIp"], "Description": p.get("Description", "")}] if "CidrIp" in p else []
        return {
            "group_name_or_id": p["GroupId"],
            "ip_protocol": str(p["IpProtocol"]),
            "from_port": p.get("FromPort", -1),
            "to_port": p.get("ToPort", -1),
            "ip_ranges": ip_ranges,
            "source_groups": [{"GroupId": p["DestinationSecurityGroupId"]}]
            if "DestinationSecurityGroupId" in p
            else [],
            "prefix_list_ids": [{"PrefixListId": p["DestinationPrefixListId"]}]
            if "DestinationPrefixListId" in p
            else [],
        }

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        if "CidrIpv6" in properties:
            raise ValidationError(message=f"{cls.cfn_type} {name}: CidrIpv6 is not supported locally")
        handler = cls(name, properties, account_id, region_name)
        ec2_backends[account_id][region_name].authorize_security_group_egress(**handler._rule())
        return handler

    def delete(self, account_id: str, region_name: str) -> None:
        ec2_backends[account_id][region_name].revoke_security_group_egress(**self._rule())
