"""The fleet view: one CloudWatch dashboard per stack over every job type declared in it, with no second declaration.

Each ``JobQueue`` adds itself (:func:`add_to_fleet`) to its stack's :class:`FleetDashboard`, created with the first;
a Lambda consumer bound in the same stack adds its function's errors (:func:`add_consumer_errors`). The widgets are
built once, when the app is synthesized (an aspect on the fleet construct alone: one callback per stack, not one per
construct), from every job type then known: one graph per concern with a line per job type, so the cost per job
type is a few metric objects and no construct.

Which job type to open first: a table, worst first, of each job type's oldest message age divided by its own
oldest-message-age alarm threshold (metric math ``SORT(..., MAX, DESC)``): 1 is that alarm, and the ratio puts a
job type whose 10-second jobs wait 5 min above one whose 8-hour jobs wait 20 min.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import jsii
from aws_cdk import Aspects, Duration, IAspect
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import IConstruct

from jobqueues.defaults import IN_FLIGHT_QUOTA
from jobqueues.interface import IJobQueue
from jobqueues.metrics import consumer_period
from jobqueues.registry import RegisteredConstruct, StackRegistry, registry_of, stack_of

#: The fleet view's construct id in its stack, and its dashboard's name after the stack's (a job type's is
#: ``<stack>-<job type>``).
FLEET_ID = "JobQueuesFleet"
FLEET_DASHBOARD_SUFFIX = "_fleet"
#: The worst-first table lists at most this many job types.
WORST_FIRST_LIMIT = 10
#: Two graphs per row of the 24-column grid; the worst-first table takes a row.
GRAPH_WIDTH = 12


@dataclass
class FleetEntry:
    """One job type on the fleet view.

    :param job_queue: the declared job queue.
    :param oldest_age_threshold_s: its oldest-message-age alarm threshold, in seconds; ``None``: alarms off (not in
        the worst-first table).
    :param errors: its Lambda consumer's function errors (Sum); ``None``: an ECS consumer, none, or one in another
        stack.
    """

    job_queue: IJobQueue
    oldest_age_threshold_s: float | None
    errors: cloudwatch.IMetric | None = None


@dataclass(frozen=True)
class FleetLines:
    """The lines of one job type on the fleet view, each metric object made once (each is a round trip to the
    CDK's Node kernel): ``None`` where the job type has none."""

    backlog: cloudwatch.IMetric
    oldest: cloudwatch.IMetric
    in_flight: cloudwatch.IMetric
    dlq_depth: cloudwatch.IMetric
    errors: cloudwatch.IMetric | None
    p99_ratio: cloudwatch.IMetric | None
    worst: cloudwatch.IMetric | None


def fleet_lines(i: int, e: FleetEntry, period: Duration) -> FleetLines:
    """Job type ``i``'s lines; metric-math ids end in ``i``, unique in a widget."""
    q, label = e.job_queue, e.job_queue.job_type
    in_flight = q.queue.metric_approximate_number_of_messages_not_visible(
        statistic="Maximum", period=period, label=label
    )
    oldest = q.queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=period, label=label)
    declared_s = q.processing_p99_seconds
    return FleetLines(
        backlog=cloudwatch.MathExpression(
            expression=f"v{i} + f{i}",
            using_metrics={f"v{i}": q.metric_visible(period), f"f{i}": in_flight},
            label=label,
            period=period,
        ),
        oldest=oldest,
        in_flight=in_flight,
        dlq_depth=q.dead_letter_queue.metric_approximate_number_of_messages_visible(
            statistic="Maximum", period=period, label=label
        ),
        errors=e.errors,
        p99_ratio=None
        if declared_s is None
        else cloudwatch.MathExpression(
            expression=f"p{i} / {round(declared_s * 1000):d}",
            using_metrics={f"p{i}": q.metric_processing_time("p99", period)},
            label=label,
            period=period,
        ),
        # Worst first: the oldest age over its own alarm threshold (1 is the alarm).
        worst=None
        if not e.oldest_age_threshold_s
        else cloudwatch.MathExpression(
            expression=f"FILL(a{i}, 0) / {e.oldest_age_threshold_s:g}",
            using_metrics={f"a{i}": oldest},
            label=label,
            period=period,
        ),
    )


@dataclass(frozen=True)
class FleetGraph:
    """A graph of the fleet view: its title, the line of one job type, its annotations (value, label)."""

    title: str
    line: Callable[[FleetLines], cloudwatch.IMetric | None]
    annotations: tuple[tuple[float, str], ...] = ()


#: The fleet view's graphs, in order (after the worst-first table).
FLEET_GRAPHS: tuple[FleetGraph, ...] = (
    FleetGraph("Backlog (visible + in flight)", lambda lines: lines.backlog),
    FleetGraph("Age of the oldest message (s)", lambda lines: lines.oldest),
    FleetGraph("In flight vs the quota", lambda lines: lines.in_flight, ((IN_FLIGHT_QUOTA, "SQS in-flight quota"),)),
    FleetGraph("Dead-letter queue depth", lambda lines: lines.dlq_depth),
    FleetGraph("Errors of the Lambda consumers (Sum)", lambda lines: lines.errors),
    FleetGraph("p99 processing time / the declared processing_p99", lambda lines: lines.p99_ratio, ((1, "declared"),)),
)


class FleetDashboard(RegisteredConstruct):
    """The fleet view of one stack: a dashboard named ``<stack name>_fleet``, its widgets built at synthesis."""

    def __init__(self, registry: StackRegistry) -> None:
        super().__init__(registry.stack, FLEET_ID)
        #: The job types on the view, in declaration order.
        self.entries: dict[str, FleetEntry] = {}
        #: The dashboard.
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{registry.facts.name}{FLEET_DASHBOARD_SUFFIX}"
        )
        Aspects.of(self).add(_BuildWidgets(self))

    def build_widgets(self) -> None:
        """The worst-first table, then one graph per concern with a line per job type."""
        period = consumer_period(self)
        lines = [fleet_lines(i, e, period) for i, e in enumerate(self.entries.values())]
        worst = _worst_first(lines, period)
        if worst is not None:
            self.dashboard.add_widgets(worst)
        # A graph with no line (no Lambda consumer, no declared p99) is left out: CloudWatch refuses an empty one.
        graphs = [g for spec in FLEET_GRAPHS if (g := _graph(spec, lines)) is not None]
        for start in range(0, len(graphs), 2):
            self.dashboard.add_widgets(*graphs[start : start + 2])


def _graph(spec: FleetGraph, lines: list[FleetLines]) -> cloudwatch.GraphWidget | None:
    metrics = [line for each in lines if (line := spec.line(each)) is not None]
    if not metrics:
        return None
    return cloudwatch.GraphWidget(
        title=spec.title,
        left=metrics,
        left_annotations=[cloudwatch.HorizontalAnnotation(value=v, label=label) for v, label in spec.annotations],
        width=GRAPH_WIDTH,
    )


def _worst_first(lines: list[FleetLines], period: Duration) -> cloudwatch.TableWidget | None:
    """Each job type's oldest age over its own alarm threshold, sorted worst first (1 is that alarm)."""
    ratios = {f"worst{i}": each.worst for i, each in enumerate(lines) if each.worst is not None}
    if not ratios:
        return None
    return cloudwatch.TableWidget(
        title="Open first: oldest message age / its alarm threshold (1 = the alarm), worst first",
        metrics=[
            cloudwatch.MathExpression(
                expression=f'SORT(METRICS("worst"), MAX, DESC, {WORST_FIRST_LIMIT})',
                using_metrics=ratios,
                period=period,
            )
        ],
        summary=cloudwatch.TableSummaryProps(columns=[cloudwatch.TableSummaryColumn.MAXIMUM]),
        width=2 * GRAPH_WIDTH,
    )


@jsii.implements(IAspect)
class _BuildWidgets:
    """Builds the fleet view's widgets once, when the app is synthesized (every job type is declared by then)."""

    def __init__(self, fleet: FleetDashboard) -> None:
        self._fleet: FleetDashboard | None = fleet

    def visit(self, node: IConstruct) -> None:
        fleet, self._fleet = self._fleet, None
        if fleet is not None:
            fleet.build_widgets()


def fleet_of(scope: IConstruct) -> FleetDashboard:
    """The fleet view of ``scope``'s stack, created on first use."""
    registry = registry_of(scope)
    if registry.fleet is None:
        registry.fleet = FleetDashboard(registry)
    return cast(FleetDashboard, registry.fleet)


def add_to_fleet(job_queue: IJobQueue, oldest_age_threshold_s: float | None) -> None:
    """Show a declared job queue on its stack's fleet view."""
    fleet_of(cast(IConstruct, job_queue)).entries[job_queue.job_type] = FleetEntry(job_queue, oldest_age_threshold_s)


def add_consumer_errors(job_queue: IJobQueue, scope: IConstruct, errors: cloudwatch.IMetric) -> None:
    """Show a consumer's errors on its job type's fleet view line, when both are in one stack (a reference to
    another stack's function would make the job queue's stack depend on it, a cycle)."""
    registry = registry_of(cast(IConstruct, job_queue))
    fleet = cast("FleetDashboard | None", registry.fleet)
    entry = fleet.entries.get(job_queue.job_type) if fleet is not None else None
    if entry is not None and stack_of(scope) is registry.stack:
        entry.errors = errors
