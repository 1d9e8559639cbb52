"""The stacks of a synthesized cloud assembly (``cdk.out``), nested assemblies (``Stage`` s) included."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StackArtifact:
    """One stack of a cloud assembly: its CloudFormation name and its synthesized template."""

    name: str
    template_file: Path

    def template(self) -> dict[str, Any]:
        """The template, parsed."""
        template: dict[str, Any] = json.loads(self.template_file.read_text())
        return template


def stack_artifacts(assembly_dir: Path) -> list[StackArtifact]:
    """Every stack of the cloud assembly at ``assembly_dir``, those of nested assemblies (``Stage`` s) included."""
    manifest = json.loads((assembly_dir / "manifest.json").read_text())
    stacks: list[StackArtifact] = []
    for artifact in manifest["artifacts"].values():
        properties = artifact.get("properties", {})
        if artifact["type"] == "cdk:cloud-assembly":
            stacks += stack_artifacts(assembly_dir / properties["directoryName"])
        elif artifact["type"] == "aws:cloudformation:stack":
            name = properties.get("stackName") or artifact["displayName"]
            stacks.append(StackArtifact(name, assembly_dir / properties["templateFile"]))
    return stacks
