"""Small helpers for synthesizing job queues in tests."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from jobqueues import JobQueue

ENV = cdk.Environment(account="123456789012", region="us-east-1")


def new_stack(name: str = "Test") -> cdk.Stack:
    return cdk.Stack(cdk.App(), name, env=ENV)


def synth_job_queue(job_type: str = "Job", **props: Any) -> tuple[JobQueue, Template]:
    stack = new_stack()
    job_queue = JobQueue(stack, job_type, **props)
    return job_queue, Template.from_stack(stack)
