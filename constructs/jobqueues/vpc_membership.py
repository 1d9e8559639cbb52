"""Which VPC a security group or a subnet of the app is in, compared with a job's ``vpc`` where both are known.

A group or subnet made in the app (``ec2.SecurityGroup``, the subnets of an ``ec2.Vpc``) records its VPC id; an
imported one (``from_security_group_id``, ``from_subnet_id``) does not, and is not compared. Two ids are compared
only when each is either a literal id (``vpc-...``) or a reference to a VPC resource of the same stack: anything
else (an import from another stack, a parameter) is unknown at synth, and not guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_ec2 as ec2

from jobqueues.consumer_rules import OutsideMember


def members_outside(vpc: ec2.IVpc, groups: Sequence[Any], subnets: ec2.SubnetSelection | None) -> list[OutsideMember]:
    """The groups given, and the subnets ``subnets`` names one by one, known to be in another VPC than ``vpc``."""
    home = _vpc_identity(vpc, vpc.vpc_id)
    if home is None:
        return []
    members = [(f"security_groups[{i}]", group) for i, group in enumerate(groups)]
    members += [(f"vpc_subnets.subnets[{i}]", subnet) for i, subnet in enumerate((subnets and subnets.subnets) or [])]
    outside = []
    for prop, member in members:
        resource = member.node.default_child
        vpc_id = getattr(resource, "vpc_id", None) if resource is not None else None
        if vpc_id is None or vpc_id == vpc.vpc_id:  # unknown, or the very token of vpc's id
            continue
        other = _vpc_identity(member, vpc_id)
        # Comparable: two literal ids, or two resources of one stack (a reference across stacks is not resolved
        # until synth, and is not guessed at).
        if other is not None and _same_stack(other[0], home[0]) and other[1] != home[1]:
            outside.append(OutsideMember(prop, member.node.path, _name(other)))
    return outside


def _vpc_identity(scope: Any, vpc_id: Any) -> tuple[Stack | None, str] | None:
    """(``None``, a literal id), or (the stack, the logical id) of a ``Ref`` in ``scope``'s stack; else None."""
    if isinstance(vpc_id, str) and not Token.is_unresolved(vpc_id):
        return (None, vpc_id)
    stack = Stack.of(scope)
    resolved = stack.resolve(vpc_id)
    if isinstance(resolved, dict) and set(resolved) == {"Ref"}:
        return (stack, str(resolved["Ref"]))
    return None


def _same_stack(a: Stack | None, b: Stack | None) -> bool:
    return a is b or (a is not None and b is not None and a.node.path == b.node.path)


def _name(identity: tuple[Stack | None, str]) -> str:
    """A VPC for the message: its construct path when it is a VPC of the stack, else its id or logical id."""
    stack, vpc_id = identity
    if stack is not None:
        for vpc in (c for c in stack.node.find_all() if isinstance(c, ec2.Vpc)):
            if stack.get_logical_id(vpc.node.default_child) == vpc_id:  # type: ignore[arg-type]
                return str(vpc.node.path)
    return vpc_id
