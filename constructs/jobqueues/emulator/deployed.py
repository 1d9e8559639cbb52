"""Read a deployed stack back from the emulator: its status, template, physical ids, and the values it computes.

moto keeps only some properties of some resource types, so the post-deploy check, the demo and the Lambda
driver read what a resource was deployed with from the stack's own template (``GetTemplate``) and resolve its
intrinsics (:mod:`jobqueues.ops.intrinsics`) against the stack's physical ids (``DescribeStackResources``):
e.g. an ECS container's command with the queue URLs its ``Ref`` s stand for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jobqueues.emulator.server import Emulator
from jobqueues.ops import intrinsics


class DeployedError(RuntimeError):
    """The emulator does not hold what the demo needs (a stack, resource, or a value it cannot compute)."""


@dataclass
class DeployedStack:
    """One deployed stack: its template and the physical id of each logical id.

    ``status`` (``CREATE_COMPLETE``, ...) and ``resource_types`` (logical id -> type, for each resource created)
    are what CloudFormation reports; empty when not read from the emulator.
    """

    name: str
    account: str
    region: str
    template: dict[str, Any]
    physical_ids: dict[str, str] = field(default_factory=dict)
    status: str = ""
    resource_types: dict[str, str] = field(default_factory=dict)
    #: Export name -> value, of every stack of the emulator (``Fn::ImportValue``: a consumer of another stack's
    #: job queue imports its URL).
    exports: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, emulator: Emulator, stack_name: str) -> DeployedStack:
        """Read stack ``stack_name`` from ``emulator``; :class:`DeployedError` if it does not exist."""
        cloudformation = emulator.client("cloudformation")
        try:
            stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
        except cloudformation.exceptions.ClientError as error:
            raise DeployedError(f"stack {stack_name} is not deployed at {emulator.endpoint}: {error}") from error
        body = cloudformation.get_template(StackName=stack_name)["TemplateBody"]
        template = json.loads(body) if isinstance(body, str) else dict(body)
        resources = cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        _, _, _, region, account, _ = stacks[0]["StackId"].split(":", 5)
        exports = {
            export["Name"]: export["Value"]
            for page in cloudformation.get_paginator("list_exports").paginate()
            for export in page.get("Exports", [])
        }
        return cls(
            name=stack_name,
            account=account,
            region=region,
            template=template,
            physical_ids={r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources},
            status=stacks[0]["StackStatus"],
            resource_types={r["LogicalResourceId"]: r["ResourceType"] for r in resources},
            exports=exports,
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
            return intrinsics.physical_id(logical_id, self)
        except intrinsics.Unresolvable as error:
            raise DeployedError(str(error)) from error

    def resolve(self, value: Any) -> Any:
        """``value`` with ``Ref``, ``Fn::Join``, ``Fn::Sub`` and queue ``Fn::GetAtt`` computed.

        Raises :class:`DeployedError` naming the intrinsic it cannot compute locally.
        """
        try:
            return intrinsics.resolve(value, self)
        except intrinsics.Unresolvable as error:
            raise DeployedError(str(error)) from error

    def environment(self, container: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
        """A container definition's environment, resolved: (name -> value, names whose value cannot be
        computed locally)."""
        environment: dict[str, str] = {}
        unresolved = []
        for variable in container.get("Environment", []):
            try:
                environment[variable["Name"]] = str(self.resolve(variable["Value"]))
            except DeployedError:
                unresolved.append(variable["Name"])
        return environment, unresolved

    def logical_id(self, physical_id: str) -> str | None:
        """The logical id of the resource whose physical id is ``physical_id``, or ``None``."""
        return next((k for k, v in self.physical_ids.items() if v == physical_id), None)
