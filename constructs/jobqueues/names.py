"""Names that must be unique where they are deployed: job types, and the physical queue names.

- A job type names metrics (the EMF ``JobType`` dimension) and profiles, so it is unique per **deployment
  target**: the nearest ``Stage`` (an ``App`` is one), the stack's account and its region. The same stack in
  a ``Dev`` and a ``Prod`` stage, or in two regions, is fine.
- A queue name is unique per account and region in SQS itself, whatever stage or stack declares it; the
  default names ``<stack>-<job type>`` and ``...-dlq`` can collide across stacks too (stack ``Team`` with job
  ``B-Render`` beside stack ``Team-B`` with job ``Render``).

Registries are kept per app (weakly, so separate apps in one process never mix).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from aws_cdk import Stack, Stage
from constructs import IConstruct


@dataclass(frozen=True)
class StackFacts:
    """What the name checks need to know of a stack, read once (each read is a round-trip to jsii)."""

    name: str
    stage_path: str
    account: str
    region: str
    app: IConstruct

    @property
    def where(self) -> str:
        """Account and region in words; agnostic stacks have tokens there."""
        account = "the stack's account" if "${Token[" in self.account else f"account {self.account}"
        region = "the stack's region" if "${Token[" in self.region else f"region {self.region}"
        return f"{account} and {region}"


@dataclass(frozen=True)
class Declared:
    """A registered name and the declaration that owns it."""

    job_type: str
    construct: IConstruct
    role: str  # "queue" or "dead-letter queue"

    @property
    def path(self) -> str:
        """The construct path, read only for a message (each read is a round-trip to jsii)."""
        return self.construct.node.path


_facts: weakref.WeakKeyDictionary[Stack, StackFacts] = weakref.WeakKeyDictionary()
_job_types: weakref.WeakKeyDictionary[IConstruct, dict[tuple[str, str, str, str], Declared]] = (
    weakref.WeakKeyDictionary()
)
_queue_names: weakref.WeakKeyDictionary[IConstruct, dict[tuple[str, str, str], Declared]] = weakref.WeakKeyDictionary()


_stacks: weakref.WeakKeyDictionary[IConstruct, Stack] = weakref.WeakKeyDictionary()


def stack_of(scope: IConstruct) -> Stack:
    """``Stack.of(scope)``, looked up once per construct: a job type's constructs ask it of the same few scopes,
    and each lookup is a round-trip to the CDK's Node kernel."""
    if isinstance(scope, Stack):
        return scope
    stack = _stacks.get(scope)
    if stack is None:
        stack = _stacks[scope] = Stack.of(scope)
    return stack


def stack_facts(stack: Stack) -> StackFacts:
    """The cached facts of ``stack``."""
    facts = _facts.get(stack)
    if facts is None:
        stage = Stage.of(stack)
        facts = _facts[stack] = StackFacts(
            name=stack.stack_name,
            stage_path=stage.node.path if stage is not None else "",
            account=stack.account,
            region=stack.region,
            app=stack.node.root,
        )
    return facts


def name_conflicts(
    facts: StackFacts, construct: IConstruct, job_type: str, queue_names: list[tuple[str, str]]
) -> list[str]:
    """Errors for a job type or queue name already declared at the same target; empty when all are free.

    :param queue_names: ``(role, physical name)`` pairs of the new declaration (names that are tokens left out).
    """
    errors = []
    target = (facts.stage_path, facts.account, facts.region, job_type)
    earlier = _job_types.get(facts.app, {}).get(target)
    if earlier is not None:
        stage = f"stage {facts.stage_path}" if facts.stage_path else "the app"
        errors.append(
            f"job type {job_type!r} is already declared at {earlier.path} in {stage}, {facts.where}: job type "
            "names must be unique per deployment target (they name metrics and duration profiles); rename one"
        )
    names = _queue_names.get(facts.app, {})
    for role, name in queue_names:
        other = names.get((facts.account, facts.region, name))
        if other is not None:
            errors.append(
                f"the {role} name {name!r} of job type {job_type!r} ({construct.node.path}) is also the "
                f"{other.role} name of job type {other.job_type!r} ({other.path}), in {facts.where}: SQS queue "
                "names are unique per account and region; pass queue_name to one of them, or rename a job type"
            )
    return errors


def register_names(facts: StackFacts, construct: IConstruct, job_type: str, queue_names: list[tuple[str, str]]) -> None:
    """Record a valid declaration's job type and queue names."""
    declared = Declared(job_type, construct, "queue")
    _job_types.setdefault(facts.app, {})[(facts.stage_path, facts.account, facts.region, job_type)] = declared
    names = _queue_names.setdefault(facts.app, {})
    for role, name in queue_names:
        names[(facts.account, facts.region, name)] = Declared(job_type, construct, role)
