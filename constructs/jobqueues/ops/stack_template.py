"""A stack's template with its name, account, region and physical ids: what a marker's references are read against.

:meth:`StackTemplate.named` reads a marker's reference (a logical id, an ARN, a name); :meth:`StackTemplate.value`
computes a template value's intrinsics with :mod:`jobqueues.ops.intrinsics` (the one resolver);
:func:`imported_stacks` names the stacks a template imports from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jobqueues.ops import intrinsics


@dataclass
class StackTemplate:
    """A stack's name, account, region, template and physical ids (empty for a synthesized one)."""

    name: str
    template: dict[str, Any]
    account: str = ""
    region: str = ""
    physical_ids: dict[str, str] = field(default_factory=dict)
    #: Export name -> value, for ``Fn::ImportValue`` (none read here: such a value is unknown).
    exports: dict[str, str] = field(default_factory=dict)

    def value(self, value: Any) -> Any:
        """A template value with its intrinsics computed; ``None`` if it cannot be (a template not deployed)."""
        if value is None:
            return None
        try:
            return intrinsics.resolve(value, self)
        except intrinsics.Unresolvable:
            return None

    def named(self, reference: dict[str, str] | None) -> str | None:
        """What a marker's reference names: a logical id's physical id (a queue's URL, a function's name, a
        service's ARN), or the literal (``arn``, ``name``); a queue ARN becomes its URL. ``None``: unknown."""
        if not reference:
            return None
        if "logical_id" in reference:
            return self.physical_ids.get(reference["logical_id"])
        arn = reference.get("arn")
        if arn is not None and arn.startswith("arn:") and ":sqs:" in arn:
            _, partition, _, region, account, name = arn.split(":", 5)
            suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
            return f"https://sqs.{region}.{suffix}/{account}/{name}"
        return arn or reference.get("name")


#: A CDK export's name, as a template imports it: ``<exporting stack's name>:ExportsOutput...``.
_IMPORT = re.compile(r'"Fn::ImportValue": "([^":]+):')


def imported_stacks(template: dict[str, Any]) -> set[str]:
    """The stacks whose exports ``template`` imports (CDK names an export after its stack)."""
    return set(_IMPORT.findall(json.dumps(template)))
