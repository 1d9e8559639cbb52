"""``fair=True``: a job type's queue shared by tenants (docs/fair-queues.md). On ``LambdaJob``, ``EcsJob`` and
``JobQueue`` alike: the quiet-group alarm at the threshold the plan derives from the job type's own promise
(``max_queue_time``, else the oldest-message-age alarm's), the dashboard's fair-queue graphs, the marker the
command reads; refused on a FIFO queue with an error naming the prop, the value and the fix; cdk-nag and cfn-lint
clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from cdk_helpers import ENV, lint_template, new_stack, synth_job_queue
from cdk_nag import AwsSolutionsChecks

from jobqueues import EcsJob, JobQueue, JobQueueAlarmProps, JobQueueError, LambdaJob, deploy_time_availability_zones
from jobqueues.declaration import QueueDeclaration, check_declaration
from jobqueues.defaults import queue_time_threshold_ms, quiet_group_age_s
from jobqueues.fair_queue_monitoring import NOISY_GROUPS, QUIET_IN_FLIGHT, QUIET_OLDEST_AGE, QUIET_VISIBLE
from jobqueues.marker_format import QUEUE_MARKER, resource_metadata

REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
HANDLERS = Path(__file__).resolve().parent / "ops_app" / "lambda_handlers"


class JobsStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One stack: a fair LambdaJob with max_queue_time, a fair EcsJob without, a fair JobQueue, and a plain
    LambdaJob; alarms to a topic; AwsSolutions on (synth raises on a finding)."""
    out = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE}, outdir=str(out))
    stack = JobsStack(app, "Tenants", env=ENV)
    topic = sns.Topic(stack, "Pager", enforce_ssl=True)
    code = lambda_.Code.from_asset(str(HANDLERS))
    alerts = LambdaJob(
        stack, "Alerts", code=code, handler="receipts.handle", timeout=Duration.seconds(3), fair=True,
        max_queue_time=Duration.seconds(90.0004), alarms=JobQueueAlarmProps(topic=topic),
    )  # fmt: skip
    reports = EcsJob(stack, "Reports", handler="invoices:handle", processing_p99=Duration.seconds(20), fair=True)
    inbox = JobQueue(stack, "Inbox", processing_p99=Duration.seconds(1), fair=True)
    plain = LambdaJob(stack, "Plain", code=code, handler="receipts.handle", timeout=Duration.seconds(3))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    artifact = assembly.get_stack_by_name("Tenants")
    jobs = {"Alerts": alerts, "Reports": reports, "Inbox": inbox, "Plain": plain}
    return {"template": artifact.template, "file": Path(assembly.directory) / artifact.template_file, "jobs": jobs,
            "stack": stack, "topic": topic}  # fmt: skip


def job_queue(synthesized: dict, job_type: str) -> JobQueue:
    """The job type's JobQueue (a LambdaJob's and an EcsJob's own)."""
    job = synthesized["jobs"][job_type]
    return job if isinstance(job, JobQueue) else job.job_queue


def alarms_of(synthesized: dict, queue_name_of: str) -> dict[str, dict]:
    """The alarms on the job type's source queue, by metric name."""
    queue_id = synthesized["stack"].get_logical_id(job_queue(synthesized, queue_name_of).queue.node.default_child)
    return {
        r["Properties"]["MetricName"]: r["Properties"]
        for r in synthesized["template"]["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and any(
            d.get("Value") == {"Fn::GetAtt": [queue_id, "QueueName"]} for d in r["Properties"].get("Dimensions", [])
        )
    }


def test_the_quiet_group_alarm_holds_the_quiet_tenants_to_max_queue_time(synthesized: dict) -> None:
    alarm = alarms_of(synthesized, "Alerts")[QUIET_OLDEST_AGE]
    # the queue-time alarm's own threshold, max_queue_time rounded up to the millisecond, in the metric's seconds
    assert alarm["Threshold"] == queue_time_threshold_ms(90.0004) / 1000 == 90.001
    assert (alarm["Namespace"], alarm["Statistic"], alarm["Period"]) == ("AWS/SQS", "Maximum", 60)
    assert (alarm["EvaluationPeriods"], alarm["ComparisonOperator"]) == (5, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"
    assert "quiet tenant" in alarm["AlarmDescription"] and "more than 90.001 s" in alarm["AlarmDescription"]
    topic_id = synthesized["stack"].get_logical_id(synthesized["topic"].node.default_child)
    assert alarm["AlarmActions"] == [{"Ref": topic_id}] and alarm["OKActions"] == [{"Ref": topic_id}]
    assert job_queue(synthesized, "Alerts").alarms.quiet_group_age is not None


def test_without_max_queue_time_it_takes_the_oldest_message_alarm_s_threshold(synthesized: dict) -> None:
    for job_type in ("Reports", "Inbox"):
        alarms = alarms_of(synthesized, job_type)
        oldest = alarms["ApproximateAgeOfOldestMessage"]["Threshold"]
        assert alarms[QUIET_OLDEST_AGE]["Threshold"] == oldest, job_type


def test_a_queue_that_is_not_fair_gets_no_fair_queue_alarm_or_graph(synthesized: dict) -> None:
    assert QUIET_OLDEST_AGE not in alarms_of(synthesized, "Plain")
    assert job_queue(synthesized, "Plain").alarms.quiet_group_age is None
    assert NOISY_GROUPS not in dashboard_body(synthesized, "Plain")


def dashboard_body(synthesized: dict, job_type: str) -> str:
    (body,) = [
        json.dumps(r["Properties"]["DashboardBody"])
        for r in synthesized["template"]["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Dashboard" and f"Tenants-{job_type}" in json.dumps(r["Properties"])
    ]
    return body


def test_the_dashboard_graphs_noisy_groups_and_the_quiet_groups_backlog_and_age(synthesized: dict) -> None:
    for job_type in ("Alerts", "Reports"):
        body = dashboard_body(synthesized, job_type)
        for metric in (NOISY_GROUPS, QUIET_VISIBLE, QUIET_IN_FLIGHT, QUIET_OLDEST_AGE):
            assert metric in body, (job_type, metric)
        assert "quiet-group alarm" in body  # the threshold's line on the age graph
    assert '\\"value\\":90.001' in dashboard_body(synthesized, "Alerts").replace(" ", "")


def test_the_marker_says_which_job_types_are_fair(synthesized: dict) -> None:
    markers = {
        m[QUEUE_MARKER]["job_type"]: m[QUEUE_MARKER]
        for m in resource_metadata(synthesized["template"]).values()
        if QUEUE_MARKER in m
    }
    assert {name: marker["fair"] for name, marker in markers.items()} == {
        "Alerts": True, "Reports": True, "Inbox": True, "Plain": False,
    }  # fmt: skip
    assert all(job_queue(synthesized, name).fair == (name != "Plain") for name in synthesized["jobs"])


def test_the_template_passes_cfn_lint(synthesized: dict) -> None:
    findings = lint_template(synthesized["file"])
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


def test_alarms_off_means_no_quiet_group_alarm() -> None:
    job_queue, template = synth_job_queue(
        processing_p99=Duration.seconds(1), fair=True, alarms=JobQueueAlarmProps(enabled=False)
    )
    template.resource_count_is("AWS::CloudWatch::Alarm", 0)
    assert job_queue.fair and job_queue.quiet_group_age_seconds is None


@pytest.mark.parametrize("kind", ["JobQueue", "LambdaJob", "EcsJob"])
def test_fair_on_a_fifo_queue_is_refused_naming_the_prop_the_value_and_the_fix(kind: str) -> None:
    stack = new_stack()
    props: dict[str, Any] = {"fifo": True, "fair": True}
    with pytest.raises(JobQueueError) as raised:
        if kind == "JobQueue":
            JobQueue(stack, "Orders", processing_p99=Duration.seconds(1), **props)
        elif kind == "LambdaJob":
            code = lambda_.Code.from_asset(str(HANDLERS))
            LambdaJob(stack, "Orders", code=code, handler="receipts.handle", timeout=Duration.seconds(3), **props)
        else:
            EcsJob(stack, "Orders", handler="invoices:handle", processing_p99=Duration.seconds(1), **props)
    message = str(raised.value)
    assert "fair=True" in message and "fifo=True" in message
    assert "remove fair" in message or "remove one" in message


def test_fair_must_be_a_bool() -> None:
    with pytest.raises(JobQueueError, match="fair"):
        JobQueue(new_stack(), "Orders", processing_p99=Duration.seconds(1), fair="yes")  # type: ignore[arg-type]


# --- the pure parts: the rule and the threshold ---------------------------------------------------------------------


def test_the_rule_refuses_fair_on_fifo_only() -> None:
    def errors(**declared: Any) -> list[str]:
        return check_declaration(QueueDeclaration("Orders", processing_p99=1.0, **declared)).errors

    assert errors(fair=True) == [] and errors(fifo=True) == []
    (error,) = errors(fair=True, fifo=True)
    assert error.startswith("fair=True is for standard queues, but fifo=True")
    assert "remove fair for order per group, or remove fifo for a fair queue" in error


def test_the_quiet_group_threshold_is_the_declared_promise() -> None:
    # max_queue_time as its queue-time alarm takes it: rounded up to the millisecond
    assert quiet_group_age_s(90.0004, 600) == 90.001
    assert quiet_group_age_s(120, 600) == 120
    # without it, the oldest-message-age alarm's threshold as planned
    assert quiet_group_age_s(None, 600) == 600
