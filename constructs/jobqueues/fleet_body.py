"""The fleet view's dashboard body, written from plain values: a pure function, no CDK object.

The widgets of aws-cdk-lib's ``aws_cloudwatch`` would cost about eight round trips to the CDK's Node kernel a job
type (each metric and metric-math object is one) and the kernel's rendering of them at synth: a quarter of a queue's
synth CPU, measured (docs/benchmarks.md). This module writes the JSON those widgets would render for the same
lines, key for key: ``tests/test_fleet_body.py`` holds it to what aws-cdk-lib renders.

A queue's or a function's name may be a token's text (``${Token[...]}``): the CDK resolves it inside the body, as
it does in the widgets' own JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jobqueues.defaults import CONSUMER_PERIOD_S, IN_FLIGHT_QUOTA
from sqslease.emf import NAMESPACE as EMF_NAMESPACE

#: The worst-first table lists at most this many job types.
WORST_FIRST_LIMIT = 10
#: Two graphs per row of the 24-column grid; the worst-first table takes a row.
GRAPH_WIDTH = 12
GRID_WIDTH = 24
#: Every widget's height (the CloudWatch widgets' default, in grid units).
WIDGET_HEIGHT = 6
WORST_FIRST_TITLE = "Open first: oldest message age / its alarm threshold (1 = the alarm), worst first"
#: Every line is on the consumer period; a line on a dashboard's default period (300 s) does not name it.
_PERIOD: dict[str, int] = {} if CONSUMER_PERIOD_S == 300 else {"period": CONSUMER_PERIOD_S}

Line = list[Any]  # one entry of a widget's "metrics": [namespace, name, dimension, value, {options}] or [{options}]


@dataclass(frozen=True)
class FleetRow:
    """One job type on the fleet view.

    :param job_type: its name, each line's label.
    :param queue_name: its source queue's name.
    :param dead_letter_queue_name: its dead-letter queue's name.
    :param declared_p99_ms: its declared ``processing_p99``, in whole milliseconds; ``None``: none declared (no
        line on the p99 graph).
    :param oldest_age_threshold_s: its oldest-message-age alarm threshold, in seconds; ``None``: alarms off (not in
        the worst-first table).
    :param errors_function_name: its Lambda consumer's function name; ``None``: an ECS consumer, none, or one in
        another stack.
    """

    job_type: str
    queue_name: str
    dead_letter_queue_name: str
    declared_p99_ms: int | None = None
    oldest_age_threshold_s: float | None = None
    errors_function_name: str | None = None


def _metric(
    namespace: str, name: str, dimension: str, value: str, stat: str, *, label: str | None = None, id: str = ""
) -> Line:
    """A metric line as aws-cdk-lib renders it: the label, a hidden metric's id, the period, the statistic."""
    options: dict[str, Any] = {} if label is None else {"label": label}
    if id:
        options.update(id=id, visible=False)
    options.update(_PERIOD, stat=stat)
    return [namespace, name, dimension, value, options]


def _math(expression: str, label: str | None, id: str = "") -> Line:
    """A metric-math line; a hidden one (``id``) after its expression. ``label`` None: none, so that each series of
    an expression that returns several keeps its own label alone."""
    options: dict[str, Any] = {} if label is None else {"label": label}
    options.update(expression=expression, **_PERIOD)
    if id:
        options.update(visible=False, id=id)
    return [options]


def _sqs(queue_name: str, name: str, **options: Any) -> Line:
    return _metric("AWS/SQS", name, "QueueName", queue_name, "Maximum", **options)


def _backlog(i: int, row: FleetRow) -> list[Line]:
    return [
        _math(f"v{i} + f{i}", row.job_type),
        _sqs(row.queue_name, "ApproximateNumberOfMessagesVisible", id=f"v{i}"),
        _sqs(row.queue_name, "ApproximateNumberOfMessagesNotVisible", label=row.job_type, id=f"f{i}"),
    ]


def _oldest(i: int, row: FleetRow) -> list[Line]:
    return [_sqs(row.queue_name, "ApproximateAgeOfOldestMessage", label=row.job_type)]


def _in_flight(i: int, row: FleetRow) -> list[Line]:
    return [_sqs(row.queue_name, "ApproximateNumberOfMessagesNotVisible", label=row.job_type)]


def _dlq_depth(i: int, row: FleetRow) -> list[Line]:
    return [_sqs(row.dead_letter_queue_name, "ApproximateNumberOfMessagesVisible", label=row.job_type)]


def _errors(i: int, row: FleetRow) -> list[Line]:
    if row.errors_function_name is None:
        return []
    return [_metric("AWS/Lambda", "Errors", "FunctionName", row.errors_function_name, "Sum", label=row.job_type)]


def _p99_ratio(i: int, row: FleetRow) -> list[Line]:
    if row.declared_p99_ms is None:
        return []
    return [
        _math(f"p{i} / {row.declared_p99_ms:d}", row.job_type),
        _metric(EMF_NAMESPACE, "ProcessingTime", "JobType", row.job_type, "p99", id=f"p{i}"),
    ]


@dataclass(frozen=True)
class FleetGraph:
    """A graph of the fleet view: its title, the lines of one job type (``i``: its index, which the metric-math
    ids end in, unique in a widget), its annotations (value, label)."""

    title: str
    lines: Callable[[int, FleetRow], list[Line]]
    annotations: tuple[tuple[int, str], ...] = ()


#: The fleet view's graphs, in order (after the worst-first table). A graph with no line is left out: CloudWatch
#: refuses an empty one.
FLEET_GRAPHS: tuple[FleetGraph, ...] = (
    FleetGraph("Backlog (visible + in flight)", _backlog),
    FleetGraph("Age of the oldest message (s)", _oldest),
    FleetGraph("In flight vs the quota", _in_flight, ((IN_FLIGHT_QUOTA, "SQS in-flight quota"),)),
    FleetGraph("Dead-letter queue depth", _dlq_depth),
    FleetGraph("Errors of the Lambda consumers (Sum)", _errors),
    FleetGraph("p99 processing time / the declared processing_p99", _p99_ratio, ((1, "declared"),)),
)


def _worst_first(rows: Sequence[FleetRow]) -> list[Line]:
    """Each job type's oldest age over its own alarm threshold, sorted worst first (1 is that alarm).

    The sort names each ratio: ``METRICS("worst")`` would match none, as CloudWatch's ``METRICS()`` returns the
    graphed metrics and leaves math expressions out (its metric-math reference). Unlabelled, so that each row reads
    its job type alone."""
    ratios: list[Line] = []
    for i, row in enumerate(rows):
        if row.oldest_age_threshold_s:
            ratios += [
                _math(f"FILL(a{i}, 0) / {row.oldest_age_threshold_s:g}", row.job_type, id=f"worst{i}"),
                _sqs(row.queue_name, "ApproximateAgeOfOldestMessage", label=row.job_type, id=f"a{i}"),
            ]
    if not ratios:
        return []
    ids = ", ".join(ratio[0]["id"] for ratio in ratios[::2])
    return [_math(f"SORT([{ids}], MAX, DESC, {WORST_FIRST_LIMIT})", None), *ratios]


def fleet_body(rows: Sequence[FleetRow], region: str) -> str:
    """The dashboard body (JSON text): the worst-first table, then one graph per concern with a line per job type,
    two to a row, each on ``region`` (in a template, the ``AWS::Region`` token's text)."""
    widgets: list[dict[str, Any]] = []
    worst = _worst_first(rows)
    if worst:
        widgets.append(
            _widget(
                GRID_WIDTH,
                {
                    "title": WORST_FIRST_TITLE,
                    "view": "table",
                    "table": {
                        "layout": "horizontal",
                        "showTimeSeriesData": True,
                        "stickySummary": False,
                        "summaryColumns": ["MAX"],
                    },
                    "region": region,
                    "metrics": worst,
                    "yAxis": {},
                },
            )
        )
    for graph in FLEET_GRAPHS:
        lines = [line for i, row in enumerate(rows) for line in graph.lines(i, row)]
        if lines:
            properties: dict[str, Any] = {"view": "timeSeries", "title": graph.title, "region": region}
            properties["metrics"] = lines
            if graph.annotations:
                properties["annotations"] = {
                    "horizontal": [{"value": v, "label": label, "yAxis": "left"} for v, label in graph.annotations]
                }
            properties["yAxis"] = {}
            widgets.append(_widget(GRAPH_WIDTH, properties))
    _place(widgets)
    return json.dumps({"widgets": widgets}, separators=(",", ":"), ensure_ascii=False)


def _widget(width: int, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "metric", "width": width, "height": WIDGET_HEIGHT, "x": 0, "y": 0, "properties": properties}


def _place(widgets: list[dict[str, Any]]) -> None:
    """Left to right, a new row when the grid is full (the table fills one alone)."""
    x = y = 0
    for widget in widgets:
        if x + widget["width"] > GRID_WIDTH:
            x, y = 0, y + WIDGET_HEIGHT
        widget["x"], widget["y"] = x, y
        x += widget["width"]
