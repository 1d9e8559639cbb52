"""Declarations users write that must synthesize: any Duration, Stages, regions, long jobs with leases, tokens."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Template
from cdk_helpers import ENV, new_stack, synth_job_queue

from jobqueues import JobQueue, JobQueueStacks
from sqslease.config import ConsumerConfig


def queue_props(template: Template, name: str) -> dict:
    queues = template.find_resources("AWS::SQS::Queue", {"Properties": {"QueueName": name}})
    (queue,) = queues.values()
    return queue["Properties"]


@pytest.mark.parametrize(
    ("p99", "vt"),
    [(Duration.millis(383), 10), (Duration.millis(6_383), 13), (Duration.seconds(4.5), 10), (Duration.minutes(4), 480)],
)
def test_any_duration_works_and_the_vt_rounds_up(p99: Duration, vt: int) -> None:
    job_queue, template = synth_job_queue(processing_p99=p99)
    assert queue_props(template, "Test-Job")["VisibilityTimeout"] == vt
    assert job_queue.visibility_timeout.to_seconds() == vt


def test_sub_second_explicit_visibility_timeout_and_retention_round_up() -> None:
    _, template = synth_job_queue(
        processing_p99=Duration.millis(100),
        visibility_timeout=Duration.millis(12_300),
        retention_period=Duration.millis(86_400_500),
    )
    props = queue_props(template, "Test-Job")
    assert props["VisibilityTimeout"] == 13
    assert props["MessageRetentionPeriod"] == 86_401


def test_same_stack_in_two_stages_synthesizes() -> None:
    app = cdk.App()
    stacks = {}
    for stage_name in ("Dev", "Prod"):
        stacks[stage_name] = cdk.Stack(cdk.Stage(app, stage_name, env=ENV), "Jobs")
        JobQueue(stacks[stage_name], "EmailSend", processing_p99=Duration.seconds(3))
    app.synth()
    for stage_name, stack in stacks.items():  # stage-prefixed stack names keep the queue names apart
        assert queue_props(Template.from_stack(stack), f"{stage_name}-Jobs-EmailSend")["VisibilityTimeout"] == 10


def test_same_job_type_in_two_regions_synthesizes() -> None:
    app = cdk.App()
    for region in ("us-east-1", "eu-west-1"):
        stack = cdk.Stack(app, f"Jobs-{region}", env=cdk.Environment(account="123456789012", region=region))
        JobQueue(stack, "EmailSend", processing_p99=Duration.seconds(3))
    app.synth()


def test_same_job_type_twice_in_one_stage_is_still_rejected() -> None:
    app = cdk.App()
    stage = cdk.Stage(app, "Prod", env=ENV)
    JobQueue(cdk.Stack(stage, "A"), "EmailSend", processing_p99=Duration.seconds(3))
    with pytest.raises(ValueError, match="already declared at Prod/A/EmailSend in stage Prod"):
        JobQueue(cdk.Stack(stage, "B"), "EmailSend", processing_p99=Duration.seconds(3))


def test_seven_hour_p99_with_lease_extension_synthesizes() -> None:
    job_queue, template = synth_job_queue(
        processing_p99=Duration.hours(7),
        lease_extension=True,
        visibility_timeout=Duration.minutes(10),
        max_processing_time=Duration.hours(11),
    )
    assert queue_props(template, "Test-Job")["VisibilityTimeout"] == 600
    settings = job_queue.consumer_settings()
    assert "max_total_lease" not in settings and settings["max_processing_time"] == str(11 * 3600)


def test_consumer_settings_are_ones_sqslease_accepts() -> None:
    for vt in (7, 10, 600):
        job_queue, _ = synth_job_queue(visibility_timeout=Duration.seconds(vt), lease_extension=True)
        environ = {k: v for k, v in job_queue.consumer_environment().items() if "URL" not in k}
        settings = ConsumerConfig.from_env(environ).lease
        assert settings.visibility_timeout == vt and settings.heartbeat


def test_token_visibility_timeout_alone_with_lease_extension_synthesizes() -> None:
    stack = new_stack()
    vt = Duration.seconds(cdk.CfnParameter(stack, "Lease", type="Number").value_as_number)
    JobQueue(stack, "Job", visibility_timeout=vt, lease_extension=True)
    queue = Template.from_stack(stack).find_resources("AWS::SQS::Queue", {"Properties": {"QueueName": "Test-Job"}})
    (props,) = [q["Properties"] for q in queue.values()]
    assert props["VisibilityTimeout"] == {"Ref": "Lease"}


def test_token_p99_with_an_explicit_visibility_timeout_synthesizes() -> None:
    stack = new_stack()
    p99 = Duration.seconds(cdk.CfnParameter(stack, "P99", type="Number").value_as_number)
    JobQueue(stack, "Job", processing_p99=p99, visibility_timeout=Duration.minutes(5))
    Template.from_stack(stack).has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 300})


def test_stack_resource_limit_context_is_honoured() -> None:
    app = cdk.App(context={"@aws-cdk/core:stackResourceLimit": 100})
    stack = cdk.Stack(app, "Small")
    for i in range(15):  # 15 x 7 + the fleet dashboard = 106 resources
        JobQueue(stack, f"Job{i}", processing_p99=Duration.seconds(3))
    with pytest.raises(Exception, match=r"declares 15 job types = 106 resources; CloudFormation allows 100 per stack"):
        app.synth()
    spread = JobQueueStacks(cdk.App(context={"@aws-cdk/core:stackResourceLimit": 100}), "Jobs")
    for i in range(30):
        spread.add(f"Job{i}", processing_p99=Duration.seconds(3))
    assert len(spread.stacks) == 3  # 14 job types (98 resources) per stack


def test_stack_resource_limit_zero_turns_the_check_off() -> None:
    app = cdk.App(context={"@aws-cdk/core:stackResourceLimit": 0})
    stack = cdk.Stack(app, "Big")
    for i in range(72):
        JobQueue(stack, f"Job{i}", processing_p99=Duration.seconds(3))
    app.synth()


def test_a_lambda_consumer_with_lease_extension_gets_a_shorter_lease() -> None:
    # timeout + max_batching_window + 10 s instead of 6 x timeout + window; the heartbeat keeps it.
    job_queue, template = synth_job_queue(
        lambda_timeout=Duration.seconds(30), max_batching_window=Duration.seconds(5), lease_extension=True
    )
    assert queue_props(template, "Test-Job")["VisibilityTimeout"] == 45
    assert job_queue.consumer_settings()["heartbeat"] == "true"
    assert "lease extension" in job_queue.visibility_timeout_rule


def test_the_shortest_lambda_timeout_and_a_p99_just_below_it_synthesize() -> None:
    synth_job_queue(lambda_timeout=Duration.seconds(2))
    synth_job_queue(lambda_timeout=Duration.seconds(10), processing_p99=Duration.millis(9_999))


@pytest.mark.parametrize("vt", [1, 2, 3, 5, 6, 7, 10])
def test_settings_of_a_short_explicit_vt_with_a_token_p99_are_ones_sqslease_accepts(vt: int) -> None:
    # The p99 is unknown at synth, so nothing relates it to the VT; the consumer must still accept its settings.
    stack = new_stack()
    p99 = Duration.seconds(cdk.CfnParameter(stack, "P99", type="Number").value_as_number)
    job_queue = JobQueue(stack, "Job", processing_p99=p99, visibility_timeout=Duration.seconds(vt))
    environ = {k: v for k, v in job_queue.consumer_environment().items() if "URL" not in k}
    settings = ConsumerConfig.from_env(environ).lease
    assert settings.visibility_timeout == vt and not settings.heartbeat
    args = [
        part
        for name, value in job_queue.consumer_settings().items()
        if "url" not in name
        for part in (f"--{name.replace('_', '-')}", value)
    ]
    assert ConsumerConfig.from_args(args, environ={}).lease == settings
