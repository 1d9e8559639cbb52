"""The queue options (delay, message size, FIFO high throughput, removal policies) on the synthesized template:
each on the queue it applies to, cdk-nag and cfn-lint clean."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import CfnParameter, Duration, RemovalPolicy, Size, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Template
from cdk_helpers import ENV, lint_template, new_stack, synth_job_queue
from cdk_nag import AwsSolutionsChecks

from jobqueues import JobQueue, JobQueueAlarmProps
from jobqueues.defaults import oldest_message_age_s


def queues(template: dict) -> tuple[dict, dict]:
    """(source, DLQ) resources, each with its DeletionPolicy and UpdateReplacePolicy."""
    found = [r for r in template["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]
    (source,) = [r for r in found if "RedrivePolicy" in r["Properties"]]
    (dlq,) = [r for r in found if "RedrivePolicy" not in r["Properties"]]
    return source, dlq


def test_defaults_destroy_the_source_queue_retain_the_dlq_and_cap_messages_at_256_kib() -> None:
    # GIVEN a job queue without queue options
    _, template = synth_job_queue(processing_p99=Duration.seconds(3))
    # THEN the source queue goes with the stack, the DLQ stays; only the source has a message size of its own
    source, dlq = queues(template.to_json())
    assert (source["DeletionPolicy"], source["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert (dlq["DeletionPolicy"], dlq["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert source["Properties"]["MaximumMessageSize"] == 262_144
    assert "MaximumMessageSize" not in dlq["Properties"]  # SQS's default: the region's maximum
    assert "DelaySeconds" not in source["Properties"] and "DelaySeconds" not in dlq["Properties"]
    assert "DeduplicationScope" not in source["Properties"]


def test_every_option_lands_on_its_queues_nag_and_lint_clean(tmp_path: Path) -> None:
    # GIVEN a FIFO high-throughput job queue with a delay, a 64 KiB cap, a KMS key, both queues retained
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Options", env=ENV)
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    JobQueue(
        stack,
        "Orders",
        processing_p99=Duration.seconds(20),
        fifo=True,
        encryption_key=key,
        delivery_delay=Duration.minutes(2),
        max_message_size=Size.kibibytes(64),
        deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
        fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        removal_policy=RemovalPolicy.RETAIN,
        dlq_removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # WHEN it synthesizes (raising on any unacknowledged cdk-nag finding)
    assembly = app.synth()
    template = assembly.get_stack_by_name("Options").template
    source, dlq = queues(template)
    # THEN the delay and the cap are the source queue's only; the throughput mode is both queues'
    assert source["Properties"]["DelaySeconds"] == 120
    assert source["Properties"]["MaximumMessageSize"] == 65_536
    assert "DelaySeconds" not in dlq["Properties"] and "MaximumMessageSize" not in dlq["Properties"]
    for queue in (source, dlq):
        assert queue["Properties"]["DeduplicationScope"] == "messageGroup"
        assert queue["Properties"]["FifoThroughputLimit"] == "perMessageGroupId"
    # ... and each queue has its own removal policy
    assert (source["DeletionPolicy"], source["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert (dlq["DeletionPolicy"], dlq["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")

    findings = lint_template(Path(assembly.directory) / "Options.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


def test_the_default_age_alarm_adds_the_delay_a_message_waits() -> None:
    # GIVEN VT 8 min, 5 receives, a 10-minute delay
    _, template = synth_job_queue(processing_p99=Duration.minutes(4), delivery_delay=Duration.minutes(10))
    alarms = template.find_resources(
        "AWS::CloudWatch::Alarm", {"Properties": {"MetricName": "ApproximateAgeOfOldestMessage"}}
    )
    (alarm,) = alarms.values()
    # THEN the threshold is delay + receives x VT
    assert alarm["Properties"]["Threshold"] == 600 + 5 * 480 == oldest_message_age_s(480, 345_600, 5, 600)


def test_an_explicit_age_alarm_above_the_delay_is_kept() -> None:
    _, template = synth_job_queue(
        processing_p99=Duration.seconds(3),
        delivery_delay=Duration.minutes(5),
        alarms=JobQueueAlarmProps(oldest_message_age=Duration.minutes(6)),
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", {"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 360}
    )


def test_the_retries_warning_counts_the_delay() -> None:
    # GIVEN 5 x 10 s of retries (50 s) fit in a 330 s retention, but not after a 5-minute delay
    stack = new_stack()
    JobQueue(
        stack,
        "Late",
        processing_p99=Duration.seconds(3),
        retention_period=Duration.seconds(330),
        delivery_delay=Duration.minutes(5),
        alarms=JobQueueAlarmProps(oldest_message_age=Duration.seconds(310)),
    )
    Annotations.from_stack(stack).has_warning(
        "/Test/Late",
        Match.string_like_regexp(
            r"delivery_delay 5 min \+ max_receive_count 5 x visibility_timeout 10 s = 350 s "
            "exceeds retention_period 330 s"
        ),
    )


def test_token_delay_and_size_reach_the_template_unchecked() -> None:
    # GIVEN the delay and the size as CloudFormation parameters
    stack = new_stack()
    delay = CfnParameter(stack, "Delay", type="Number", default=30)
    size = CfnParameter(stack, "MaxSize", type="Number", default=2048)
    JobQueue(
        stack,
        "Job",
        processing_p99=Duration.seconds(3),
        delivery_delay=Duration.seconds(delay.value_as_number),
        max_message_size=Size.bytes(size.value_as_number),
        alarms=JobQueueAlarmProps(oldest_message_age=Duration.minutes(20)),
    )
    source, _ = queues(Template.from_stack(stack).to_json())
    # THEN both are the parameters' references
    assert source["Properties"]["DelaySeconds"] == {"Ref": "Delay"}
    assert json.dumps(source["Properties"]["MaximumMessageSize"]) == '{"Ref": "MaxSize"}'


def test_the_emulator_app_of_the_queue_options_is_nag_and_lint_clean(tmp_path: Path) -> None:
    from emulator_apps.queue_options_app import STACK_NAME, build_app

    app = build_app(cdk.App(outdir=str(tmp_path)))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    findings = lint_template(Path(assembly.directory) / f"{STACK_NAME}.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []
