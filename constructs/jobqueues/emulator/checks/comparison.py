"""Comparing a template's properties with what the emulator returns: resolved, normalised, counted.

:class:`Comparison` collects one resource's mismatches; a checker of :mod:`jobqueues.emulator.checks` (one module
per service, as the handlers of :mod:`jobqueues.emulator.cfn`) reads the resource back and feeds it. Template values
with intrinsics are resolved by :mod:`jobqueues.ops.intrinsics` (the one resolver); a value it cannot compute is
not compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from jobqueues.ops import intrinsics


class Clients(Protocol):
    """What a checker needs of the emulator: a boto3 client per service (``LocalServer`` has it)."""

    def client(self, service: str) -> Any: ...


class Unresolved:
    """A template value the check does not compute (``Fn::GetAtt``, ``Fn::Sub``, ...): it is not compared."""


UNRESOLVED = Unresolved()


def resolve(value: Any, stack: intrinsics.Stack) -> Any:
    """``value`` with its intrinsics computed (:func:`jobqueues.ops.intrinsics.resolve`, the one resolver), else
    :data:`UNRESOLVED`."""
    try:
        return intrinsics.resolve(value, stack)
    except intrinsics.Unresolvable:
        return UNRESOLVED


def physical_id_of(value: Any, stack: intrinsics.Stack, attribute: str) -> Any:
    """``value`` resolved, where ``Fn::GetAtt [Resource, attribute]`` is the resource's physical id (a key's ``Arn``,
    compared by its key id; a group's ``GroupId``); :data:`UNRESOLVED` for another attribute or an unknown one."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        logical_id, name = target.split(".", 1) if isinstance(target, str) else target
        return stack.physical_ids.get(logical_id, UNRESOLVED) if name == attribute else UNRESOLVED
    return resolve(value, stack)


def kms_key(value: Any, stack: intrinsics.Stack | None = None) -> Any:
    """A KMS key as the key id or alias, from a template value or an attribute; "none" when absent.

    The template's ``Fn::GetAtt [Key, Arn]`` resolves to the key's physical id (its key id); the resource
    reports what CloudFormation passed it (the ARN), compared by its key id.
    """
    if value is None or value == "":
        return "none"
    if stack is not None:
        get_att = isinstance(value, dict) and "Fn::GetAtt" in value
        value = physical_id_of(value, stack, "Arn")
        if get_att:
            return value
    if isinstance(value, str) and ":key/" in value:
        return value.rsplit("/", 1)[-1]
    return value


def _normal(value: Any) -> Any:
    """Numbers and numeric strings as floats, so ``"30"``, ``30`` and ``30.0`` compare equal."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


class Comparison:
    """Collects mismatches between template properties and what the emulator returns."""

    def __init__(self, properties: dict[str, Any], stack: intrinsics.Stack) -> None:
        self.properties = properties
        self.stack = stack
        self.mismatches: list[str] = []
        self.compared = 0

    def expect(self, name: str, actual: Any, default: Any = None) -> None:
        """Compare property ``name`` (or ``default`` when the template omits it) with ``actual``."""
        self.expect_value(name, self.properties.get(name, default), actual)

    def expect_value(self, label: str, template_value: Any, actual: Any) -> None:
        """Compare a value taken from the template (resolved here) with ``actual``; skip it if absent."""
        expected = resolve(template_value, self.stack)
        if expected is None or expected is UNRESOLVED:
            return
        self.compared += 1
        if _normal(expected) != _normal(actual):
            self.mismatches.append(f"{label}: template {expected!r}, emulator {actual!r}")


#: A resource type's check: read the resource (its physical id) back and compare it.
Checker = Callable[[Clients, str, Comparison], None]
