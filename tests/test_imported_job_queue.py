"""``JobQueue.from_queue_attributes``: a queue pair made elsewhere gets the same consumers, grants, alarms and
checks as a declared one (as ``Queue.fromQueueArn``, Solutions Constructs' ``existingQueueObj``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from cdk_helpers import ENV, lint_template
from cdk_nag import AwsSolutionsChecks

from jobqueues import IJobQueue, ImportedJobQueue, JobQueue, JobQueueError, deploy_time_availability_zones
from sqslease.config import ConsumerConfig
from sqslease.settings import LeaseSettings
from sqslease.worker.cli import main as worker_main

ROOT = Path(__file__).resolve().parent.parent
ARN = "arn:aws:sqs:us-east-1:123456789012:{}"


class AdoptStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()  # no context lookup for the VPC


def imported(stack: cdk.Stack, job_type: str = "Render", **facts: Any) -> ImportedJobQueue:
    name = job_type.lower()
    return JobQueue.from_queue_attributes(
        stack,
        job_type,
        job_type=job_type,
        queue=sqs.Queue.from_queue_arn(stack, f"{job_type}Queue", ARN.format(name)),
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, f"{job_type}Dlq", ARN.format(f"{name}-dlq")),
        **{"visibility_timeout": Duration.minutes(5), **facts},
    )


def own_function(stack: cdk.Stack, timeout: int) -> lambda_.Function:
    role = iam.Role(stack, "FnRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, "FnLogs", retention=logs.RetentionDays.ONE_MONTH)
    log_group.grant_write(role)
    return lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        code=lambda_.Code.from_asset(str(ROOT / "lambda_src" / "handlers")),
        handler="thumbs.handler",
        timeout=Duration.seconds(timeout),
        role=role,
        log_group=log_group,
    )


def test_an_imported_queue_gets_a_lambda_and_an_ecs_consumer_nag_and_lint_clean(tmp_path: Path) -> None:
    # GIVEN a queue pair made elsewhere (VT 5 min as deployed) and a function and a service of our own
    app = cdk.App(outdir=str(tmp_path))
    stack = AdoptStack(app, "Adopt", env=ENV)
    job_queue = imported(stack, lease_extension=True, processing_p99=Duration.seconds(20))
    encode = imported(stack, "Encode", lease_extension=True, processing_p99=Duration.seconds(20))
    function = own_function(stack, timeout=30)
    # WHEN they are bound
    alarms = job_queue.add_lambda_consumer(function)
    with pytest.raises(JobQueueError, match="has a consumer already"):
        job_queue.add_lambda_consumer(function)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1, flow_logs={"All": ec2.FlowLogOptions()})
    cluster = ecs.Cluster(stack, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
    task = ecs.FargateTaskDefinition(stack, "Task")
    command = encode.consumer_contract().worker_command("render:handle", concurrency=2)
    task.add_container(
        "Worker",
        image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.14-slim"),
        command=command,
        logging=ecs.LogDrivers.aws_logs(stream_prefix="render", log_group=logs.LogGroup(stack, "WorkerLogs")),
    )
    service = ecs.FargateService(stack, "Service", cluster=cluster, task_definition=task, min_healthy_percent=100)
    ecs_alarms = encode.add_ecs_consumer(service, max_tasks=3)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # THEN no unacknowledged cdk-nag finding ...
    template = assembly.get_stack_by_name("Adopt").template
    # ... no queue is created, the function consumes the imported queue with the contract's settings ...
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]
    (mapping,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert mapping["Properties"]["EventSourceArn"] == ARN.format("render")
    (fn,) = [r for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function" and "Fn" in k]
    env = fn["Properties"]["Environment"]["Variables"]
    lease = ConsumerConfig.from_env({k: v for k, v in env.items() if isinstance(v, str)}).lease
    assert lease.visibility_timeout == 300 and lease.heartbeat and lease.job_type == "Render"
    assert lease.extension_threshold == 5 and lease.max_batching_window == 0
    assert env["SQSLEASE_QUEUE_URL"]["Fn::Join"][1][-1] == "/123456789012/render"
    assert isinstance(job_queue, IJobQueue)  # the interface the binders and factories take
    # ... both consumers have their alarms and a dashboard each, and the worker gets the same lease.
    assert alarms.errors is not None and ecs_alarms.no_running_task is not None
    assert sum(r["Type"] == "AWS::CloudWatch::Dashboard" for r in template["Resources"].values()) == 2
    options = dict(zip(command[3::2], command[4::2], strict=True))
    assert options["--visibility-timeout"] == "300" and options["--concurrency"] == "2"

    template_file = Path(assembly.directory) / "Adopt.template.json"
    findings = [
        f"{m.rule.id} {m.message}"
        for m in lint_template(template_file)
        if not (m.rule.id == "W3005" and "FnRole" in m.message)  # a reader's own lambda.Function: CDK adds it
    ]
    assert findings == []
    assert json.loads(template_file.read_text())["Resources"]


def test_a_function_the_imported_queue_cannot_serve_is_refused_with_the_fix() -> None:
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    job_queue = imported(stack)  # VT 5 min, no lease extension
    with pytest.raises(JobQueueError, match=r"add_lambda_consumer on Adopt/Render[\s\S]*at least 6 min"):
        job_queue.add_lambda_consumer(own_function(stack, timeout=60))


def refusal(job_queue: ImportedJobQueue, function: lambda_.Function) -> str:
    with pytest.raises(JobQueueError) as refused:
        job_queue.add_lambda_consumer(function)
    return str(refused.value)


def test_an_adopted_queue_s_refusal_offers_only_fixes_that_work_for_it() -> None:
    # GIVEN an adopted queue (VT 2 min, p99 30 s: its owner's facts) and a function of 40 s, which needs 4 min
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    billing = imported(stack, "Billing", visibility_timeout=Duration.minutes(2), processing_p99=Duration.seconds(30))
    message = refusal(billing, own_function(stack, timeout=40))
    # THEN the fixes are the queue's VT where it is owned, or lease extension; declaring lambda_timeout changes no
    # adopted queue, and no timeout fits both the 30 s p99 and 6 x timeout <= 2 min
    assert (
        "the queue has 2 min: raise the queue's visibility timeout to at least 4 min where the queue is owned, "
        "and in from_queue_attributes(visibility_timeout=...) of job type 'Billing', or declare "
        "lease_extension=True in from_queue_attributes (then at least 50 s)" in message
    ), message
    assert "lambda_timeout=" not in message and "shorten" not in message, message


def test_an_adopted_queue_s_refusal_names_the_timeout_that_fits() -> None:
    # GIVEN an adopted queue of VT 5 min (no p99) and a function of 60 s (6 min needed)
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    message = refusal(imported(stack), own_function(stack, timeout=60))
    # THEN shortening is offered, with the longest timeout whose 6 x fits 5 min
    assert message.endswith("(then at least 70 s), or shorten the function timeout to at most 50 s"), message
    # ... and with lease extension declared already, its own rule: the VT, or a timeout of at most 50 s
    other = cdk.Stack(cdk.App(), "Other", env=ENV)
    leased = imported(other, visibility_timeout=Duration.minutes(1), lease_extension=True)
    message = refusal(leased, own_function(other, timeout=60))
    assert "the queue has 1 min: raise the queue's visibility timeout to at least 70 s where" in message
    assert message.endswith("or shorten the function timeout to at most 50 s"), message
    assert "declare lease_extension" not in message, message


def test_facts_that_break_the_rules_are_refused_at_synth() -> None:
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    with pytest.raises(JobQueueError, match=r"visibility_timeout 5 min is below the derived minimum 8 min"):
        imported(stack, processing_p99=Duration.minutes(4))
    with pytest.raises(JobQueueError, match=r"visibility_timeout=300 is an int, not an aws_cdk.Duration"):
        imported(cdk.Stack(cdk.App(), "Other", env=ENV), visibility_timeout=300)


def test_a_lease_extension_that_is_no_bool_is_refused() -> None:
    # "yes" is truthy, but not True: the consumer's settings would silently be those of no lease extension
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    with pytest.raises(JobQueueError, match=r"lease_extension='yes' is a str, not a bool: pass True or False"):
        imported(stack, lease_extension="yes")


def test_an_imported_job_type_is_unique_like_a_declared_one() -> None:
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    JobQueue(stack, "Render", processing_p99=Duration.seconds(3))
    with pytest.raises(JobQueueError, match="job type 'Render' is already declared at Adopt/Render"):
        JobQueue.from_queue_attributes(
            stack,
            "RenderAgain",
            job_type="Render",
            queue=sqs.Queue.from_queue_arn(stack, "Q", ARN.format("other")),
            dead_letter_queue=sqs.Queue.from_queue_arn(stack, "D", ARN.format("other-dlq")),
            visibility_timeout=Duration.minutes(1),
        )


def test_the_worker_parses_the_command_the_contract_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    # One typed contract: the command a construct writes is one the worker's own parser accepts, to the same
    # settings (the worker stops at the missing handler module, after parsing every lease option).
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    contract = imported(stack, lease_extension=True, max_processing_time=Duration.hours(2)).consumer_contract()
    command = contract.worker_command("no_such_module:handle", concurrency=3, shutdown_grace_s=40)
    args = [a if "${Token" not in a else "https://sqs.us-east-1.amazonaws.com/1/x" for a in command[3:]]
    parsed = ConsumerConfig.from_args([a for a in _lease_args(args)], environ={}).lease
    assert parsed.visibility_timeout == 300 and parsed.shutdown_grace == 40
    assert parsed.max_total_lease == LeaseSettings.max_total_lease  # SQS's 12 h from receipt, not max_processing_time
    assert parsed.max_processing_time == 7200
    assert parsed.heartbeat and parsed.job_type == "Render"
    with pytest.raises(SystemExit) as exit_:
        worker_main(args)
    assert exit_.value.code == 2  # the handler module, not an option, is what it refuses


def _lease_args(args: list[str]) -> list[str]:
    pairs = list(zip(args[::2], args[1::2], strict=True))
    return [
        part
        for name, value in pairs
        if name not in ("--handler", "--concurrency", "--queue-url")
        for part in (name, value)
    ]


def test_a_queue_in_another_account_or_region_or_a_mismatched_dlq_is_refused() -> None:
    # Its metrics (scaling, alarms) live in the owner's account and region, and an event source must be in its region.
    stack = cdk.Stack(cdk.App(), "Adopt", env=ENV)
    with pytest.raises(JobQueueError, match=r"in account 999999999999, the stack in account 123456789012"):
        JobQueue.from_queue_attributes(
            stack,
            "Billing",
            job_type="Billing",
            queue=sqs.Queue.from_queue_arn(stack, "Q", "arn:aws:sqs:us-east-1:999999999999:billing"),
            dead_letter_queue=sqs.Queue.from_queue_arn(stack, "D", "arn:aws:sqs:us-east-1:999999999999:billing-dlq"),
            visibility_timeout=Duration.minutes(1),
        )
    with pytest.raises(JobQueueError, match=r"in region eu-west-1, the stack in region us-east-1"):
        JobQueue.from_queue_attributes(
            stack,
            "Far",
            job_type="Far",
            queue=sqs.Queue.from_queue_arn(stack, "FarQ", "arn:aws:sqs:eu-west-1:123456789012:far"),
            dead_letter_queue=sqs.Queue.from_queue_arn(stack, "FarD", "arn:aws:sqs:eu-west-1:123456789012:far-dlq"),
            visibility_timeout=Duration.minutes(1),
        )
    with pytest.raises(JobQueueError, match=r"the queue is FIFO and its dead-letter queue is not"):
        JobQueue.from_queue_attributes(
            stack,
            "Ledger",
            job_type="Ledger",
            queue=sqs.Queue.from_queue_arn(stack, "LQ", ARN.format("ledger.fifo")),
            dead_letter_queue=sqs.Queue.from_queue_arn(stack, "LD", ARN.format("ledger-dlq")),
            visibility_timeout=Duration.minutes(1),
        )
