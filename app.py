#!/usr/bin/env python3
"""The example jobqueues app: `cdk synth` / `cdk deploy` (see README)."""

import os

import aws_cdk as cdk
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks

from stacks.job_queues_stack import JobQueuesStack


def build_app(app: cdk.App | None = None) -> cdk.App:
    """Create the example app with cdk-nag's AwsSolutions checks applied."""
    app = app or cdk.App()
    env = cdk.Environment(
        account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION", "us-east-1")
    )
    JobQueuesStack(app, "JobQueuesExample", env=env)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
