"""How cdk-nag names what it finds, for the acknowledgements a construct gives with its reason
(``Validations.of(...).acknowledge``)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack


def nag_text(stack: Stack, value: str) -> str:
    """How cdk-nag prints ``value`` in a finding id: ``<LogicalId>`` or ``<AWS::Region>`` for a reference,
    ``<LogicalId.Arn>`` for an attribute."""

    def text(part: Any) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, dict) and "Ref" in part:
            return f"<{part['Ref']}>"
        if isinstance(part, dict) and "Fn::GetAtt" in part:
            return f"<{'.'.join(part['Fn::GetAtt'])}>"
        if isinstance(part, dict) and "Fn::Join" in part:
            separator, parts = part["Fn::Join"]
            return str(separator).join(text(p) for p in parts)
        return str(part)

    return text(stack.resolve(value))
