"""Plan, then build: a pure plan holds every final value; ``JobQueue`` builds from it and nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import CfnResource, Duration
from aws_cdk.assertions import Template
from cdk_helpers import ENV

from jobqueues import JobQueue, JobQueueError, QueueDeclaration, plan_job_queue
from jobqueues.plan import Given
from jobqueues.stack_limits import RESOURCES_PER_JOB_QUEUE, RESOURCES_PER_STACK

ROOT = Path(__file__).resolve().parent.parent


def test_a_plan_settles_every_value_without_the_cdk() -> None:
    # GIVEN a p99 of 383 ms in a stack named Jobs; WHEN planned; THEN every value the queues get is final.
    plan = plan_job_queue(QueueDeclaration(job_type="EmailSend", processing_p99=0.383, name_prefix="Jobs"))
    assert plan.errors == [] and plan.warnings == []
    assert plan.visibility_timeout == 10 and plan.visibility_timeout_rule == "max(2 x processing_p99 (0.383 s), 10 s)"
    assert (plan.retention_period, plan.dlq_retention_period, plan.max_receive_count) == (345_600, 1_209_600, 5)
    assert (plan.queue_name, plan.dead_letter_queue_name) == ("Jobs-EmailSend", "Jobs-EmailSend-dlq")
    assert plan.alarms is not None
    assert (plan.alarms.in_flight_threshold, plan.alarms.oldest_message_age_s, plan.alarms.dlq_depth) == (
        96_000,
        300,
        1,
    )


def test_a_token_is_planned_as_given_and_errors_are_in_the_plan() -> None:
    token = object()
    plan = plan_job_queue(QueueDeclaration(job_type="x", lease_extension=True, tokens={"visibility_timeout": token}))
    assert plan.visibility_timeout == Given(token) and plan.visibility_timeout_s is None and plan.errors == []
    bad = plan_job_queue(QueueDeclaration(job_type="x", processing_p99=-1))
    assert any("processing_p99 must be positive" in e for e in bad.errors)


def test_the_plan_module_imports_without_the_cdk() -> None:
    code = (
        "import sys; from jobqueues.plan import plan_job_queue; from jobqueues.declaration import QueueDeclaration; "
        "assert plan_job_queue(QueueDeclaration(job_type='x', processing_p99=4)).visibility_timeout == 10; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_job_queue_built_from_a_plan_is_the_one_built_from_props() -> None:
    by_props = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    JobQueue(by_props, "Render", processing_p99=Duration.minutes(4), max_receive_count=3)
    by_plan = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    plan = plan_job_queue(
        QueueDeclaration(job_type="Render", processing_p99=240, max_receive_count=3, name_prefix="Jobs")
    )
    job_queue = JobQueue(by_plan, "Render", plan=plan)
    assert job_queue.plan is plan and job_queue.visibility_timeout_seconds == 480
    assert Template.from_stack(by_plan).to_json() == Template.from_stack(by_props).to_json()


def test_a_plan_with_errors_or_beside_props_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    bad = plan_job_queue(QueueDeclaration(job_type="x", processing_p99=-1))
    with pytest.raises(
        JobQueueError, match=r"JobQueue Jobs/X cannot be deployed:\n  - processing_p99 must be positive"
    ):
        JobQueue(stack, "X", plan=bad)
    good = plan_job_queue(QueueDeclaration(job_type="y", processing_p99=1))
    with pytest.raises(JobQueueError, match="pass a plan or props, not both"):
        JobQueue(stack, "Y", plan=good, fifo=True)


def test_the_per_job_type_resource_figure_is_what_the_tree_holds() -> None:
    # JobQueueStacks plans with RESOURCES_PER_JOB_QUEUE before a job type exists: it must be the real count of a
    # job queue with every alarm on (max_queue_time adds one).
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    job_queue = JobQueue(stack, "Job", processing_p99=Duration.seconds(3), max_queue_time=Duration.minutes(5))
    assert sum(isinstance(c, CfnResource) for c in job_queue.node.find_all()) == RESOURCES_PER_JOB_QUEUE
    # Beside the stack's own: its fleet dashboard.
    assert len(Template.from_stack(stack).to_json()["Resources"]) == RESOURCES_PER_JOB_QUEUE + RESOURCES_PER_STACK


def test_a_plan_built_apart_has_its_names_checked_at_the_deployment_target() -> None:
    # GIVEN one plan with fixed queue names, built in two Stages of one account and region
    app = cdk.App()
    plan = plan_job_queue(QueueDeclaration(job_type="Notify", processing_p99=2, name_prefix="TeamJobs"))
    JobQueue(cdk.Stack(cdk.Stage(app, "Dev", env=ENV), "TeamJobs"), "Notify", plan=plan)
    # WHEN it is built a second time THEN the queue name clash is an error, as for props
    with pytest.raises(JobQueueError, match=r"the queue name 'TeamJobs-Notify' of job type 'Notify' .* is also"):
        JobQueue(cdk.Stack(cdk.Stage(app, "Prod", env=ENV), "TeamJobs"), "Notify", plan=plan)
