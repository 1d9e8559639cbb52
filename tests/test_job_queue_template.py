"""What a JobQueue synthesizes, asserted on the CloudFormation template (no snapshots, no hashed ids)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Capture, Match, Template
from cdk_helpers import new_stack, synth_job_queue

from jobqueues import JobQueue, JobQueueAlarmProps
from jobqueues.defaults import oldest_message_age_s as default_oldest_message_age_s


def source_queue(template: Template) -> dict:
    queues = template.find_resources("AWS::SQS::Queue", {"Properties": {"RedrivePolicy": Match.any_value()}})
    assert len(queues) == 1, queues
    return next(iter(queues.values()))["Properties"]


def alarm_on(template: Template, metric_name: str) -> dict:
    alarms = template.find_resources("AWS::CloudWatch::Alarm", {"Properties": {"MetricName": metric_name}})
    assert len(alarms) == 1, alarms
    return next(iter(alarms.values()))["Properties"]


@pytest.mark.parametrize(
    ("props", "expected_vt"),
    [
        ({"processing_p99": Duration.minutes(4)}, 480),
        ({"processing_p99": Duration.seconds(3)}, 10),
        ({"lambda_timeout": Duration.seconds(30), "max_batching_window": Duration.seconds(5)}, 185),
        # The p99 rule wins over a Lambda timeout only with lease extension (the p99 is below the timeout).
        (
            {"processing_p99": Duration.seconds(25), "lambda_timeout": Duration.seconds(30), "lease_extension": True},
            50,
        ),
    ],
)
def test_visibility_timeout_is_derived(props: dict, expected_vt: int) -> None:
    job_queue, template = synth_job_queue(**props)
    assert source_queue(template)["VisibilityTimeout"] == expected_vt
    assert job_queue.visibility_timeout.to_seconds() == expected_vt


def test_explicit_visibility_timeout_at_or_above_derived_is_kept() -> None:
    job_queue, template = synth_job_queue(processing_p99=Duration.seconds(3), visibility_timeout=Duration.seconds(60))
    assert source_queue(template)["VisibilityTimeout"] == 60
    assert job_queue.visibility_timeout_rule == "explicit visibility_timeout"


def test_lease_extension_allows_a_shorter_lease() -> None:
    job_queue, template = synth_job_queue(
        processing_p99=Duration.minutes(40), visibility_timeout=Duration.minutes(5), lease_extension=True
    )
    assert source_queue(template)["VisibilityTimeout"] == 300
    assert job_queue.lease_extension


def test_queue_and_dlq_pair_defaults() -> None:
    _, template = synth_job_queue("Email", processing_p99=Duration.seconds(3))
    template.resource_count_is("AWS::SQS::Queue", 2)
    dlq_arn = Capture()
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": "Test-Email",
            "MessageRetentionPeriod": 4 * 86_400,
            "SqsManagedSseEnabled": True,
            "RedrivePolicy": {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5},
        },
    )
    dlq_logical_id = dlq_arn.as_object()["Fn::GetAtt"][0]
    dlq = template.to_json()["Resources"][dlq_logical_id]["Properties"]
    assert dlq["QueueName"] == "Test-Email-dlq"
    assert dlq["MessageRetentionPeriod"] == 14 * 86_400
    assert dlq["SqsManagedSseEnabled"] is True
    # The DLQ accepts redrive only from its source queue, named by ARN (no circular reference).
    allow = dlq["RedriveAllowPolicy"]
    assert allow["redrivePermission"] == "byQueue"
    (source_arn,) = allow["sourceQueueArns"]
    assert json.dumps(source_arn).endswith(':Test-Email"]]}')


def test_both_queues_have_a_tls_only_policy() -> None:
    _, template = synth_job_queue(processing_p99=Duration.seconds(3))
    policies = template.find_resources("AWS::SQS::QueuePolicy")
    assert len(policies) == 2
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
        )


def test_kms_key_encrypts_both_queues() -> None:
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    JobQueue(stack, "Job", processing_p99=Duration.seconds(3), encryption_key=key)
    template = Template.from_stack(stack)
    queues = template.find_resources("AWS::SQS::Queue")
    for queue in queues.values():
        assert "Fn::GetAtt" in queue["Properties"]["KmsMasterKeyId"]
        assert "SqsManagedSseEnabled" not in queue["Properties"]


def test_fifo_pair() -> None:
    _, template = synth_job_queue(
        "Orders", processing_p99=Duration.seconds(2), fifo=True, content_based_deduplication=True
    )
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {"QueueName": "Test-Orders.fifo", "FifoQueue": True, "ContentBasedDeduplication": True},
    )
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {"QueueName": "Test-Orders-dlq.fifo", "FifoQueue": True, "RedriveAllowPolicy": Match.any_value()},
    )


@pytest.mark.parametrize("fifo", [False, True])
def test_in_flight_alarm_at_80_percent_of_the_quota_for_standard_and_fifo(fifo: bool) -> None:
    _, template = synth_job_queue(processing_p99=Duration.seconds(3), fifo=fifo)
    alarm = alarm_on(template, "ApproximateNumberOfMessagesNotVisible")
    assert alarm["Threshold"] == 96_000
    assert alarm["Statistic"] == "Maximum"
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert "OverLimit" in alarm["AlarmDescription"]


def test_dlq_alarm_counts_visible_messages_on_the_dlq() -> None:
    _, template = synth_job_queue("Email", processing_p99=Duration.seconds(3))
    alarm = alarm_on(template, "ApproximateNumberOfMessagesVisible")
    assert alarm["Threshold"] == 1
    (dimension,) = alarm["Dimensions"]
    assert dimension["Name"] == "QueueName"
    assert dimension["Value"]["Fn::GetAtt"][0].startswith("EmailDeadLetterQueue")


def test_oldest_message_age_alarm_default_is_derived() -> None:
    # 5 receives x 480 s = 2400 s, within [5 min, retention / 2].
    _, template = synth_job_queue(processing_p99=Duration.minutes(4))
    assert alarm_on(template, "ApproximateAgeOfOldestMessage")["Threshold"] == 2400
    assert default_oldest_message_age_s(10, 345_600, 5) == 300  # floor
    assert default_oldest_message_age_s(43_200, 345_600, 10) == 172_800  # half of retention


def test_every_alarm_threshold_is_overridable_and_topic_gets_alarm_and_ok_actions() -> None:
    stack = new_stack()
    topic = sns.Topic(stack, "Topic")
    JobQueue(
        stack,
        "Job",
        processing_p99=Duration.seconds(3),
        alarms=JobQueueAlarmProps(
            in_flight_quota=20_000,
            in_flight_fraction=0.5,
            oldest_message_age=Duration.minutes(30),
            dlq_depth=10,
            topic=topic,
        ),
    )
    template = Template.from_stack(stack)
    assert alarm_on(template, "ApproximateNumberOfMessagesNotVisible")["Threshold"] == 10_000
    assert alarm_on(template, "ApproximateAgeOfOldestMessage")["Threshold"] == 1800
    assert alarm_on(template, "ApproximateNumberOfMessagesVisible")["Threshold"] == 10
    for alarm in template.find_resources("AWS::CloudWatch::Alarm").values():
        (action,) = alarm["Properties"]["AlarmActions"]
        assert action["Ref"].startswith("Topic")
        assert alarm["Properties"]["OKActions"] == alarm["Properties"]["AlarmActions"]


def test_max_queue_time_alarms_on_the_p99_queue_time_sqslease_consumers_write() -> None:
    # GIVEN a queue with no consumer in this stack (the team's own sqslease consumer writes the metric), a promised
    # p99 wait of 90 s and an alarm topic
    stack = new_stack()
    topic = sns.Topic(stack, "Topic")
    job_queue = JobQueue(
        stack,
        "Email",
        processing_p99=Duration.seconds(3),
        max_queue_time=Duration.seconds(90),
        alarms=JobQueueAlarmProps(topic=topic),
    )
    template = Template.from_stack(stack)
    # THEN one alarm reads the EMF metric's p99 per job type, over 5-minute periods, above 90,000 ms for 15 min
    alarm = alarm_on(template, "QueueTime")
    assert alarm["Namespace"] == "jobqueues" and alarm["Dimensions"] == [{"Name": "JobType", "Value": "Email"}]
    assert alarm["ExtendedStatistic"] == "p99" and alarm["Period"] == 300 and alarm["EvaluationPeriods"] == 3
    assert alarm["Threshold"] == 90_000 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching" and "max_queue_time 90 s" in alarm["AlarmDescription"]
    # AND it notifies the topic like the other alarms
    (action,) = alarm["AlarmActions"]
    assert action["Ref"].startswith("Topic") and alarm["OKActions"] == alarm["AlarmActions"]
    assert job_queue.alarms is not None and job_queue.alarms.queue_time is not None
    assert job_queue.max_queue_time_seconds == 90


def test_without_max_queue_time_there_is_no_queue_time_alarm() -> None:
    job_queue, template = synth_job_queue(processing_p99=Duration.seconds(3))
    assert template.find_resources("AWS::CloudWatch::Alarm", {"Properties": {"MetricName": "QueueTime"}}) == {}
    assert job_queue.alarms is not None and job_queue.alarms.queue_time is None
    assert job_queue.max_queue_time_seconds is None


def test_alarms_can_be_disabled() -> None:
    job_queue, template = synth_job_queue(processing_p99=Duration.seconds(3), alarms=JobQueueAlarmProps(enabled=False))
    template.resource_count_is("AWS::CloudWatch::Alarm", 0)
    assert job_queue.alarms is None


def test_grants() -> None:
    stack = new_stack()
    job_queue = JobQueue(stack, "Job", processing_p99=Duration.seconds(3))
    producer = iam.Role(stack, "Producer", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    consumer = iam.Role(stack, "Consumer", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    job_queue.grant_send_messages(producer)
    job_queue.grant_consume_messages(consumer)
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    actions_by_role: dict[str, set[str]] = {}
    for policy in policies.values():
        (role,) = policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions_by_role.setdefault(role["Ref"], set()).update([actions] if isinstance(actions, str) else actions)
    producer_actions = next(v for k, v in actions_by_role.items() if k.startswith("Producer"))
    consumer_actions = next(v for k, v in actions_by_role.items() if k.startswith("Consumer"))
    assert "sqs:SendMessage" in producer_actions and "sqs:ReceiveMessage" not in producer_actions
    assert {"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:SendMessage"} <= (
        consumer_actions
    )


def test_warns_when_retries_outlive_retention() -> None:
    stack = new_stack()
    JobQueue(
        stack,
        "Slow",
        processing_p99=Duration.hours(2),  # VT 4 h
        max_receive_count=10,  # 40 h of retries
        retention_period=Duration.days(1),
        dlq_retention_period=Duration.days(14),
    )
    Annotations.from_stack(stack).has_warning("/Test/Slow", Match.string_like_regexp("expire before reaching the DLQ"))


def test_no_warning_for_sane_declarations() -> None:
    stack = new_stack()
    JobQueue(stack, "Fine", processing_p99=Duration.seconds(3))
    Annotations.from_stack(stack).has_no_warning("*", Match.any_value())


def test_consumer_environment_comes_from_the_same_declaration() -> None:
    from aws_cdk import Stack

    from sqslease.config import ConsumerConfig

    job_queue, _ = synth_job_queue(
        "Report", processing_p99=Duration.minutes(40), visibility_timeout=Duration.minutes(5), lease_extension=True
    )
    env = job_queue.consumer_environment()
    resolved = Stack.of(job_queue).resolve(env["SQSLEASE_QUEUE_URL"])
    assert resolved["Ref"].startswith("ReportQueue")
    settings = ConsumerConfig.from_env({k: v for k, v in env.items() if "QUEUE_URL" not in k}).lease
    assert settings.visibility_timeout == 300 and settings.heartbeat and settings.job_type == "Report"
