"""GIVEN job types on a fleet view (with and without a declared p99, an alarm threshold, a Lambda consumer's errors)
WHEN ``jobqueues.fleet_body`` writes the dashboard body from plain values THEN it is, character for character, the
JSON aws-cdk-lib's own ``aws_cloudwatch`` widgets render for the same lines, which is what the fleet view was built
from before it cost a quarter of a queue's synth CPU (docs/benchmarks.md).

The oracle is aws-cdk-lib itself: its ``Metric``, ``MathExpression``, ``GraphWidget``, ``TableWidget`` and
``Dashboard``, resolved in a stack. What the lines mean is tested on synthesized templates in
``tests/test_monitoring.py``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobqueues.defaults import CONSUMER_PERIOD_S
from jobqueues.fleet_body import FLEET_GRAPHS, GRAPH_WIDTH, WORST_FIRST_LIMIT, WORST_FIRST_TITLE, FleetRow, fleet_body
from jobqueues.metrics import emf_metric

REGION = "eu-west-1"


def _l2_lines(i: int, row: FleetRow, period: Duration) -> dict[str, cloudwatch.IMetric | None]:
    """One job type's lines as the fleet view made them with aws-cdk-lib's objects (a metric shared between two
    graphs is one object, as it was)."""

    def sqs(queue: str, name: str, label: str | None = None) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="AWS/SQS",
            metric_name=name,
            dimensions_map={"QueueName": queue},
            statistic="Maximum",
            period=period,
            label=label,
        )

    in_flight = sqs(row.queue_name, "ApproximateNumberOfMessagesNotVisible", row.job_type)
    oldest = sqs(row.queue_name, "ApproximateAgeOfOldestMessage", row.job_type)
    p99 = emf_metric(row.job_type, "ProcessingTime", "p99", period)  # the constructs' own, which their alarms use
    return {
        "Backlog (visible + in flight)": cloudwatch.MathExpression(
            expression=f"v{i} + f{i}",
            using_metrics={f"v{i}": sqs(row.queue_name, "ApproximateNumberOfMessagesVisible"), f"f{i}": in_flight},
            label=row.job_type,
            period=period,
        ),
        "Age of the oldest message (s)": oldest,
        "In flight vs the quota": in_flight,
        "Dead-letter queue depth": sqs(row.dead_letter_queue_name, "ApproximateNumberOfMessagesVisible", row.job_type),
        "Errors of the Lambda consumers (Sum)": None
        if row.errors_function_name is None
        else cloudwatch.Metric(
            namespace="AWS/Lambda",
            metric_name="Errors",
            dimensions_map={"FunctionName": row.errors_function_name},
            statistic="Sum",
            period=period,
            label=row.job_type,
        ),
        "p99 processing time / the declared processing_p99": None
        if row.declared_p99_ms is None
        else cloudwatch.MathExpression(
            expression=f"p{i} / {row.declared_p99_ms}", using_metrics={f"p{i}": p99}, label=row.job_type, period=period
        ),
        "worst": None
        if not row.oldest_age_threshold_s
        else cloudwatch.MathExpression(
            expression=f"FILL(a{i}, 0) / {row.oldest_age_threshold_s:g}",
            using_metrics={f"a{i}": oldest},
            label=row.job_type,
            period=period,
        ),
    }


_stacks = itertools.count()


def _rendered_by_aws_cdk_lib(app: cdk.App, rows: list[FleetRow]) -> str:
    stack = cdk.Stack(app, f"Oracle{next(_stacks)}")
    period = Duration.seconds(CONSUMER_PERIOD_S)
    lines = [_l2_lines(i, row, period) for i, row in enumerate(rows)]
    dashboard = cloudwatch.Dashboard(stack, "Dashboard")
    ratios = {f"worst{i}": each["worst"] for i, each in enumerate(lines) if each["worst"] is not None}
    if ratios:
        sort = cloudwatch.MathExpression(
            expression=f"SORT([{', '.join(ratios)}], MAX, DESC, {WORST_FIRST_LIMIT})",
            using_metrics=ratios,
            period=period,
            label="",  # aws-cdk-lib's way to leave each sorted series its own label alone
        )
        dashboard.add_widgets(
            cloudwatch.TableWidget(
                title=WORST_FIRST_TITLE,
                metrics=[sort],
                summary=cloudwatch.TableSummaryProps(columns=[cloudwatch.TableSummaryColumn.MAXIMUM]),
                width=2 * GRAPH_WIDTH,
                region=REGION,
            )
        )
    graphs = []
    for spec in FLEET_GRAPHS:
        metrics = [m for each in lines if (m := each[spec.title]) is not None]
        if metrics:
            graphs.append(
                cloudwatch.GraphWidget(
                    title=spec.title,
                    left=metrics,
                    left_annotations=[cloudwatch.HorizontalAnnotation(value=v, label=lb) for v, lb in spec.annotations],
                    width=GRAPH_WIDTH,
                    region=REGION,
                )
            )
    for start in range(0, len(graphs), 2):
        dashboard.add_widgets(*graphs[start : start + 2])
    body = stack.resolve(dashboard.node.default_child.dashboard_body)  # type: ignore[union-attr]
    assert isinstance(body, str), body  # plain names: no token left to join
    return body


@pytest.fixture(scope="module")
def app() -> cdk.App:
    return cdk.App()


names = st.text(alphabet="abcXYZ019-_", min_size=1, max_size=12)


@st.composite
def rows(draw: st.DrawFn, job_type: str) -> FleetRow:
    """A job type's row; its queues' and function's names are its own (a stack's are unique: aws-cdk-lib would draw
    two equal metrics as one line)."""
    prefix, fifo = draw(names), draw(st.sampled_from(["", ".fifo"]))
    return FleetRow(
        job_type=job_type,
        queue_name=f"{prefix}.{job_type}{fifo}",
        dead_letter_queue_name=f"{prefix}.{job_type}-dlq{fifo}",
        declared_p99_ms=draw(st.none() | st.integers(1, 12 * 3600 * 1000)),
        oldest_age_threshold_s=draw(st.none() | st.sampled_from([60.0, 300.0, 417.5, 86_400.0])),
        errors_function_name=draw(st.none() | names.map(lambda fn: f"{fn}.{job_type}")),
    )


fleets = st.lists(names, min_size=1, max_size=7, unique=True).flatmap(lambda jobs: st.tuples(*map(rows, jobs)))


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fleet=fleets)
def test_the_body_is_what_aws_cdk_libs_widgets_render(app: cdk.App, fleet: tuple[FleetRow, ...]) -> None:
    assert fleet_body(fleet, REGION) == _rendered_by_aws_cdk_lib(app, list(fleet))


def test_every_graph_and_the_table_when_every_line_is_there(app: cdk.App) -> None:
    # GIVEN two job types with every line WHEN written THEN a table row and three rows of two graphs
    fleet = [
        FleetRow("Render", "Jobs-Render", "Jobs-Render-dlq", 2000, 300.0, "RenderFn"),
        FleetRow("Bill", "Jobs-Bill.fifo", "Jobs-Bill-dlq.fifo", 383, 600.0, None),
    ]
    body = fleet_body(fleet, REGION)
    assert body == _rendered_by_aws_cdk_lib(app, fleet)
    widgets: list[dict[str, Any]] = json.loads(body)["widgets"]
    assert [(w["x"], w["y"], w["width"]) for w in widgets] == [
        (0, 0, 24),
        (0, 6, 12),
        (12, 6, 12),
        (0, 12, 12),
        (12, 12, 12),
        (0, 18, 12),
        (12, 18, 12),
    ]


def test_no_table_and_no_empty_graph_without_their_lines(app: cdk.App) -> None:
    # GIVEN a job type with its alarms off, no declared p99 and no Lambda consumer WHEN written THEN only its four
    # queue graphs (CloudWatch refuses an empty graph)
    fleet = [FleetRow("Quiet", "Jobs-Quiet", "Jobs-Quiet-dlq")]
    body = fleet_body(fleet, REGION)
    assert body == _rendered_by_aws_cdk_lib(app, fleet)
    assert [w["properties"]["title"] for w in json.loads(body)["widgets"]] == [g.title for g in FLEET_GRAPHS[:4]]
