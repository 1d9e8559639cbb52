"""End to end: consumers in another stack than their job queues (`tests/emulator_apps/cross_stack_app.py`), deployed
with the real `cdk` CLI to the emulator as part of the options app, then read back and run.

The consumers stack imports the queues stack's exports (queue URLs and ARNs, the idempotency table); the deploy's
post-deploy check compared every property the emulator keeps. The function of the consumers stack then runs a job
of the queues stack's queue through the local Lambda driver, keeping its idempotency record in the queues stack's
table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulator_apps.cross_stack_app import CONSUMERS_STACK, QUEUES_STACK
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver
from jobqueues.emulator.lambda_driver.function import load_function
from jobqueues.emulator.lambda_driver.runtime import LocalRuntime
from jobqueues.emulator.server import Emulator

pytestmark = NEEDS_CDK


@pytest.fixture(scope="module")
def deployed(options_deployment: Deployment) -> Deployment:
    """The options app, the cross-stack app's two stacks among its stacks, deployed once."""
    return options_deployment


def physical_id(deployed: Deployment, stack: str, resource_type: str, prefix: str) -> str:
    resources = DeployedStack.load(deployed.server, stack)
    (logical_id,) = [k for k, t in deployed.report.stacks[stack].items() if t == resource_type and k.startswith(prefix)]
    return resources.physical_ids[logical_id]


def test_both_stacks_are_deployed_and_the_consumers_import_the_queues(deployed: Deployment) -> None:
    cloudformation = deployed.server.client("cloudformation")
    for name in (QUEUES_STACK, CONSUMERS_STACK):
        [stack] = cloudformation.describe_stacks(StackName=name)["Stacks"]
        assert stack["StackStatus"] == "CREATE_COMPLETE", name
    exports = {e["Name"]: e["Value"] for e in cloudformation.list_exports()["Exports"]}
    assert any(name.startswith(f"{QUEUES_STACK}:") for name in exports)
    # The function's consumer settings are the queues stack's queue and table, as deployed.
    sqs = deployed.server.client("sqs")
    queue_url = sqs.get_queue_url(QueueName=f"{QUEUES_STACK}-Resize")["QueueUrl"]
    function_name = physical_id(deployed, CONSUMERS_STACK, "AWS::Lambda::Function", "ResizeFunction")
    lambda_ = deployed.server.client("lambda")
    variables = lambda_.get_function(FunctionName=function_name)["Configuration"]["Environment"]["Variables"]
    table = physical_id(deployed, QUEUES_STACK, "AWS::DynamoDB::Table", "IdempotencyTable")
    assert variables["SQSLEASE_QUEUE_URL"] == physical_id(deployed, QUEUES_STACK, "AWS::SQS::Queue", "ResizeQueue")
    assert variables["SQSLEASE_IDEMPOTENCY_TABLE"] == table
    assert variables["SQSLEASE_IDEMPOTENCY_KEY"] == "thumbs.job_key"
    (mapping,) = lambda_.list_event_source_mappings(FunctionName=function_name)["EventSourceMappings"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert mapping["EventSourceArn"] == queue_arn
    # The service's scaling and the consumer alarms were created beside the consumers, in their stack.
    types = deployed.report.stacks[CONSUMERS_STACK]
    assert "AWS::ApplicationAutoScaling::ScalableTarget" in types.values()
    assert sum(t == "AWS::CloudWatch::Dashboard" for t in types.values()) == 2
    assert "AWS::CloudWatch::Dashboard" not in deployed.report.stacks[QUEUES_STACK].values()


def test_the_function_of_the_consumers_stack_runs_a_job_of_the_queues_stack(
    deployed: Deployment, tmp_path: Path
) -> None:
    # GIVEN the consumers stack's function, run locally with the demo's ledger
    emulator = Emulator(deployed.server.endpoint)
    stack = DeployedStack.load(emulator, CONSUMERS_STACK)
    name = physical_id(deployed, CONSUMERS_STACK, "AWS::Lambda::Function", "ResizeFunction")
    function = load_function(emulator, stack, stack.logical_id(name) or "", tmp_path / "fn")
    ledger = tmp_path / "ledger.jsonl"
    log = (tmp_path / "fn.log").open("ab")
    runtime = LocalRuntime(function, emulator, log, log, {"JOBQUEUES_DEMO_LEDGER": str(ledger)})
    driver = LambdaDriver(emulator, function, runtime, idle_wait_s=1)
    sqs = deployed.server.client("sqs")
    queue_url = sqs.get_queue_url(QueueName=function.mapping.queue_name)["QueueUrl"]
    assert function.mapping.queue_name == f"{QUEUES_STACK}-Resize"
    # WHEN a job arrives on the queues stack's queue
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": "resize-1"}))
    try:
        while driver.stats.records < 1:
            driver.poll_once()
    finally:
        driver.stop()
        log.close()
    # THEN it ran once and was deleted, and its idempotency record is in the queues stack's table, under its key
    ran = [line["id"] for line in map(json.loads, ledger.read_text().splitlines()) if line["event"] == "end"]
    assert ran == ["resize-1"] and driver.stats.deleted == 1
    table = physical_id(deployed, QUEUES_STACK, "AWS::DynamoDB::Table", "IdempotencyTable")
    items = deployed.server.client("dynamodb").scan(TableName=table)["Items"]
    assert [item["pk"]["S"] for item in items if item["pk"]["S"].startswith("Resize#")] == ["Resize#resize-1"]
