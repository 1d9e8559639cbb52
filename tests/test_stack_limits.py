"""CloudFormation's 500-resources-per-stack limit: a clear synth error, or JobQueueStacks spreads."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Template

from jobqueues import JobQueue, JobQueueStacks
from jobqueues.stack_limits import RESOURCES_PER_STACK


def test_too_many_job_types_in_one_stack_fail_synth_with_the_fix() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Big")
    for i in range(72):  # 72 x 7 + the fleet dashboard = 505 resources
        JobQueue(stack, f"Job{i}", processing_p99=Duration.seconds(3))
    with pytest.raises(
        Exception, match=r"declares 72 job types = 505 resources.*at most 71 per stack at 7 resources each"
    ) as raised:
        app.synth()
    assert "JobQueueStacks" in str(raised.value)


def test_job_queue_stacks_spreads_200_job_types_under_the_limit() -> None:
    app = cdk.App()
    stacks = JobQueueStacks(app, "Jobs")
    for i in range(200):
        stacks.add(f"Job{i}", processing_p99=Duration.seconds(3))
    assert [s.stack_name for s in stacks.stacks] == ["Jobs1", "Jobs2", "Jobs3", "Jobs4"]
    app.synth()
    counts = [len(Template.from_stack(s).to_json()["Resources"]) for s in stacks.stacks]
    assert sum(counts) == 200 * 7 + len(counts) * RESOURCES_PER_STACK  # each stack's fleet dashboard
    assert max(counts) <= 500


def test_job_queue_stacks_rejects_a_per_stack_count_over_the_limit() -> None:
    with pytest.raises(ValueError, match="between 1 and 62"):
        JobQueueStacks(cdk.App(), "Jobs", job_types_per_stack=100)
