"""Bad declarations fail at synth with one error that lists every problem and says what to change."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Token
from cdk_helpers import new_stack

from jobqueues import JobQueue, JobQueueAlarmProps, JobQueueError, QueueDeclaration, check_declaration

P99 = {"processing_p99": Duration.seconds(3)}

BAD_DECLARATIONS = [
    ("no basis", {}, "no basis for the visibility timeout"),
    ("zero p99", {"processing_p99": Duration.seconds(0)}, "processing_p99 must be positive"),
    (
        "p99 too long for 12 h",
        {"processing_p99": Duration.hours(7)},
        "gives a visibility timeout of 14 h; SQS allows at most 12 h: split the job or run it on an ECS consumer",
    ),
    ("explicit VT over 12 h", {**P99, "visibility_timeout": Duration.hours(13)}, "between 0 s and 12 h"),
    (
        "explicit VT below derived",
        {"processing_p99": Duration.minutes(4), "visibility_timeout": Duration.minutes(5)},
        "below the derived minimum 8 min",
    ),
    (
        "VT below function timeout, even with leases",
        {"lambda_timeout": Duration.seconds(60), "visibility_timeout": Duration.seconds(30), "lease_extension": True},
        "below lambda_timeout 1 min",
    ),
    ("lambda timeout over 15 min", {"lambda_timeout": Duration.minutes(16)}, "lambda_timeout must be between"),
    (
        "batching window over 5 min",
        {"lambda_timeout": Duration.seconds(30), "max_batching_window": Duration.minutes(6)},
        "max_batching_window must be between",
    ),
    ("batching window without lambda", {**P99, "max_batching_window": Duration.seconds(5)}, "only applies to a Lambda"),
    ("max receive count 0", {**P99, "max_receive_count": 0}, "max_receive_count must be between 1 and 1000"),
    ("max receive count 1001", {**P99, "max_receive_count": 1001}, "max_receive_count must be between 1 and 1000"),
    (
        "DLQ retention not longer",
        {**P99, "retention_period": Duration.days(14), "dlq_retention_period": Duration.days(14)},
        "must be longer than retention_period",
    ),
    ("retention over 14 days", {**P99, "retention_period": Duration.days(15)}, "retention_period must be between"),
    ("FIFO name without .fifo", {**P99, "fifo": True, "queue_name": "orders"}, "must end in '.fifo'"),
    ("standard queue named .fifo", {**P99, "queue_name": "orders.fifo"}, "ends in '.fifo' but fifo=False"),
    ("dedup without FIFO", {**P99, "content_based_deduplication": True}, "content_based_deduplication needs fifo"),
    ("queue name too long", {**P99, "queue_name": "q" * 81}, "SQS allows 80"),
    ("queue name bad characters", {**P99, "queue_name": "my queue!"}, "may only contain letters"),
    (
        "max processing time over 12 h",
        {**P99, "max_processing_time": Duration.hours(13), "lease_extension": True},
        "exceeds 12 h",
    ),
    (
        "max processing time over VT without leases",
        {**P99, "max_processing_time": Duration.minutes(5)},
        "set lease_extension=True",
    ),
    (
        "alarm fraction over 1",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_fraction=1.5)},
        "in_flight_alarm_fraction",
    ),
    ("alarm quota zero", {**P99, "alarms": JobQueueAlarmProps(in_flight_quota=0)}, "in_flight_quota must be positive"),
    (
        "age alarm beyond retention",
        {**P99, "alarms": JobQueueAlarmProps(oldest_message_age=Duration.days(5))},
        "messages would expire before the alarm fires",
    ),
    ("DLQ alarm at 0", {**P99, "alarms": JobQueueAlarmProps(dlq_depth=0)}, "dlq_depth threshold must be at least 1"),
]


@pytest.mark.parametrize(("case", "props", "message"), BAD_DECLARATIONS, ids=[c[0] for c in BAD_DECLARATIONS])
def test_bad_declaration_is_rejected_at_synth(case: str, props: dict, message: str) -> None:
    with pytest.raises(JobQueueError) as raised:
        JobQueue(new_stack(), "Job", **props)
    assert message in str(raised.value)
    assert str(raised.value).startswith("JobQueue Test/Job cannot be deployed:")


def test_every_problem_is_listed_in_one_error() -> None:
    with pytest.raises(JobQueueError) as raised:
        JobQueue(
            new_stack(),
            "Job",
            processing_p99=Duration.hours(7),
            max_receive_count=0,
            fifo=True,
            queue_name="orders",
        )
    problems = [line for line in str(raised.value).splitlines() if line.startswith("  - ")]
    assert len(problems) == 3, problems


def test_duplicate_job_type_names_across_stacks_are_rejected() -> None:
    app = cdk.App()
    JobQueue(cdk.Stack(app, "A"), "Email", **P99)
    with pytest.raises(JobQueueError, match=r"job type 'Email' is already declared at A/Email"):
        JobQueue(cdk.Stack(app, "B"), "Email", **P99)


def test_same_job_type_in_separate_apps_is_fine() -> None:
    JobQueue(new_stack(), "Email", **P99)
    JobQueue(new_stack(), "Email", **P99)


def test_unresolved_tokens_are_skipped() -> None:
    stack = new_stack()
    param = cdk.CfnParameter(stack, "Receives", type="Number")
    token_receives = Token.as_number(param.value_as_number)
    # A token max_receive_count cannot be checked at synth; the rest still is.
    JobQueue(stack, "Job", processing_p99=Duration.seconds(3), max_receive_count=token_receives)


def test_pure_checker_reports_without_synth() -> None:
    result = check_declaration(QueueDeclaration(job_type="x", processing_p99_s=240))
    assert result.errors == [] and result.visibility_timeout is not None
    assert result.visibility_timeout.seconds == 480
    assert len(BAD_DECLARATIONS) >= 15
