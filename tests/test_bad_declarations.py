"""Bad declarations fail at synth with one error that lists every problem and says what to change."""

from __future__ import annotations

import datetime as dt

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, RemovalPolicy, Size, Token
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match
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
    ("lambda timeout too short", {"lambda_timeout": Duration.seconds(1)}, "lambda_timeout 1 s is too short"),
    (
        "p99 above lambda timeout",
        {"lambda_timeout": Duration.seconds(10), "processing_p99": Duration.seconds(40)},
        "processing_p99 40 s is not below lambda_timeout 10 s",
    ),
    (
        "VT below the lease-extension minimum of a Lambda consumer",
        {"lambda_timeout": Duration.seconds(30), "visibility_timeout": Duration.seconds(35), "lease_extension": True},
        "visibility_timeout 35 s is below the 40 s",
    ),
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
    (
        "dedup without FIFO",
        {**P99, "content_based_deduplication": True},
        "content_based_deduplication=True needs fifo=True: declare fifo=True, or leave content_based_deduplication "
        "unset",
    ),
    ("queue name too long", {**P99, "queue_name": "q" * 81}, "SQS allows 80"),
    ("queue name bad characters", {**P99, "queue_name": "my queue!"}, "may only contain letters"),
    (
        "max processing time over 12 h",
        {**P99, "max_processing_time": Duration.hours(13), "lease_extension": True},
        "exceeds 12 h",
    ),
    (
        "max processing time plus VT over the 12 h lease cap",
        {**P99, "max_processing_time": Duration.hours(12), "lease_extension": True},
        "plus the visibility timeout 10 s exceeds the",
    ),
    (
        "max processing time over VT without leases",
        {**P99, "max_processing_time": Duration.minutes(5)},
        "set lease_extension=True",
    ),
    (
        "alarm fraction over 1",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_fraction=1.5)},
        "alarms.in_flight_fraction must be in (0, 1]",
    ),
    ("alarm quota zero", {**P99, "alarms": JobQueueAlarmProps(in_flight_quota=0)}, "in_flight_quota must be positive"),
    (
        "age alarm beyond retention",
        {**P99, "alarms": JobQueueAlarmProps(oldest_message_age=Duration.days(5))},
        "messages would expire before the alarm fires",
    ),
    ("DLQ alarm at 0", {**P99, "alarms": JobQueueAlarmProps(dlq_depth=0)}, "alarms.dlq_depth must be at least 1"),
    # --- wrong types: each names the prop, the value and the fix ------------------------------------------------
    (
        "int p99",
        {"processing_p99": 5},
        "processing_p99=5 is an int, not an aws_cdk.Duration: pass a Duration, e.g. Duration.seconds(5)",
    ),
    (
        "float p99",
        {"processing_p99": 2.5},
        "processing_p99=2.5 is a float, not an aws_cdk.Duration: pass a Duration, e.g. Duration.millis(2500)",
    ),
    (
        "timedelta p99",
        {"processing_p99": dt.timedelta(minutes=4)},
        "is a datetime.timedelta, not an aws_cdk.Duration: pass a Duration, e.g. Duration.seconds(240)",
    ),
    ("str VT", {**P99, "visibility_timeout": "90s"}, "visibility_timeout='90s' is a str, not an aws_cdk.Duration"),
    ("int lambda timeout", {"lambda_timeout": 30}, "lambda_timeout=30 is an int, not an aws_cdk.Duration"),
    ("int retention", {**P99, "retention_period": 86400}, "retention_period=86400 is an int, not an aws_cdk.Duration"),
    ("int DLQ retention", {**P99, "dlq_retention_period": 86400}, "dlq_retention_period=86400 is an int"),
    ("int max processing time", {**P99, "max_processing_time": 3600}, "max_processing_time=3600 is an int"),
    (
        "fractional receive count",
        {**P99, "max_receive_count": 2.5},
        "max_receive_count=2.5 is a float, not a whole number: pass an int, e.g. 3",
    ),
    ("bool receive count", {**P99, "max_receive_count": True}, "max_receive_count=True is a bool, not a whole number"),
    ("str receive count", {**P99, "max_receive_count": "5"}, "max_receive_count='5' is a str, not a whole number"),
    (
        "str lease extension",
        {"processing_p99": Duration.minutes(4), "visibility_timeout": Duration.minutes(1), "lease_extension": "false"},
        "lease_extension='false' is a str, not a bool: pass True or False",
    ),
    ("int fifo", {**P99, "fifo": 1}, "fifo=1 is an int, not a bool"),
    ("str dedup", {**P99, "content_based_deduplication": "true"}, "content_based_deduplication='true' is a str"),
    ("int queue name", {**P99, "queue_name": 123}, "queue_name=123 is an int, not a str"),
    ("str key", {**P99, "encryption_key": "alias/aws/sqs"}, "encryption_key='alias/aws/sqs' is a str"),
    (
        "dict alarms",
        {**P99, "alarms": {"dlq_depth": 1}},
        "alarms={'dlq_depth': 1} is a dict, not a jobqueues.JobQueueAlarmProps",
    ),
    (
        "str alarm fraction",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_fraction="0.5")},  # type: ignore[arg-type]
        "alarms.in_flight_fraction='0.5' is a str, not a finite number",
    ),
    (
        "fractional alarm quota",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_quota=1.5)},  # type: ignore[arg-type]
        "alarms.in_flight_quota=1.5 is a float, not a whole number",
    ),
    (
        "int alarm age",
        {**P99, "alarms": JobQueueAlarmProps(oldest_message_age=600)},  # type: ignore[arg-type]
        "alarms.oldest_message_age=600 is an int, not an aws_cdk.Duration",
    ),
    (
        "str alarm switch",
        {**P99, "alarms": JobQueueAlarmProps(enabled="no")},  # type: ignore[arg-type]
        "alarms.enabled='no' is a str, not a bool",
    ),
    (
        "str alarm topic",
        {**P99, "alarms": JobQueueAlarmProps(topic="arn:aws:sns:us-east-1:1:t")},  # type: ignore[arg-type]
        "alarms.topic='arn:aws:sns:us-east-1:1:t' is a str",
    ),
    (
        "misspelt prop",
        {"processing_p90": Duration.seconds(3)},
        "unknown prop processing_p90: did you mean processing_p99?",
    ),
    # --- AWS takes whole seconds here -------------------------------------------------------------------------
    (
        "lambda timeout in milliseconds",
        {"lambda_timeout": Duration.millis(1500)},
        "lambda_timeout is 1.5 s: a Lambda function timeout takes whole seconds; pass Duration.seconds(2)",
    ),
    (
        "batching window in milliseconds",
        {"lambda_timeout": Duration.seconds(30), "max_batching_window": Duration.millis(500)},
        "max_batching_window is 0.5 s: the event source's MaximumBatchingWindowInSeconds takes whole seconds",
    ),
    # --- leases the runtime could not keep ----------------------------------------------------------------------
    (
        "lease of 0 s",
        {"visibility_timeout": Duration.seconds(0), "lease_extension": True},
        "a lease of visibility_timeout 0 s cannot be kept by sqslease",
    ),
    (
        "lease of 5 s",
        {"visibility_timeout": Duration.seconds(5), "lease_extension": True},
        "raise visibility_timeout to at least 7 s",
    ),
    (
        "p99 over 12 h even with leases",
        {"processing_p99": Duration.hours(13), "visibility_timeout": Duration.minutes(10), "lease_extension": True},
        "processing_p99 13 h is over 12 h",
    ),
    (
        "max processing time below p99",
        {
            "processing_p99": Duration.hours(2),
            "visibility_timeout": Duration.minutes(10),
            "lease_extension": True,
            "max_processing_time": Duration.hours(1),
        },
        "max_processing_time 1 h is below processing_p99 2 h",
    ),
    # --- more rules ---------------------------------------------------------------------------------------------
    (
        "FIFO with batching window",
        {"lambda_timeout": Duration.seconds(30), "max_batching_window": Duration.seconds(5), "fifo": True},
        "max_batching_window 5 s is not supported for FIFO queues",
    ),
    (
        "in-flight fraction rounding to 0",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_fraction=0.000001)},
        "gives an in-flight alarm threshold of 0 messages",
    ),
    (
        "in-flight quota rounding to 0",
        {**P99, "alarms": JobQueueAlarmProps(in_flight_quota=1)},
        "alarms.in_flight_fraction 0.8 x alarms.in_flight_quota 1 gives an in-flight alarm threshold of 0",
    ),
    (
        "14-day retention with the default DLQ",
        {**P99, "retention_period": Duration.days(14)},
        "retention_period 14 days leaves no time in the dead-letter queue",
    ),
    ("job type with a space", {**P99, "_job_type": "My Job"}, "job type 'My Job' may only contain letters"),
    (
        "default names too long",
        {**P99, "_job_type": "J" * 72},
        "the default queue names '<stack name>-<job type>' make",
    ),
    (
        "DLQ name too long",
        {**P99, "queue_name": "q" * 78},
        "makes the dead-letter queue name",
    ),
    # --- queue options: each names the prop, the value and the fix ----------------------------------------------
    (
        "delay over 15 min",
        {**P99, "delivery_delay": Duration.minutes(16)},
        "delivery_delay must be between 0 s and 15 min (got 16 min): pass e.g. Duration.minutes(5)",
    ),
    (
        "delay in milliseconds",
        {**P99, "delivery_delay": Duration.millis(1500)},
        "delivery_delay is 1.5 s: SQS's DelaySeconds takes whole seconds; pass Duration.seconds(2)",
    ),
    ("int delay", {**P99, "delivery_delay": 30}, "delivery_delay=30 is an int, not an aws_cdk.Duration"),
    (
        "delay not below retention",
        {**P99, "delivery_delay": Duration.minutes(15), "retention_period": Duration.minutes(10)},
        "delivery_delay 15 min is not below retention_period 10 min: every message would expire",
    ),
    (
        "age alarm not above the delay",
        {
            **P99,
            "delivery_delay": Duration.minutes(10),
            "alarms": JobQueueAlarmProps(oldest_message_age=Duration.minutes(5)),
        },
        "alarms.oldest_message_age 5 min is not above delivery_delay 10 min",
    ),
    (
        "default age alarm capped below the delay",
        {**P99, "delivery_delay": Duration.minutes(10), "retention_period": Duration.minutes(15)},
        "delivery_delay 10 min is at least half of retention_period 15 min",
    ),
    (
        "message size below 1 KiB",
        {**P99, "max_message_size": Size.bytes(1000)},
        "max_message_size must be between 1 KiB and 1 MiB (got 1,000 bytes): pass e.g. Size.kibibytes(256)",
    ),
    ("message size over 1 MiB", {**P99, "max_message_size": Size.mebibytes(2)}, "(got 2,097,152 bytes)"),
    (
        "int message size",
        {**P99, "max_message_size": 65536},
        "max_message_size=65536 is an int, not an aws_cdk.Size: pass a Size, e.g. Size.kibibytes(64)",
    ),
    (
        "str removal policy",
        {**P99, "removal_policy": "retain"},
        "removal_policy='retain' is a str, not an aws_cdk.RemovalPolicy member: pass e.g. RemovalPolicy.RETAIN",
    ),
    (
        "snapshot of a DLQ",
        {**P99, "dlq_removal_policy": RemovalPolicy.SNAPSHOT},
        "dlq_removal_policy=RemovalPolicy.SNAPSHOT does not apply to an SQS queue (it has no snapshot)",
    ),
    (
        "high-throughput scope on a standard queue",
        {**P99, "deduplication_scope": sqs.DeduplicationScope.MESSAGE_GROUP},
        "deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP needs fifo=True (it sets a FIFO queue's throughput "
        "mode): declare fifo=True, or leave deduplication_scope unset",
    ),
    (
        "throughput limit on a standard queue",
        {**P99, "fifo_throughput_limit": sqs.FifoThroughputLimit.PER_QUEUE},
        "fifo_throughput_limit=sqs.FifoThroughputLimit.PER_QUEUE needs fifo=True (it sets a FIFO queue's throughput "
        "mode): declare fifo=True, or leave fifo_throughput_limit unset",
    ),
    (
        "message-group deduplication alone",
        {**P99, "fifo": True, "deduplication_scope": sqs.DeduplicationScope.MESSAGE_GROUP},
        "without fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID leaves the queue at normal "
        "throughput: pass both",
    ),
    (
        "per-group throughput with queue deduplication",
        {
            **P99,
            "fifo": True,
            "deduplication_scope": sqs.DeduplicationScope.QUEUE,
            "fifo_throughput_limit": sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        },
        "needs deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP (got sqs.DeduplicationScope.QUEUE)",
    ),
    (
        "str throughput limit",
        {**P99, "fifo": True, "fifo_throughput_limit": "perMessageGroupId"},
        "fifo_throughput_limit='perMessageGroupId' is a str, not an aws_cdk.aws_sqs.FifoThroughputLimit member: "
        "pass e.g. sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID",
    ),
    # --- the queue-time promise ---------------------------------------------------------------------------------
    (
        "zero max queue time",
        {**P99, "max_queue_time": Duration.seconds(0)},
        "max_queue_time must be positive (got 0 s): declare the p99 wait the team promises",
    ),
    (
        "max queue time beyond retention",
        {**P99, "max_queue_time": Duration.days(5)},
        "max_queue_time 5 days exceeds retention_period 4 days: a message expires before it waits that long",
    ),
    (
        "max queue time beyond a declared retention",
        {**P99, "retention_period": Duration.hours(1), "max_queue_time": Duration.minutes(61)},
        "max_queue_time 61 min exceeds retention_period 1 h",
    ),
    ("int max queue time", {**P99, "max_queue_time": 300}, "max_queue_time=300 is an int, not an aws_cdk.Duration"),
    ("idempotency a string", {**P99, "idempotency": "yes"}, "idempotency='yes' is a str, not a bool or a table: pass"),
    (
        "idempotency a number",
        {**P99, "idempotency": 1},
        "idempotency=1 is an int, not a bool or a table: pass True (the stack's table), or an IdempotencyTable(",
    ),
    (
        "max queue time with the alarms off",
        {**P99, "max_queue_time": Duration.minutes(5), "alarms": JobQueueAlarmProps(enabled=False)},
        "max_queue_time declares a queue-time alarm, but alarms.enabled is False",
    ),
]


@pytest.mark.parametrize(("case", "props", "message"), BAD_DECLARATIONS, ids=[c[0] for c in BAD_DECLARATIONS])
def test_bad_declaration_is_rejected_at_synth(case: str, props: dict, message: str) -> None:
    props = dict(props)
    job_type = props.pop("_job_type", "Job")
    with pytest.raises(JobQueueError) as raised:
        JobQueue(new_stack(), job_type, **props)
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"JobQueue Test/{job_type} cannot be deployed:")


def test_bad_declaration_cases_are_distinct_and_many() -> None:
    assert len(BAD_DECLARATIONS) >= 50
    assert len({case for case, _, _ in BAD_DECLARATIONS}) == len(BAD_DECLARATIONS)


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


def test_same_queue_name_on_two_job_types_in_one_stack_is_rejected() -> None:
    stack = new_stack()
    JobQueue(stack, "A", queue_name="orders", **P99)
    with pytest.raises(JobQueueError) as raised:
        JobQueue(stack, "B", queue_name="orders", **P99)
    assert "the queue name 'orders' of job type 'B' (Test/B) is also the queue name of job type 'A' (Test/A)" in str(
        raised.value
    )


def test_same_queue_name_in_two_stacks_of_one_account_and_region_is_rejected() -> None:
    app = cdk.App()
    env = cdk.Environment(account="111111111111", region="eu-west-1")
    JobQueue(cdk.Stack(app, "One", env=env), "A", queue_name="orders", **P99)
    with pytest.raises(JobQueueError, match=r"job type 'A' \(One/A\), in account 111111111111 and region eu-west-1"):
        JobQueue(cdk.Stack(app, "Two", env=env), "B", queue_name="orders", **P99)


def test_job_type_named_like_another_jobs_dead_letter_queue_is_rejected() -> None:
    stack = new_stack()
    JobQueue(stack, "Render", **P99)
    with pytest.raises(JobQueueError) as raised:
        JobQueue(stack, "Render-dlq", **P99)
    assert (
        "the queue name 'Test-Render-dlq' of job type 'Render-dlq' (Test/Render-dlq) is also the dead-letter queue "
        "name of job type 'Render' (Test/Render)"
    ) in str(raised.value)


def test_default_names_colliding_across_stacks_are_rejected() -> None:
    app = cdk.App()
    env = cdk.Environment(account="123456789012", region="us-east-1")
    JobQueue(cdk.Stack(app, "Team", env=env), "B-Render", **P99)
    with pytest.raises(JobQueueError) as raised:
        JobQueue(cdk.Stack(app, "Team-B", env=env), "Render", **P99)
    assert "'Team-B-Render' of job type 'Render' (Team-B/Render)" in str(raised.value)
    assert "job type 'B-Render' (Team/B-Render)" in str(raised.value)


def test_same_queue_name_in_two_regions_is_fine() -> None:
    app = cdk.App()
    for region in ("us-east-1", "eu-west-1"):
        JobQueue(cdk.Stack(app, f"S-{region}", env=cdk.Environment(region=region)), "A", queue_name="orders", **P99)


def test_same_job_type_in_separate_apps_is_fine() -> None:
    JobQueue(new_stack(), "Email", **P99)
    JobQueue(new_stack(), "Email", **P99)


def test_token_p99_without_an_explicit_visibility_timeout_says_why() -> None:
    stack = new_stack()
    p99 = Duration.seconds(cdk.CfnParameter(stack, "P99", type="Number").value_as_number)
    with pytest.raises(JobQueueError) as raised:
        JobQueue(stack, "Job", processing_p99=p99)
    assert "processing_p99 is an unresolved token" in str(raised.value)
    assert "a visibility timeout cannot be derived from a value unknown at synth" in str(raised.value)
    assert "no basis" not in str(raised.value)


def test_token_lambda_timeout_without_an_explicit_visibility_timeout_says_why() -> None:
    stack = new_stack()
    timeout = Duration.seconds(cdk.CfnParameter(stack, "Timeout", type="Number").value_as_number)
    with pytest.raises(JobQueueError, match="lambda_timeout is an unresolved token"):
        JobQueue(stack, "Job", lambda_timeout=timeout)


def test_unresolved_tokens_are_skipped() -> None:
    stack = new_stack()
    param = cdk.CfnParameter(stack, "Receives", type="Number")
    token_receives = Token.as_number(param.value_as_number)
    # A token max_receive_count cannot be checked at synth; the rest still is.
    JobQueue(stack, "Job", processing_p99=Duration.seconds(3), max_receive_count=token_receives)


def test_pure_checker_reports_without_synth() -> None:
    result = check_declaration(QueueDeclaration(job_type="x", processing_p99=240))
    assert result.errors == [] and result.visibility_timeout is not None
    assert result.visibility_timeout.seconds == 480
    assert len(BAD_DECLARATIONS) >= 15


# --- warnings: each kind has its own id, acknowledged on its own ---------------------------------------------------
def test_a_single_receive_is_a_warning_of_its_own() -> None:
    stack = new_stack()
    JobQueue(stack, "Once", **P99, max_receive_count=1)
    warnings = Annotations.from_stack(stack).find_warning("/Test/Once", Match.any_value())
    (message,) = [w.entry.data for w in warnings]
    assert "max_receive_count 1" in message and "[ack: jobqueues:maxReceiveCountBelowTwo]" in message
    quiet = new_stack()
    JobQueue(quiet, "Twice", **P99, max_receive_count=2)
    Annotations.from_stack(quiet).has_no_warning("*", Match.any_value())


def test_acknowledging_one_warning_kind_leaves_the_others() -> None:
    stack = new_stack()
    # Two kinds: a single receive, and 1 receive x VT 2 min outliving a 1-min retention.
    JobQueue(
        stack,
        "Job",
        processing_p99=Duration.minutes(1),
        max_receive_count=1,
        retention_period=Duration.minutes(1),
    )
    cdk.Annotations.of(stack).acknowledge_warning("jobqueues:maxReceiveCountBelowTwo", "a drain may cost one run")
    (message,) = [w.entry.data for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())]
    assert "[ack: jobqueues:maxReceiveTimesVtExceedsRetention]" in message


def test_a_vt_no_consumer_could_hold_is_rejected_even_with_a_token_p99() -> None:
    # With the p99 unknown at synth, nothing else refuses a VT of 0 s, which LeaseSettings refuses at start.
    stack = new_stack()
    p99 = Duration.seconds(cdk.CfnParameter(stack, "P99", type="Number").value_as_number)
    with pytest.raises(JobQueueError) as raised:
        JobQueue(stack, "Job", processing_p99=p99, visibility_timeout=Duration.seconds(0))
    assert "a lease of visibility_timeout 0 s cannot be kept by sqslease" in str(raised.value)
    assert "raise visibility_timeout to at least 1 s" in str(raised.value)
