"""Read a deployed stack back from the emulator: its template, physical ids, and values the template computes.

moto keeps only some properties of some resource types, so the demo and the Lambda driver read what a
resource was deployed with from the stack's own template (``GetTemplate``) and resolve its intrinsics
against the stack's physical ids (``DescribeStackResources``): e.g. an ECS container's command with the
queue URLs its ``Ref`` s stand for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from local_emulator.server import Emulator


class DeployedError(RuntimeError):
    """The emulator does not hold what the demo needs (a stack, resource, or a value it cannot compute)."""


@dataclass
class DeployedStack:
    """One deployed stack: its template and the physical id of each logical id."""

    name: str
    account: str
    region: str
    template: dict[str, Any]
    physical_ids: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, emulator: Emulator, stack_name: str) -> DeployedStack:
        cloudformation = emulator.client("cloudformation")
        try:
            stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
        except cloudformation.exceptions.ClientError as error:
            raise DeployedError(f"stack {stack_name} is not deployed at {emulator.endpoint}: {error}") from error
        body = cloudformation.get_template(StackName=stack_name)["TemplateBody"]
        template = json.loads(body) if isinstance(body, str) else dict(body)
        resources = cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        _, _, _, region, account, _ = stacks[0]["StackId"].split(":", 5)
        return cls(
            name=stack_name,
            account=account,
            region=region,
            template=template,
            physical_ids={r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources},
        )

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        """Logical id -> template resource, for every resource of ``resource_type``."""
        return {k: v for k, v in self.template.get("Resources", {}).items() if v.get("Type") == resource_type}

    def resource(self, logical_id: str) -> dict[str, Any]:
        try:
            resource: dict[str, Any] = self.template["Resources"][logical_id]
        except KeyError as error:
            raise DeployedError(f"stack {self.name} has no resource {logical_id}") from error
        return resource

    def physical_id(self, logical_id: str) -> str:
        try:
            return self.physical_ids[logical_id]
        except KeyError as error:
            raise DeployedError(f"{self.name}/{logical_id} was not created") from error

    def resolve(self, value: Any) -> Any:
        """``value`` with ``Ref``, ``Fn::Join``, ``Fn::Sub`` and queue ``Fn::GetAtt`` computed.

        Raises :class:`DeployedError` naming the intrinsic it cannot compute locally.
        """
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
            return {k: self.resolve(v) for k, v in value.items()}
        (function, argument), *_ = value.items()
        if function == "Ref":
            return self._ref(argument)
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(p) for p in self.resolve(parts))
        if function == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            return self._sub(text, {k: str(self.resolve(v)) for k, v in variables.items()})
        if function == "Fn::GetAtt":
            logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
            return self._get_att(logical_id, attribute)
        raise DeployedError(f"cannot compute {function} locally: {json.dumps(value)[:200]}")

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.name,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.template.get("Parameters", {}):
            default = self.template["Parameters"][name].get("Default")
            if default is None:
                raise DeployedError(f"parameter {name} has no default")
            return str(default)
        return self.physical_id(name)

    def _sub(self, text: str, variables: dict[str, str]) -> str:
        out, rest = [], text
        while "${" in rest:
            before, _, after = rest.partition("${")
            name, _, rest = after.partition("}")
            out.append(before)
            if name.startswith("!"):  # ${!Literal} is the literal ${Literal}
                out.append("${" + name[1:] + "}")
            elif name in variables:
                out.append(variables[name])
            elif "." in name:
                out.append(str(self._get_att(*name.split(".", 1))))
            else:
                out.append(self._ref(name))
        return "".join(out) + rest

    def _get_att(self, logical_id: str, attribute: str) -> str:
        resource_type = self.resource(logical_id)["Type"]
        physical = self.physical_id(logical_id)
        if resource_type == "AWS::SQS::Queue":
            name = physical.rstrip("/").rsplit("/", 1)[-1]
            values = {
                "Arn": f"arn:aws:sqs:{self.region}:{self.account}:{name}",
                "QueueName": name,
                "QueueUrl": physical,
            }
            if attribute in values:
                return values[attribute]
        raise DeployedError(f"cannot compute Fn::GetAtt {logical_id}.{attribute} ({resource_type}) locally")
