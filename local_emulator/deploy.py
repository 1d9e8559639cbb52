"""Deploy the example app with the real ``cdk`` CLI to the local emulator and report what exists.

``python -m local_emulator deploy`` starts the emulator, runs ``cdk bootstrap`` and
``cdk deploy --all`` against it, checks that every resource of every synthesized template was
created, and prints each queue with its visibility timeout, redrive policy and alarms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_emulator.server import LOCAL_AWS_ENV, LocalServer

PROJECT_DIR = Path(__file__).resolve().parent.parent
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


def cdk_command(*args: str) -> list[str]:
    cdk = PROJECT_DIR / "node_modules" / ".bin" / "cdk"
    if not cdk.exists():
        raise DeployError(f"{cdk} not found: run `npm ci` (the README's `make local` does)")
    # The app runs with this interpreter, so the venv's aws-cdk-lib is the one used.
    return [str(cdk), *args, "--app", f"{sys.executable} app.py", "--no-notices", "--no-version-reporting"]


def run_cdk(server: LocalServer, *args: str, output_dir: Path | None = None) -> None:
    env = {
        **os.environ,
        **server.env(),
        "CDK_DEFAULT_ACCOUNT": LOCAL_ACCOUNT,
        "CDK_DEFAULT_REGION": LOCAL_REGION,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CI": "true",  # no interactive progress bars
    }
    extra = ["--output", str(output_dir)] if output_dir else []
    command = cdk_command(*args, *extra)
    completed = subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True)
    if os.environ.get("JOBQUEUES_VERBOSE"):
        sys.stderr.write(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        raise DeployError(
            f"`cdk {' '.join(args)}` failed with exit code {completed.returncode}:\n"
            + _tail(completed.stdout + completed.stderr)
        )


def deploy(server: LocalServer, output_dir: Path | None = None) -> DeployReport:
    """Bootstrap, deploy every stack of the app, and verify that nothing was skipped."""
    output_dir = output_dir or PROJECT_DIR / "cdk.out"
    run_cdk(server, "bootstrap", f"aws://{LOCAL_ACCOUNT}/{LOCAL_REGION}", output_dir=output_dir)
    run_cdk(server, "deploy", "--all", "--require-approval", "never", output_dir=output_dir)
    return verify(server, output_dir)


def verify(server: LocalServer, assembly_dir: Path) -> DeployReport:
    """Compare every synthesized template with what the emulator's CloudFormation created."""
    cloudformation = server.client("cloudformation")
    manifest = json.loads((assembly_dir / "manifest.json").read_text())
    stacks: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for artifact in manifest["artifacts"].values():
        if artifact["type"] != "aws:cloudformation:stack":
            continue
        stack_name = artifact["properties"].get("stackName") or artifact["displayName"]
        template = json.loads((assembly_dir / artifact["properties"]["templateFile"]).read_text())
        created = {
            r["LogicalResourceId"]: r["ResourceType"]
            for r in cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        }
        for logical_id, resource in template["Resources"].items():
            if logical_id not in created:
                missing.append(f"{stack_name}/{logical_id} ({resource['Type']})")
        stacks[stack_name] = created
    if missing:
        raise DeployError("resources of the app were not created locally:\n  " + "\n  ".join(missing))
    return DeployReport(stacks=stacks, queues=describe_queues(server))


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


def format_report(report: DeployReport) -> str:
    """Human summary: one block per queue."""
    lines = []
    for stack, resources in report.stacks.items():
        lines.append(f"stack {stack}: {len(resources)} resources created, none skipped")
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
    return "\n".join(lines)


def _comparison(operator: str) -> str:
    return {
        "GreaterThanOrEqualToThreshold": ">=",
        "GreaterThanThreshold": ">",
        "LessThanThreshold": "<",
        "LessThanOrEqualToThreshold": "<=",
    }.get(operator, operator)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
