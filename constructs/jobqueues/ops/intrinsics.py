"""The CloudFormation intrinsics of a deployed stack's template, computed locally: the one resolver.

:func:`resolve` computes ``Ref`` (pseudo parameters, parameter defaults, physical ids), ``Fn::Join``,
``Fn::Sub``, ``Fn::GetAtt`` of a queue (``Arn``, ``QueueName``, ``QueueUrl``) against a stack's physical ids, and
``Fn::ImportValue`` against the exports of its account and region (a consumer in another stack than its job
queue imports the queue's URL), and raises :class:`Unresolvable` naming what it cannot compute. The ``jobqueues``
command reads its markers' references with it (:mod:`jobqueues.ops.discovery`), on AWS as on the emulator; the
emulator's demo and Lambda driver read values through ``jobqueues.emulator.deployed.DeployedStack.resolve``, and its
post-deploy check skips a value it cannot compute.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol


class Unresolvable(Exception):
    """A template value the emulator cannot compute locally; the message names the intrinsic or resource."""


class Stack(Protocol):
    """What resolving needs of a stack (:class:`jobqueues.ops.stack_template.StackTemplate` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def account(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def template(self) -> dict[str, Any]: ...
    @property
    def physical_ids(self) -> dict[str, str]: ...
    @property
    def exports(self) -> Mapping[str, str]: ...


#: Every intrinsic function :func:`resolve` computes.
FUNCTIONS = frozenset({"Ref", "Fn::Join", "Fn::Sub", "Fn::GetAtt", "Fn::ImportValue"})


def resolve(value: Any, stack: Stack) -> Any:
    """``value`` with every intrinsic of :data:`FUNCTIONS` computed; raise :class:`Unresolvable` for any other."""
    if isinstance(value, list):
        return [resolve(v, stack) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
        return {k: resolve(v, stack) for k, v in value.items()}
    (function, argument), *_ = value.items()
    if function not in FUNCTIONS:
        raise Unresolvable(f"cannot compute {function} locally: {json.dumps(value)[:200]}")
    if function == "Ref":
        return _ref(argument, stack)
    if function == "Fn::Join":
        separator, parts = argument
        return separator.join(str(p) for p in resolve(parts, stack))
    if function == "Fn::Sub":
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        return _sub(text, {k: str(resolve(v, stack)) for k, v in variables.items()}, stack)
    if function == "Fn::ImportValue":
        name = str(resolve(argument, stack))
        if name not in stack.exports:
            raise Unresolvable(f"cannot compute Fn::ImportValue {name} locally: no stack exports it")
        return stack.exports[name]
    logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
    return get_att(logical_id, attribute, stack)


def physical_id(logical_id: str, stack: Stack) -> str:
    """The physical id CloudFormation gave resource ``logical_id`` of ``stack``."""
    try:
        return stack.physical_ids[logical_id]
    except KeyError as error:
        raise Unresolvable(f"{stack.name}/{logical_id} was not created") from error


def resource_type(logical_id: str, stack: Stack) -> str:
    """The template's type of resource ``logical_id``."""
    try:
        return str(stack.template["Resources"][logical_id]["Type"])
    except KeyError as error:
        raise Unresolvable(f"stack {stack.name} has no resource {logical_id}") from error


def get_att(logical_id: str, attribute: str, stack: Stack) -> str:
    """``Fn::GetAtt [logical_id, attribute]``, for the attributes the emulator can compute (a queue's)."""
    kind = resource_type(logical_id, stack)
    physical = physical_id(logical_id, stack)
    if kind == "AWS::SQS::Queue":
        name = physical.rstrip("/").rsplit("/", 1)[-1]
        values = {
            "Arn": f"arn:aws:sqs:{stack.region}:{stack.account}:{name}",
            "QueueName": name,
            "QueueUrl": physical,
        }
        if attribute in values:
            return values[attribute]
    raise Unresolvable(f"cannot compute Fn::GetAtt {logical_id}.{attribute} ({kind}) locally")


def _ref(name: str, stack: Stack) -> str:
    pseudo = {
        "AWS::AccountId": stack.account,
        "AWS::Region": stack.region,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": stack.name,
    }
    if name in pseudo:
        return pseudo[name]
    parameters = stack.template.get("Parameters", {})
    if name in parameters:
        default = parameters[name].get("Default")
        if default is None:
            raise Unresolvable(f"parameter {name} has no default")
        return str(default)
    return physical_id(name, stack)


def _sub(text: str, variables: dict[str, str], stack: Stack) -> str:
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
            logical_id, attribute = name.split(".", 1)
            out.append(get_att(logical_id, attribute, stack))
        else:
            out.append(_ref(name, stack))
    return "".join(out) + rest
