"""Small helpers for synthesizing job queues in tests."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from jobqueues import JobQueue

ENV = cdk.Environment(account="123456789012", region="us-east-1")
#: The region every template is linted for.
LINT_REGION = "us-east-1"

if TYPE_CHECKING:
    from cfnlint.config import ConfigMixIn
    from cfnlint.rules import Match
    from cfnlint.rules._rules import Rules


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
    return [
        f"{template.name}: {match.rule.id} {match.message}"
        for template in sorted(assembly_directory.glob("**/*.template.json"))
        for match in lint_template(template)
        if not cdk_function_role_dependency(match.rule.id, match.message)
    ]


def lint_template(template: Path) -> list[Match]:
    """cfn-lint's matches (errors and warnings, region us-east-1) on the template file ``template``: what
    ``cfnlint.api.lint_file`` finds, with the rules built once a process (``lint_file`` builds them again for each
    template, and so does ``cfnlint.api.lint``, which does not take the collection its runner builds): 0.03 s of
    CPU for a small template where ``lint_file`` takes 0.4 s, 0.8 s for the example app's where it takes 1.25 s."""
    from cfnlint.decode.decode import decode_str
    from cfnlint.runner import run_template_by_data

    rules, config = _lint_rules()
    decoded, errors = decode_str(template.read_text())
    if errors:
        return list(errors)
    return list(run_template_by_data(decoded, config, rules))


@functools.cache
def _lint_rules() -> tuple[Rules, ConfigMixIn]:
    """cfn-lint's rules as its runner builds them for these settings, and the settings: once a process."""
    from cfnlint.config import ConfigMixIn
    from cfnlint.runner import Runner

    config = ConfigMixIn(regions=[LINT_REGION])
    return Runner(config).rules, config


def cdk_function_role_dependency(rule_id: str, message: str) -> bool:
    """cfn-lint W3005 on a function's ``DependsOn`` its role: aws-cdk-lib's ``lambda.Function`` adds it to every
    function, a reader's own included (the bring-your-own examples). jobqueues' own functions drop it, which
    ``test_consumers`` and the example app's cfn-lint test check; a reader's function is theirs to keep as CDK
    makes it."""
    return rule_id == "W3005" and message.endswith("/Properties/Role'")
