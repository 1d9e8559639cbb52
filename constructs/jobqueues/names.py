"""Names that must be unique where they are deployed: job types, and the physical queue names.

- A job type names metrics (the EMF ``JobType`` dimension) and profiles, so it is unique per **deployment
  target**: the nearest ``Stage`` (an ``App`` is one), the stack's account and its region. The same stack in
  a ``Dev`` and a ``Prod`` stage, or in two regions, is fine.
- A queue name is unique per account and region in SQS itself, whatever stage or stack declares it; the
  default names ``<stack>-<job type>`` and ``...-dlq`` can collide across stacks too (stack ``Team`` with job
  ``B-Render`` beside stack ``Team-B`` with job ``Render``).

Each app keeps its names in a :class:`NameRegistry`, held on the construct tree by the app's
:class:`jobqueues.registry.AppRegistry`, so separate apps in one process never mix.
"""

from __future__ import annotations

from dataclasses import dataclass

from constructs import IConstruct


@dataclass(frozen=True)
class StackFacts:
    """What the name checks need to know of a stack, read once (each read is a round-trip to jsii)."""

    name: str
    stage_path: str
    account: str
    region: str

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


class NameRegistry:
    """The job types and queue names declared in one app, each with the declaration that owns it."""

    def __init__(self) -> None:
        #: (stage path, account, region, job type) -> its declaration.
        self.job_types: dict[tuple[str, str, str, str], Declared] = {}
        #: (account, region, physical queue name) -> the declaration whose queue or DLQ it names.
        self.queue_names: dict[tuple[str, str, str], Declared] = {}

    def declarer(self, facts: StackFacts, job_type: str) -> IConstruct | None:
        """The construct that declared ``job_type`` at ``facts``' deployment target; ``None``: none did."""
        declared = self.job_types.get((facts.stage_path, facts.account, facts.region, job_type))
        return None if declared is None else declared.construct

    def conflicts(
        self, facts: StackFacts, construct: IConstruct, job_type: str, queue_names: list[tuple[str, str]]
    ) -> list[str]:
        """Errors for a job type or queue name already declared at the same target; empty when all are free.

        :param queue_names: ``(role, physical name)`` pairs of the new declaration (names that are tokens left out).
        """
        errors = []
        earlier = self.job_types.get((facts.stage_path, facts.account, facts.region, job_type))
        if earlier is not None:
            stage = f"stage {facts.stage_path}" if facts.stage_path else "the app"
            errors.append(
                f"job type {job_type!r} is already declared at {earlier.path} in {stage}, {facts.where}: job type "
                "names must be unique per deployment target (they name metrics and duration profiles); rename one"
            )
        for role, name in queue_names:
            other = self.queue_names.get((facts.account, facts.region, name))
            if other is not None:
                errors.append(
                    f"the {role} name {name!r} of job type {job_type!r} ({construct.node.path}) is also the "
                    f"{other.role} name of job type {other.job_type!r} ({other.path}), in {facts.where}: SQS queue "
                    "names are unique per account and region; pass queue_name to one of them, or rename a job type"
                )
        return errors

    def register(
        self, facts: StackFacts, construct: IConstruct, job_type: str, queue_names: list[tuple[str, str]]
    ) -> None:
        """Record a valid declaration's job type and queue names."""
        self.job_types[(facts.stage_path, facts.account, facts.region, job_type)] = Declared(
            job_type, construct, "queue"
        )
        for role, name in queue_names:
            self.queue_names[(facts.account, facts.region, name)] = Declared(job_type, construct, role)
