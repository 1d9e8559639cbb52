"""A job queue's consumer in another stack (``add_lambda_consumer``, ``add_ecs_consumer``): the consumer's stack
depends on the job queue's, never the reverse (no CloudFormation DependencyCycle); what the binding creates lives
beside the consumer; cdk-nag AwsSolutions and cfn-lint clean. ``tests/test_emulator_cross_stack.py`` deploys the
same app to the emulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from cdk_helpers import lint_template
from emulator_apps.cross_stack_app import CONSUMERS_STACK, QUEUES_STACK, build_app

from jobqueues.fleet_dashboard import FLEET_DASHBOARD_SUFFIX


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    build_app(app)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # a DependencyCycle, or an unacknowledged cdk-nag finding, raises here
    return {
        "app": app,
        "dir": Path(assembly.directory),
        "queues": assembly.get_stack_by_name(QUEUES_STACK),
        "consumers": assembly.get_stack_by_name(CONSUMERS_STACK),
    }


def of_type(template: dict, kind: str) -> list[dict]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def test_the_consumers_stack_depends_on_the_queues_stack_and_not_the_reverse(synthesized: dict) -> None:
    queues, consumers = synthesized["queues"], synthesized["consumers"]
    stacks = {QUEUES_STACK, CONSUMERS_STACK}
    assert [d.id for d in consumers.dependencies if d.id in stacks] == [QUEUES_STACK]
    assert [d.id for d in queues.dependencies if d.id in stacks] == []
    assert "Fn::ImportValue" not in json.dumps(queues.template)


def test_the_binding_creates_its_resources_in_the_consumer_s_stack(synthesized: dict) -> None:
    queues, consumers = synthesized["queues"].template, synthesized["consumers"].template
    # The event source, the sqslease layer, the consumer alarms, dashboards and scaling: beside the consumer.
    assert len(of_type(consumers, "AWS::Lambda::EventSourceMapping")) == 1
    assert len(of_type(consumers, "AWS::Lambda::LayerVersion")) == 1
    assert len(of_type(consumers, "AWS::CloudWatch::Dashboard")) == 2
    assert len(of_type(consumers, "AWS::ApplicationAutoScaling::ScalableTarget")) == 1
    # The queues stack keeps its queues, their own alarms and the idempotency table, and nothing of a consumer.
    assert len(of_type(queues, "AWS::SQS::Queue")) == 4
    # Its dashboard is the fleet view of the job types it declares, with no line of the other stack's consumers.
    (fleet,) = of_type(queues, "AWS::CloudWatch::Dashboard")
    assert fleet["Properties"]["DashboardName"].endswith(FLEET_DASHBOARD_SUFFIX) and "AWS/Lambda" not in json.dumps(
        fleet
    )
    assert not of_type(queues, "AWS::Lambda::LayerVersion")
    # The function consumes the other stack's queue, imported by its exported URL.
    (function,) = [f for f in of_type(consumers, "AWS::Lambda::Function") if "SQSLEASE_QUEUE_URL" in json.dumps(f)]
    variables = function["Properties"]["Environment"]["Variables"]
    assert "Fn::ImportValue" in variables["SQSLEASE_QUEUE_URL"]
    assert variables["SQSLEASE_IDEMPOTENCY_KEY"] == "thumbs.job_key"
    assert "Fn::ImportValue" in variables["SQSLEASE_IDEMPOTENCY_TABLE"]  # the queues stack's table


@pytest.mark.parametrize("stack", [QUEUES_STACK, CONSUMERS_STACK])
def test_the_templates_are_cfn_lint_clean(synthesized: dict, stack: str) -> None:
    findings = lint_template(synthesized["dir"] / f"{stack}.template.json")
    assert [
        f"{m.rule.id} {m.message}"
        for m in findings
        if not (m.rule.id == "W3005" and "ResizeRole" in m.message)  # the team's own lambda.Function: CDK adds it
    ] == []


@pytest.mark.parametrize(
    ("where", "env"),
    [
        ("region", cdk.Environment(account="123456789012", region="eu-west-1")),
        ("account", cdk.Environment(account="210987654321", region="us-east-1")),
    ],
)
def test_a_consumer_in_another_account_or_region_is_refused_naming_both_stacks_and_the_fix(
    where: str, env: cdk.Environment
) -> None:
    from aws_cdk import Duration
    from aws_cdk import aws_lambda as lambda_

    from jobqueues import JobQueue, JobQueueError

    app = cdk.App()
    queues = cdk.Stack(app, "Queues", env=cdk.Environment(account="123456789012", region="us-east-1"))
    elsewhere = cdk.Stack(app, "Elsewhere", env=env)
    job_queue = JobQueue(queues, "Resize", lambda_timeout=Duration.seconds(30))
    function = lambda_.Function(
        elsewhere,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="app.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
        timeout=Duration.seconds(30),
    )
    with pytest.raises(JobQueueError) as raised:
        job_queue.add_lambda_consumer(function)
    assert str(raised.value) == (
        f"add_lambda_consumer on Queues/Resize: the consumer Elsewhere/Fn is in stack Elsewhere ({where} "
        f"{getattr(env, where)}), the job queue in stack Queues ({where} "
        f"{'us-east-1' if where == 'region' else '123456789012'}): a consumer is bound in its job queue's account "
        "and region (an event source, the alarms on the queue's metrics); declare the consumer in a stack of "
        f"{where} {'us-east-1' if where == 'region' else '123456789012'}"
    )
