"""Small helpers for synthesizing job queues in tests."""

from __future__ import annotations

from pathlib import Path
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


def cfn_lint_findings(assembly_directory: Path) -> list[str]:
    """cfn-lint's errors and warnings (region us-east-1) on every template of the cloud assembly in
    ``assembly_directory``, nested assemblies' (Stages) included, as ``template: rule message``; empty when clean.
    aws-cdk-lib's own ``DependsOn`` of a function on its role (W3005) is left out: see
    :func:`cdk_function_role_dependency`."""
    from cfnlint.api import ManualArgs, lint_file

    return [
        f"{template.name}: {match.rule.id} {match.message}"
        for template in sorted(assembly_directory.glob("**/*.template.json"))
        for match in lint_file(template, config=ManualArgs(regions=["us-east-1"]))
        if not cdk_function_role_dependency(match.rule.id, match.message)
    ]


def cdk_function_role_dependency(rule_id: str, message: str) -> bool:
    """cfn-lint W3005 on a function's ``DependsOn`` its role: aws-cdk-lib's ``lambda.Function`` adds it to every
    function, a reader's own included (the bring-your-own examples). jobqueues' own functions drop it, which
    ``test_consumers`` and the example app's cfn-lint test check; a reader's function is theirs to keep as CDK
    makes it."""
    return rule_id == "W3005" and message.endswith("/Properties/Role'")
