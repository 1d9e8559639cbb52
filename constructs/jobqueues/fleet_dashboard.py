"""The fleet view: one CloudWatch dashboard per stack over every job type declared in it, with no second declaration.

Each ``JobQueue`` adds itself (:func:`add_to_fleet`) to its stack's :class:`FleetDashboard`, created with the first;
a Lambda consumer bound in the same stack adds its function's errors (:func:`add_consumer_errors`). The body is
written once, when the app is synthesized (an aspect on the fleet construct alone: one callback per stack, not one
per construct), from every job type then known, by :func:`jobqueues.fleet_body.fleet_body`: a job type costs two
names read from the kernel and no metric object.

Which job type to open first: a table, worst first, of each job type's oldest message age divided by its own
oldest-message-age alarm threshold (metric math ``SORT(..., MAX, DESC)``): 1 is that alarm, and the ratio puts a
job type whose 10-second jobs wait 5 min above one whose 8-hour jobs wait 20 min.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import jsii
from aws_cdk import Aspects, Aws, IAspect
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from jobqueues.fleet_body import FleetRow, fleet_body
from jobqueues.interface import IJobQueue
from jobqueues.registry import RegisteredConstruct, StackRegistry, registry_of, stack_of

__all__ = ["FLEET_DASHBOARD_SUFFIX", "FLEET_ID", "FleetDashboard", "add_consumer_errors", "add_to_fleet"]

#: The fleet view's construct id in its stack, and its dashboard's name after the stack's (a job type's is
#: ``<stack>-<job type>``).
FLEET_ID = "JobQueuesFleet"
FLEET_DASHBOARD_SUFFIX = "_fleet"


@dataclass
class FleetEntry:
    """One job type on the fleet view.

    :param job_queue: the declared job queue.
    :param oldest_age_threshold_s: its oldest-message-age alarm threshold, in seconds; ``None``: alarms off (not in
        the worst-first table).
    :param errors_of: its Lambda consumer's function, whose errors (Sum) it shows; ``None``: an ECS consumer, none,
        or one in another stack.
    """

    job_queue: IJobQueue
    oldest_age_threshold_s: float | None
    errors_of: lambda_.IFunction | None = None

    def row(self) -> FleetRow:
        """The values the body is written from (each name a round trip to the kernel)."""
        q, declared_s = self.job_queue, self.job_queue.processing_p99_seconds
        return FleetRow(
            job_type=q.job_type,
            queue_name=q.queue.queue_name,
            dead_letter_queue_name=q.dead_letter_queue.queue_name,
            declared_p99_ms=None if declared_s is None else round(declared_s * 1000),
            oldest_age_threshold_s=self.oldest_age_threshold_s,
            errors_function_name=None if self.errors_of is None else self.errors_of.function_name,
        )


class FleetDashboard(RegisteredConstruct):
    """The fleet view of one stack: a dashboard named ``<stack name>_fleet``, its body written at synthesis."""

    def __init__(self, registry: StackRegistry) -> None:
        super().__init__(registry.stack, FLEET_ID)
        #: The job types on the view, in declaration order.
        self.entries: dict[str, FleetEntry] = {}
        #: The dashboard (under ``Dashboard/Resource``: the logical id aws-cdk-lib's ``Dashboard`` gave it).
        self.dashboard = cloudwatch.CfnDashboard(
            Construct(self, "Dashboard"),
            "Resource",
            dashboard_name=f"{registry.facts.name}{FLEET_DASHBOARD_SUFFIX}",
            dashboard_body="{}",
        )
        Aspects.of(self).add(_WriteBody(self))

    def write_body(self) -> None:
        """The worst-first table, then one graph per concern with a line per job type."""
        self.dashboard.dashboard_body = fleet_body([e.row() for e in self.entries.values()], Aws.REGION)


@jsii.implements(IAspect)
class _WriteBody:
    """Writes the fleet view's body once, when the app is synthesized (every job type is declared by then)."""

    def __init__(self, fleet: FleetDashboard) -> None:
        self._fleet: FleetDashboard | None = fleet

    def visit(self, node: IConstruct) -> None:
        fleet, self._fleet = self._fleet, None
        if fleet is not None:
            fleet.write_body()


def fleet_of(scope: IConstruct) -> FleetDashboard:
    """The fleet view of ``scope``'s stack, created on first use."""
    registry = registry_of(scope)
    if registry.fleet is None:
        registry.fleet = FleetDashboard(registry)
    return cast(FleetDashboard, registry.fleet)


def add_to_fleet(job_queue: IJobQueue, oldest_age_threshold_s: float | None) -> None:
    """Show a declared job queue on its stack's fleet view."""
    fleet_of(cast(IConstruct, job_queue)).entries[job_queue.job_type] = FleetEntry(job_queue, oldest_age_threshold_s)


def add_consumer_errors(job_queue: IJobQueue, scope: IConstruct, function: lambda_.IFunction) -> None:
    """Show a Lambda consumer's errors on its job type's fleet view line, when both are in one stack (a reference to
    another stack's function would make the job queue's stack depend on it, a cycle)."""
    registry = registry_of(cast(IConstruct, job_queue))
    fleet = cast("FleetDashboard | None", registry.fleet)
    entry = fleet.entries.get(job_queue.job_type) if fleet is not None else None
    if entry is not None and stack_of(scope) is registry.stack:
        entry.errors_of = function
