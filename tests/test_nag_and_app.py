"""The example app synthesizes with zero unacknowledged cdk-nag AwsSolutions findings."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from app import build_app
from jobqueues import JobQueue


def test_example_app_is_nag_clean_and_declares_the_seed_job_types() -> None:
    app = build_app(cdk.App())
    assembly = app.synth()  # raises ValidationFailed on any unacknowledged finding
    (stack,) = [s for s in app.node.children if isinstance(s, cdk.Stack)]
    vts = {
        queue["Properties"]["QueueName"]: queue["Properties"].get("VisibilityTimeout")
        for queue in Template.from_stack(stack).find_resources("AWS::SQS::Queue").values()
    }
    assert vts["JobQueuesExample-VideoTranscode"] == 480
    assert vts["JobQueuesExample-EmailSend"] == 10
    assert vts["JobQueuesExample-Thumbnails"] == 185
    assert assembly.get_stack_by_name("JobQueuesExample").template


def test_nag_is_live_and_job_queues_pass_it() -> None:
    # The same check fails on a bare queue, so a clean result above means something.
    app = cdk.App()
    stack = cdk.Stack(app, "Nag")
    JobQueue(stack, "Job", processing_p99=Duration.seconds(3))
    sqs.Queue(stack, "Bare")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match=r"AwsSolutions-SQS3[\s\S]*AwsSolutions-SQS4|Nag/Bare") as raised:
        app.synth()
    assert "Nag/Job" not in str(raised.value)
