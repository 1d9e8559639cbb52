"""What a deploy to the local emulator created, checked against the templates, and reported.

A deploy (:func:`jobqueues.emulator.user_app.deploy_app`, for ``jobqueues local`` and the tests alike) ends with
:func:`verify`: every resource of every synthesized template, nested assemblies included, was created, and the
properties moto keeps match the template (:mod:`jobqueues.emulator.checks`). :func:`format_report` prints each queue
with its visibility timeout, redrive policy and alarms, then what could not be verified locally.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobqueues.emulator.checks import NOT_VERIFIABLE, check_resource
from jobqueues.emulator.deployed import DeployedError, DeployedStack
from jobqueues.emulator.paths import CHECKOUT_DIR
from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from jobqueues.ops.assembly import stack_artifacts

PROJECT_DIR = CHECKOUT_DIR
LOCAL_ACCOUNT = "123456789012"
LOCAL_REGION = LOCAL_AWS_ENV["AWS_DEFAULT_REGION"]


class DeployError(RuntimeError):
    """The local deploy failed or left a resource of the app uncreated."""


@dataclass
class QueueReport:
    name: str
    attributes: dict[str, str]
    alarms: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DeployReport:
    """What the emulator holds after a deploy."""

    stacks: dict[str, dict[str, str]]  # stack name -> logical id -> resource type
    queues: list[QueueReport]
    properties_compared: int = 0
    #: stack name -> why cdk did not deploy it (:func:`skipped_by_cdk`)
    skipped: dict[str, str] = field(default_factory=dict)
    #: resource type -> what cannot be verified locally, for the types the app deployed
    not_verifiable: dict[str, str] = field(default_factory=dict)


#: Stack states in which every resource of the last deploy exists.
DEPLOYED_STATES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE"})


def verify(server: LocalServer, assembly_dir: Path) -> DeployReport:
    """Compare every synthesized template, in every nested assembly, with what the emulator's CloudFormation created.

    Fails if a stack is missing or not in a deployed state, a resource is missing, or a property moto keeps
    differs from the template.
    """
    stacks: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    compared = 0
    skipped = {}
    for artifact in stack_artifacts(assembly_dir):
        stack_name = artifact.name
        why = skipped_by_cdk(stack_name, json.loads(artifact.template_file.read_text()))
        if why is not None:  # as on AWS: not a failure of the deploy, but its job types are unseen
            skipped[stack_name] = why
            continue
        try:
            deployed = DeployedStack.load(server, stack_name)
        except DeployedError as error:
            problems.append(f"{stack_name}: not deployed ({error.__cause__ or error})")  # the emulator's answer
            continue
        if deployed.status not in DEPLOYED_STATES:
            problems.append(f"{stack_name}: {deployed.status}, not deployed")
            continue
        template = json.loads(artifact.template_file.read_text())
        stacks[stack_name] = deployed.resource_types
        for logical_id, resource in template["Resources"].items():
            where = f"{stack_name}/{logical_id} ({resource['Type']})"
            if logical_id not in deployed.physical_ids:
                problems.append(f"{where}: not created")
                continue
            count, mismatches = check_resource(
                server, resource["Type"], deployed.physical_ids[logical_id], resource.get("Properties", {}), deployed
            )
            compared += count
            problems += [f"{where}: {m}" for m in mismatches]
    if problems:
        raise DeployError("the local deploy does not match the app:\n  " + "\n  ".join(problems))
    deployed_types = {t for resources in stacks.values() for t in resources.values()}
    return DeployReport(
        stacks=stacks,
        queues=describe_queues(server),
        properties_compared=compared,
        not_verifiable={t: why for t, why in NOT_VERIFIABLE.items() if t in deployed_types},
        skipped=skipped,
    )


def describe_queues(server: LocalServer) -> list[QueueReport]:
    sqs = server.client("sqs")
    cloudwatch = server.client("cloudwatch")
    alarms_by_queue: dict[str, list[dict[str, Any]]] = {}
    for page in cloudwatch.get_paginator("describe_alarms").paginate():
        for alarm in page["MetricAlarms"]:
            for dimension in alarm.get("Dimensions", []):
                if dimension["Name"] == "QueueName":
                    alarms_by_queue.setdefault(dimension["Value"], []).append(alarm)
    reports = []
    for url in sorted(sqs.list_queues().get("QueueUrls", [])):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        name = url.rsplit("/", 1)[-1]
        reports.append(QueueReport(name=name, attributes=attributes, alarms=alarms_by_queue.get(name, [])))
    return reports


def skipped_by_cdk(stack_name: str, template: dict[str, Any]) -> str | None:
    """Why ``cdk deploy`` does not deploy this stack (none for one it deploys): it skips a stack without resources
    but its CDK metadata, and the job types declared in it (an adopted queue's marker is in the template's own
    ``Metadata``) are then in no deployed template, for the ``jobqueues`` command to find."""
    if any(r.get("Type") != "AWS::CDK::Metadata" for r in template.get("Resources", {}).values()):
        return None
    from jobqueues.ops.discovery import discover_templates
    from jobqueues.ops.stack_template import StackTemplate

    names = [job.name for job in discover_templates([StackTemplate(stack_name, template)]).job_types]
    unseen = f": the jobqueues command will not see {', '.join(names)} (give the stack a resource)" if names else ""
    return f"cdk does not deploy a stack without resources{unseen}"


def format_report(report: DeployReport) -> str:
    """Human summary: one block per queue."""
    lines = []
    for stack, resources in report.stacks.items():
        lines.append(f"stack {stack}: {len(resources)} resources created, none skipped")
    for stack, why in report.skipped.items():
        lines.append(f"stack {stack}: not deployed: {why}")
    for queue in report.queues:
        a = queue.attributes
        line = (
            f"  {queue.name}: visibility timeout {a['VisibilityTimeout']} s, "
            f"retention {int(a['MessageRetentionPeriod']) // 86_400} days"
        )
        if "RedrivePolicy" in a:
            redrive = json.loads(a["RedrivePolicy"])
            line += (
                f", after {redrive['maxReceiveCount']} receives -> {redrive['deadLetterTargetArn'].rsplit(':', 1)[-1]}"
            )
        if "RedriveAllowPolicy" in a:
            allow = json.loads(a["RedriveAllowPolicy"])
            sources = ", ".join(arn.rsplit(":", 1)[-1] for arn in allow.get("sourceQueueArns", []))
            line += f", accepts redrive from {sources}"
        if "Policy" in a:
            line += ", TLS-only policy"
        lines.append(line)
        for alarm in sorted(queue.alarms, key=lambda al: al["MetricName"]):
            lines.append(
                f"      alarm {alarm['MetricName']} {alarm['Statistic']} "
                f"{_comparison(alarm['ComparisonOperator'])} {alarm['Threshold']:g}"
            )
    lines.append(f"{report.properties_compared} properties match their templates")
    if report.not_verifiable:
        lines.append("not verifiable locally:")
        lines += [f"  {resource_type}: {why}" for resource_type, why in sorted(report.not_verifiable.items())]
    return "\n".join(lines)


def _comparison(operator: str) -> str:
    return {
        "GreaterThanOrEqualToThreshold": ">=",
        "GreaterThanThreshold": ">",
        "LessThanThreshold": "<",
        "LessThanOrEqualToThreshold": "<=",
    }.get(operator, operator)
