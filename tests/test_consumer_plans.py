"""Plan, then build, for consumers: ``LambdaJob`` and ``EcsJob`` are planned by pure functions beside
``plan_job_queue`` (every value, error and warning settled without the CDK) and built from the plan only."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import CfnParameter, Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template
from cdk_helpers import ENV

from jobqueues import EcsJob, JobQueue, JobQueueError, LambdaJob, QueueDeclaration, plan_job_queue
from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.ecs_job_plan import EcsJobDeclaration, plan_ecs_job
from jobqueues.ecs_service_plan import EcsServiceDeclaration
from jobqueues.lambda_job_plan import LambdaJobDeclaration, plan_lambda_job

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = str(ROOT / "lambda_src" / "handlers")
IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"


def resources(template: dict, kind: str) -> list[dict]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


# --- a token is carried as given --------------------------------------------------------------------------------
def test_a_token_handler_reaches_the_consumer_as_given() -> None:
    # GIVEN a handler known only at deploy time (a CloudFormation parameter) for a Lambda job and an ECS job
    app = cdk.App(context={IMAGE_CONTEXT: IMAGE})
    stack = cdk.Stack(app, "Jobs", env=ENV)
    handler = CfnParameter(stack, "Handler").value_as_string
    LambdaJob(stack, "Thumbs", code=lambda_.Code.from_asset(HANDLERS), handler=handler, timeout=Duration.seconds(30))
    EcsJob(stack, "Render", handler=handler, processing_p99=Duration.seconds(30))
    # WHEN synthesized
    template = Template.from_stack(stack).to_json()
    # THEN the function's SQSLEASE_HANDLER and the worker's --handler are the parameter, not an empty string
    (function,) = [f for f in resources(template, "AWS::Lambda::Function") if "Environment" in f["Properties"]]
    assert function["Properties"]["Environment"]["Variables"]["SQSLEASE_HANDLER"] == {"Ref": "Handler"}
    (task,) = resources(template, "AWS::ECS::TaskDefinition")
    command = task["Properties"]["ContainerDefinitions"][0]["Command"]
    assert command[command.index("--handler") + 1] == {"Ref": "Handler"}


# --- bad input is a JobQueueError naming the prop ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["LambdaJob", "EcsJob"])
def test_a_log_retention_of_the_wrong_type_names_the_prop(kind: str) -> None:
    stack = cdk.Stack(cdk.App(context={IMAGE_CONTEXT: IMAGE}), "Jobs", env=ENV)
    with pytest.raises(JobQueueError, match=r"log_retention=30 is an int, not an aws_cdk.aws_logs.RetentionDays"):
        if kind == "LambdaJob":
            LambdaJob(
                stack,
                "Thumbs",
                code=lambda_.Code.from_asset(HANDLERS),
                handler="thumbs.handle",
                timeout=Duration.seconds(30),
                log_retention=30,  # type: ignore[typeddict-item]
            )
        else:
            EcsJob(stack, "Render", handler="render:handle", processing_p99=Duration.seconds(30), log_retention=30)  # type: ignore[typeddict-item]


def test_a_log_retention_is_applied() -> None:
    stack = cdk.Stack(cdk.App(context={IMAGE_CONTEXT: IMAGE}), "Jobs", env=ENV)
    LambdaJob(
        stack,
        "Thumbs",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        log_retention=logs.RetentionDays.ONE_WEEK,
    )
    EcsJob(stack, "Render", handler="render:handle", processing_p99=Duration.seconds(30))
    groups = resources(Template.from_stack(stack).to_json(), "AWS::Logs::LogGroup")
    # the function's week; the worker's default month, and the month of the shared VPC's flow logs
    assert sorted(g["Properties"]["RetentionInDays"] for g in groups) == [7, 30, 30]


# --- pure plans, the constructs built from them ------------------------------------------------------------------
def test_consumer_plans_settle_every_value_without_the_cdk() -> None:
    code = textwrap.dedent(
        """
        import sys
        from jobqueues.declaration import QueueDeclaration
        from jobqueues.ecs_job_plan import EcsJobDeclaration, plan_ecs_job
        from jobqueues.lambda_job_plan import LambdaJobDeclaration, plan_lambda_job
        from jobqueues.plan import Given

        code = object()  # a lambda_.Code in an app: carried as given
        queue = QueueDeclaration(job_type="Thumbs", lambda_timeout=30, max_batching_window=5, name_prefix="Jobs")
        thumbs = plan_lambda_job(LambdaJobDeclaration(queue=queue, code=code, handler="thumbs.handle", batch_size=20))
        assert thumbs.errors == [] and thumbs.code is code and thumbs.handler == "thumbs.handle"
        assert (thumbs.queue.visibility_timeout, thumbs.timeout, thumbs.max_batching_window) == (185, 30, 5)
        assert (thumbs.batch_size, thumbs.memory_size, thumbs.log_retention) == (20, 512, "ONE_MONTH")
        bad = plan_lambda_job(LambdaJobDeclaration(queue=QueueDeclaration(job_type="X", lambda_timeout=1)))
        assert [e.split(":")[0] for e in bad.errors[1:]] == ["code is required", "handler is required"], bad.errors
        assert bad.errors[0].startswith("timeout 1 s is too short for sqslease"), bad.errors

        token = object()  # a CfnParameter's value in an app
        render = plan_ecs_job(
            EcsJobDeclaration(
                queue=QueueDeclaration(job_type="Render", processing_p99=240, lease_extension=True, name_prefix="Jobs"),
                tokens={"handler": token},
                registry_image="registry.example.com/render:1",
                max_tasks=20,
            )
        )
        assert render.errors == [] and render.handler == Given(token) and render.queue.visibility_timeout == 480
        assert (render.concurrency, render.max_tasks, render.target_backlog_per_task) == (4, 20, 4)
        assert (render.shutdown_grace, render.stop_timeout, render.service.architecture) == (25, 30, "X86_64")
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii", "constructs")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_lambda_job_built_from_a_plan_is_the_one_built_from_props() -> None:
    by_props = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    LambdaJob(
        by_props,
        "Thumbs",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        max_batching_window=Duration.seconds(5),
        batch_size=20,
        memory_size=1024,
        environment={"LOG_LEVEL": "debug"},
        hooks=["thumbs.hooks:Timing"],
        log_retention=logs.RetentionDays.ONE_WEEK,
    )
    by_plan = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    plan = plan_lambda_job(
        LambdaJobDeclaration(
            queue=QueueDeclaration(job_type="Thumbs", lambda_timeout=30, max_batching_window=5, name_prefix="Jobs"),
            code=lambda_.Code.from_asset(HANDLERS),
            handler="thumbs.handle",
            batch_size=20,
            memory_size=1024,
            environment={"LOG_LEVEL": "debug"},
            hooks=("thumbs.hooks:Timing",),
            log_retention="ONE_WEEK",
        )
    )
    job = LambdaJob(by_plan, "Thumbs", plan=plan)
    assert job.plan is plan and job.job_queue.plan is plan.queue
    assert Template.from_stack(by_plan).to_json() == Template.from_stack(by_props).to_json()


def test_an_ecs_job_built_from_a_plan_is_the_one_built_from_props() -> None:
    by_props = cdk.Stack(cdk.App(context={IMAGE_CONTEXT: IMAGE}), "Jobs", env=ENV)
    EcsJob(
        by_props,
        "Render",
        handler="render:handle",
        processing_p99=Duration.minutes(4),
        max_processing_time=Duration.hours(3),
        concurrency=8,
        max_tasks=20,
        shutdown_grace=Duration.seconds(40),
        environment={"LOG_LEVEL": "debug"},
    )
    by_plan = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    queue = QueueDeclaration(
        job_type="Render", processing_p99=240, max_processing_time=10_800, lease_extension=True, name_prefix="Jobs"
    )
    plan = plan_ecs_job(
        EcsJobDeclaration(
            queue=queue,
            handler="render:handle",
            registry_image=IMAGE,
            concurrency=8,
            max_tasks=20,
            shutdown_grace=40,
            service=EcsServiceDeclaration(environment={"LOG_LEVEL": "debug"}),
        )
    )
    job = EcsJob(by_plan, "Render", plan=plan)
    assert job.plan is plan and job.service_plan is plan.service and job.job_queue.plan is plan.queue
    assert Template.from_stack(by_plan).to_json() == Template.from_stack(by_props).to_json()


def test_a_consumer_plan_with_errors_or_beside_props_is_refused() -> None:
    stack = cdk.Stack(cdk.App(context={IMAGE_CONTEXT: IMAGE}), "Jobs", env=ENV)
    no_code = plan_lambda_job(
        LambdaJobDeclaration(queue=QueueDeclaration(job_type="Thumbs", lambda_timeout=30), handler="a.b")
    )
    with pytest.raises(JobQueueError, match=r"LambdaJob Jobs/Thumbs cannot be deployed:\n  - code is required"):
        LambdaJob(stack, "Thumbs", plan=no_code)
    good = plan_ecs_job(
        EcsJobDeclaration(
            queue=QueueDeclaration(job_type="Render", processing_p99=3), handler="a:b", registry_image=IMAGE
        )
    )
    with pytest.raises(JobQueueError, match=r"EcsJob Jobs/Render: pass a plan or props, not both \(got \['cpu'\]\)"):
        EcsJob(stack, "Render", plan=good, cpu=512)


def test_a_job_queue_claimed_by_another_construct_is_refused() -> None:
    # claimed_by is for a consumer construct that claimed the plan's names as its own: nobody else skips the check
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    plan = plan_job_queue(QueueDeclaration(job_type="Email", processing_p99=3, name_prefix="Jobs"))
    with pytest.raises(JobQueueError, match=r"claimed_by=Jobs has not claimed job type 'Email'"):
        JobQueue(stack, "Email", plan=plan, claimed_by=stack)
