"""A stack that ``cdk deploy`` skips (no resource but its CDK metadata), as ``jobqueues local deploy`` reports it:
a stack of nothing but an adopted queue was "not deployed" in a trial, with the emulator's raw error, and no word
that its job type is then unseen by the ``jobqueues`` command (on AWS too)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from cdk_helpers import ENV

from jobqueues import JobQueue
from jobqueues.emulator.deploy import DeployReport, format_report, skipped_by_cdk


def adopting_stack(with_resource: bool) -> dict:
    """The template of a stack adopting ``legacy-billing``, with a queue of its own or nothing else."""
    app = cdk.App()
    stack = cdk.Stack(app, "Legacy", env=ENV)
    arn = f"arn:aws:sqs:{ENV.region}:{ENV.account}:legacy-billing"
    JobQueue.from_queue_attributes(
        stack,
        "Billing",
        job_type="Billing",
        queue=sqs.Queue.from_queue_arn(stack, "BillingQueue", arn),
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, "BillingDlq", f"{arn}-dlq"),
        visibility_timeout=Duration.seconds(30),
        processing_p99=Duration.seconds(5),
    )
    if with_resource:
        sqs.Queue(stack, "Own", enforce_ssl=True)
    return app.synth().get_stack_by_name("Legacy").template


def test_a_stack_cdk_skips_is_reported_with_the_job_types_it_hides() -> None:
    # GIVEN a stack of nothing but an adopted queue (its marker in the template's own Metadata)
    template = adopting_stack(with_resource=False)
    # WHEN the local deploy looks at it, THEN it is said to be skipped by cdk, with the job type no command will see
    why = skipped_by_cdk("Legacy", template)
    assert why == (
        "cdk does not deploy a stack without resources: the jobqueues command will not see Legacy/Billing (give the "
        "stack a resource)"
    )
    report = DeployReport(stacks={}, queues=[], skipped={"Legacy": why})
    assert format_report(report).splitlines()[0] == f"stack Legacy: not deployed: {why}"
    # ... and a stack with a resource is deployed as any other
    assert skipped_by_cdk("Legacy", adopting_stack(with_resource=True)) is None
    assert skipped_by_cdk("Empty", {"Resources": {"CDKMetadata": {"Type": "AWS::CDK::Metadata"}}}) == (
        "cdk does not deploy a stack without resources"
    )
