"""The stalled-consumer alarm, time to drain and the fleet view (docs/monitoring.md).

Thresholds are pure functions, tested without the CDK; the alarms, widgets and the one fleet dashboard per stack are
read from synthesized templates (Lambda and ECS job types, FIFO and standard), which pass cdk-nag and cfn-lint.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_lambda as lambda_
from cdk_helpers import ENV, lint_template

from jobqueues import EcsJob, JobQueue, JobQueueError, LambdaJob
from jobqueues.consumer_alarms import lease_leak_periods
from jobqueues.fleet_body import WORST_FIRST_LIMIT
from jobqueues.fleet_dashboard import FLEET_DASHBOARD_SUFFIX
from jobqueues.metrics import CONSUMER_PERIOD_S
from jobqueues.progress_alarms import (
    DRAIN_EVALUATION_PERIODS,
    STALL_AGE_MIN_S,
    stall_age_threshold_s,
    stall_periods,
)

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = str(ROOT / "lambda_src" / "handlers")
REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"


# --- the thresholds, pure ---------------------------------------------------------------------------------------
def test_the_stall_age_threshold_is_one_lease_past_the_delay_without_a_declared_wait() -> None:
    assert stall_age_threshold_s(visibility_timeout_s=480) == 480
    assert stall_age_threshold_s(visibility_timeout_s=480, delivery_delay_s=120) == 600


def test_the_stall_age_threshold_is_the_promised_wait_when_max_queue_time_is_declared() -> None:
    assert stall_age_threshold_s(visibility_timeout_s=480, max_queue_time_s=120) == 120
    assert stall_age_threshold_s(visibility_timeout_s=10, max_queue_time_s=900, delivery_delay_s=60) == 960


def test_the_stall_age_threshold_is_at_least_a_minute_the_metric_resolution() -> None:
    assert stall_age_threshold_s(visibility_timeout_s=10) == STALL_AGE_MIN_S == 60
    assert stall_age_threshold_s(visibility_timeout_s=10, max_queue_time_s=0.5) == 60
    assert stall_age_threshold_s(visibility_timeout_s=90.2) == 91  # whole seconds, rounded up


def test_the_stall_window_is_the_longest_a_message_may_legitimately_be_worked_on() -> None:
    # The lease-leak alarm's window: one source for "no deletion yet is still healthy".
    for vt, extension, mpt in ((10, False, None), (480, False, None), (60, True, 3 * 3600), (300, True, None)):
        assert stall_periods(vt, extension, mpt) == lease_leak_periods(vt, extension, mpt)
    assert stall_periods(480, False, None) * CONSUMER_PERIOD_S >= 480
    assert stall_periods(60, True, 3 * 3600) * CONSUMER_PERIOD_S >= 3 * 3600


# --- templates --------------------------------------------------------------------------------------------------
def _app(outdir: Path) -> cdk.App:
    return cdk.App(
        context={"jobqueues:image": REGISTRY_IMAGE, "aws:cdk:enable-asset-metadata": True}, outdir=str(outdir)
    )


def _declare(stack: cdk.Stack) -> dict[str, Any]:
    code = lambda_.Code.from_asset(HANDLERS)
    return {
        "Thumbnails": LambdaJob(
            stack,
            "Thumbnails",
            code=code,
            handler="thumbs.handle",
            timeout=Duration.seconds(30),
            max_time_to_drain=Duration.minutes(30),
        ),
        "Orders": LambdaJob(
            stack, "Orders", code=code, handler="thumbs.handle", timeout=Duration.seconds(10), fifo=True
        ),
        "Transcode": EcsJob(
            stack,
            "Transcode",
            handler="media.transcode:handle",
            processing_p99=Duration.minutes(4),
            max_processing_time=Duration.hours(3),
            max_queue_time=Duration.minutes(10),
        ),
        "Ledger": EcsJob(stack, "Ledger", handler="ledger:handle", processing_p99=Duration.seconds(2), fifo=True),
        "Bare": JobQueue(stack, "Bare", processing_p99=Duration.seconds(1)),
    }


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from cdk_nag import AwsSolutionsChecks

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = _app(outdir)
    stack = cdk.Stack(app, "Jobs", env=ENV)
    jobs = _declare(stack)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "jobs": jobs, "template": assembly.get_stack_by_name("Jobs").template, "dir": outdir}


def _resource(synthesized: dict[str, Any], construct: Any) -> dict[str, Any]:
    logical_id = synthesized["stack"].get_logical_id(construct.node.default_child)
    return synthesized["template"]["Resources"][logical_id]["Properties"]  # type: ignore[no-any-return]


def _queries(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["Id"]: q for q in alarm["Metrics"]}


def _body(template: dict[str, Any], name_suffix: str) -> dict[str, Any]:
    """A dashboard's body, its tokens replaced by a marker (the JSON around them is the construct's)."""
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        name = resource["Properties"]["DashboardName"]
        if isinstance(name, str) and name.endswith(name_suffix):
            parts = resource["Properties"]["DashboardBody"]["Fn::Join"][1]
            return json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))  # type: ignore[no-any-return]
    raise AssertionError(f"no dashboard named *{name_suffix}")


@pytest.mark.parametrize("job_type", ["Thumbnails", "Orders", "Transcode", "Ledger"])
def test_every_consumer_gets_a_stall_alarm_waiting_messages_and_no_deletes(
    synthesized: dict[str, Any], job_type: str
) -> None:
    job = synthesized["jobs"][job_type]
    alarm = _resource(synthesized, job.alarms.stalled)
    queries = _queries(alarm)
    job_queue = job.job_queue
    threshold = stall_age_threshold_s(
        job_queue.visibility_timeout_seconds, job_queue.max_queue_time_seconds, job_queue.delivery_delay_seconds
    )
    expression = next(q for q in alarm["Metrics"] if q.get("ReturnData", True))["Expression"]
    assert expression == f"IF(FILL(age, 0) > {threshold} AND FILL(deleted, 0) < 1, 1, 0)"
    age, deleted = queries["age"]["MetricStat"], queries["deleted"]["MetricStat"]
    assert (age["Metric"]["MetricName"], age["Stat"]) == ("ApproximateAgeOfOldestMessage", "Maximum")
    assert (deleted["Metric"]["MetricName"], deleted["Stat"]) == ("NumberOfMessagesDeleted", "Sum")
    assert age["Period"] == deleted["Period"] == CONSUMER_PERIOD_S
    # Both on the job type's own source queue.
    queue_name = {"Fn::GetAtt": [synthesized["stack"].get_logical_id(job_queue.queue.node.default_child), "QueueName"]}
    assert (
        age["Metric"]["Dimensions"] == deleted["Metric"]["Dimensions"] == [{"Name": "QueueName", "Value": queue_name}]
    )
    # A quiet queue publishes nothing: missing data never alarms.
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["EvaluationPeriods"] == stall_periods(
        job_queue.visibility_timeout_seconds, job_queue.lease_extension, job_queue.max_processing_time_seconds
    )


def test_the_stall_threshold_follows_max_queue_time_when_declared(synthesized: dict[str, Any]) -> None:
    alarm = _resource(synthesized, synthesized["jobs"]["Transcode"].alarms.stalled)
    expression = next(q for q in alarm["Metrics"] if q.get("ReturnData", True))["Expression"]
    assert "FILL(age, 0) > 600 " in expression  # max_queue_time 10 min, not the 8 min VT
    assert alarm["EvaluationPeriods"] == 3 * 3600 // CONSUMER_PERIOD_S  # max_processing_time 3 h


def test_max_time_to_drain_adds_a_time_to_drain_alarm(synthesized: dict[str, Any]) -> None:
    thumbs = synthesized["jobs"]["Thumbnails"]
    alarm = _resource(synthesized, thumbs.alarms.time_to_drain)
    expression = next(q for q in alarm["Metrics"] if q.get("ReturnData", True))["Expression"]
    assert expression == f"(visible + inflight) * {CONSUMER_PERIOD_S} / (FILL(deleted, 0) + 1)"
    assert alarm["Threshold"] == 30 * 60 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["EvaluationPeriods"] == DRAIN_EVALUATION_PERIODS
    assert alarm["TreatMissingData"] == "notBreaching"
    assert synthesized["jobs"]["Orders"].alarms.time_to_drain is None  # optional: only when declared


def test_consumer_alarms_notify_like_the_others(synthesized: dict[str, Any]) -> None:
    for job in ("Thumbnails", "Transcode"):
        alarms = synthesized["jobs"][job].alarms
        assert alarms.stalled in alarms.all()
    thumbs = synthesized["jobs"]["Thumbnails"].alarms
    assert thumbs.time_to_drain in thumbs.all()


@pytest.mark.parametrize("job_type", ["Thumbnails", "Ledger"])
def test_each_job_dashboard_shows_time_to_drain(synthesized: dict[str, Any], job_type: str) -> None:
    body = _body(synthesized["template"], f"-{job_type}")
    widget = next(w for w in body["widgets"] if w["properties"].get("title", "").startswith("Time to drain"))
    expressions = [m[0]["expression"] for m in widget["properties"]["metrics"] if "expression" in m[0]]
    # The graph's period, not the alarm's 300 s: a dashboard lengthens its graphs' period on long time ranges
    # (periodOverride auto), and deleted is then a sum over that period.
    assert expressions == ["(visible + inflight) * PERIOD(deleted) / (FILL(deleted, 0) + 1)"]
    annotations = widget["properties"].get("annotations", {}).get("horizontal", [])
    assert [a["value"] for a in annotations] == ([1800] if job_type == "Thumbnails" else [])


def test_one_fleet_dashboard_per_stack_over_every_declared_job_type(synthesized: dict[str, Any]) -> None:
    dashboards = [
        r["Properties"]["DashboardName"]
        for r in synthesized["template"]["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    assert sorted(dashboards) == sorted(
        [f"Jobs-{j}" for j in ("Thumbnails", "Orders", "Transcode", "Ledger")] + [f"Jobs{FLEET_DASHBOARD_SUFFIX}"]
    )
    body = _body(synthesized["template"], FLEET_DASHBOARD_SUFFIX)
    graphs = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if "title" in w["properties"]}
    everyone = {"Thumbnails", "Orders", "Transcode", "Ledger", "Bare"}
    for title in (
        "Backlog (visible + in flight)",
        "Age of the oldest message (s)",
        "In flight vs the quota",
        "Dead-letter queue depth",
    ):
        labels = {m[-1]["label"] for m in graphs[title]["metrics"] if m[-1].get("visible", True)}
        assert labels == everyone, title
    quota = graphs["In flight vs the quota"]["annotations"]["horizontal"]
    assert [a["value"] for a in quota] == [120_000]


def test_the_fleet_shows_measured_p99_against_the_declared_one(synthesized: dict[str, Any]) -> None:
    body = _body(synthesized["template"], FLEET_DASHBOARD_SUFFIX)
    graph = next(w["properties"] for w in body["widgets"] if w["properties"].get("title", "").startswith("p99"))
    ratios = {m[0]["label"]: m[0]["expression"] for m in graph["metrics"] if "expression" in m[0]}
    # Only job types with a declared processing_p99: measured p99 (ms) / declared (ms); 1 is the declaration.
    assert set(ratios) == {"Transcode", "Ledger", "Bare"}
    assert ratios["Transcode"].endswith(" / 240000") and ratios["Ledger"].endswith(" / 2000")
    assert [a["value"] for a in graph["annotations"]["horizontal"]] == [1]


def test_the_fleet_shows_lambda_errors(synthesized: dict[str, Any]) -> None:
    body = _body(synthesized["template"], FLEET_DASHBOARD_SUFFIX)
    graph = next(w["properties"] for w in body["widgets"] if w["properties"].get("title", "").startswith("Errors"))
    lines = [m for m in graph["metrics"]]
    assert {m[-1]["label"] for m in lines} == {"Thumbnails", "Orders"}
    assert all(m[0:2] == ["AWS/Lambda", "Errors"] for m in lines)


def test_the_fleet_tells_which_job_type_to_open_first(synthesized: dict[str, Any]) -> None:
    body = _body(synthesized["template"], FLEET_DASHBOARD_SUFFIX)
    first = body["widgets"][0]["properties"]
    assert first["view"] == "table" and first["title"].startswith("Open first")
    metrics = first["metrics"]
    ratios = {m[0]["label"]: m[0]["expression"] for m in metrics[1:] if "expression" in m[0]}
    assert set(ratios) == {"Thumbnails", "Orders", "Transcode", "Ledger", "Bare"}
    # The sort names each ratio (METRICS() would leave expressions out), unlabelled: each row reads its job type.
    ids = ", ".join(m[0]["id"] for m in metrics[1:] if "expression" in m[0])
    assert metrics[0][0] == {"expression": f"SORT([{ids}], MAX, DESC, {WORST_FIRST_LIMIT})"}
    # Each oldest age over its own oldest-message-age alarm threshold: 1 is that alarm.
    jobs = synthesized["jobs"]
    for name, expression in ratios.items():
        job_queue = jobs[name] if name == "Bare" else jobs[name].job_queue
        assert expression.endswith(f" / {job_queue.plan.alarms.oldest_message_age_s:g}"), (name, expression)
    hidden = [m for m in metrics[1:]]
    assert all(m[-1].get("visible") is False for m in hidden)


def test_no_dashboard_sorts_expressions_with_metrics(synthesized: dict[str, Any]) -> None:
    # CloudWatch's METRICS() returns the graphed metrics only: "Math expressions aren't included" (the metric-math
    # reference). A METRICS("worst") over the worst-first ratios, which are expressions, matched nothing on AWS.
    for resource in synthesized["template"]["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        parts = resource["Properties"]["DashboardBody"]["Fn::Join"][1]
        body = json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))
        for widget in body["widgets"]:
            lines = widget["properties"].get("metrics", [])
            metric_ids = {
                line[-1].get("id") for line in lines if isinstance(line[0], str) and isinstance(line[-1], dict)
            }
            expressions = [line[0] for line in lines if isinstance(line[0], dict)]
            expression_ids = {e.get("id") for e in expressions}
            for expression in expressions:
                for wanted in re.findall(r'METRICS\("([^"]*)"\)', expression["expression"]):
                    matched = {i for i in metric_ids | expression_ids if i and wanted in i}
                    assert matched and matched <= metric_ids, (widget["properties"].get("title"), wanted, matched)


def test_the_templates_are_cfn_lint_clean(synthesized: dict[str, Any]) -> None:
    findings = lint_template(synthesized["dir"] / "Jobs.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


def test_each_stack_of_a_stage_gets_its_own_fleet_view(tmp_path: Path) -> None:
    app = _app(tmp_path)
    stage = cdk.Stage(app, "Prod", env=ENV)
    first, second = cdk.Stack(stage, "Billing"), cdk.Stack(stage, "Media")
    JobQueue(first, "Invoices", processing_p99=Duration.seconds(3))
    JobQueue(first, "Receipts", processing_p99=Duration.seconds(3))
    JobQueue(second, "Resize", processing_p99=Duration.seconds(3))
    cdk.Stack(stage, "Empty")  # no job type: no fleet view
    app.synth()
    assembly = stage.synth()
    for stack, job_types in (("Billing", {"Invoices", "Receipts"}), ("Media", {"Resize"})):
        template = assembly.get_stack_by_name(f"Prod-{stack}").template
        body = _body(template, FLEET_DASHBOARD_SUFFIX)
        backlog = next(
            w["properties"] for w in body["widgets"] if w["properties"].get("title", "").startswith("Backlog")
        )
        assert {m[-1]["label"] for m in backlog["metrics"] if m[-1].get("visible", True)} == job_types
    empty = assembly.get_stack_by_name("Prod-Empty").template.get("Resources", {})
    assert not [r for r in empty.values() if r["Type"] == "AWS::CloudWatch::Dashboard"]


# --- bad input --------------------------------------------------------------------------------------------------
BAD_DRAIN: dict[str, tuple[Any, str]] = {
    "zero": (Duration.seconds(0), "max_time_to_drain must be positive (got 0 s)"),
    "below the period": (
        Duration.minutes(2),
        "max_time_to_drain 2 min is below the 5 min the deletion rate is measured over: raise it to at least 5 min",
    ),
    "beyond retention": (
        Duration.days(5),
        "max_time_to_drain 5 days exceeds retention_period 4 days: messages expire before the backlog drains",
    ),
}


@pytest.mark.parametrize("case", BAD_DRAIN)
def test_a_bad_max_time_to_drain_fails_the_synth_naming_the_fix(case: str) -> None:
    value, message = BAD_DRAIN[case]
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    with pytest.raises(JobQueueError) as error:
        JobQueue(stack, "Job", processing_p99=Duration.seconds(1), max_time_to_drain=value)
    assert message in str(error.value)


def test_max_time_to_drain_with_the_alarms_off_fails_the_synth() -> None:
    from jobqueues import JobQueueAlarmProps

    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    with pytest.raises(JobQueueError, match=r"max_time_to_drain declares a time-to-drain alarm, but alarms\.enabled"):
        JobQueue(
            stack,
            "Job",
            processing_p99=Duration.seconds(1),
            max_time_to_drain=Duration.minutes(30),
            alarms=JobQueueAlarmProps(enabled=False),
        )


def test_max_time_to_drain_on_a_job_queue_that_never_gets_a_consumer_fails_the_synth() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=ENV)
    JobQueue(stack, "Job", processing_p99=Duration.seconds(1), max_time_to_drain=Duration.minutes(30))
    with pytest.raises(Exception, match=r"max_time_to_drain .* has no consumer in this app"):
        app.synth()


def test_max_time_to_drain_without_a_consumer_names_the_declaration_the_prop_the_value_and_the_fix() -> None:
    # GIVEN a job queue declaring max_time_to_drain that no consumer is ever bound to (one may be bound after the
    # declaration, so only the synth knows)
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=ENV)
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    JobQueue(stack, "Job", processing_p99=Duration.seconds(1), max_time_to_drain=Duration.minutes(30))
    # WHEN the app synthesizes, THEN the error is a declaration error's text: the type, the job queue, the line
    # that declared it, the prop, the value and both fixes
    with pytest.raises(RuntimeError) as error:
        app.synth()
    text = str(error.value)
    declared = rf"JobQueueError: JobQueue Jobs/Job \(declared at \S*{Path(__file__).name}:{line}\) cannot be deployed:"
    assert re.search(declared, text), text
    assert "  - max_time_to_drain 30 min declares a time-to-drain alarm on the consumer" in text
    assert "bind one (add_lambda_consumer, add_ecs_consumer) or remove max_time_to_drain" in text
