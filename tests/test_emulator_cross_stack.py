"""End to end: consumers in another stack than their job queues (`tests/emulator_apps/cross_stack_app.py`), deployed
with the real `cdk` CLI to the emulator as part of the options app, then read back and run.

The consumers stack imports the queues stack's exports (queue URLs and ARNs, the idempotency table); the deploy's
post-deploy check compared every property the emulator keeps. The function of the consumers stack then runs a job
of the queues stack's queue through the local Lambda driver, keeping its idempotency record in the queues stack's
table.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from emulator_apps.cross_stack_app import CONSUMERS_STACK, QUEUES_STACK
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.cli import main
from jobqueues.emulator.consumers.runner import ConsumerRunner
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver
from jobqueues.emulator.lambda_driver.function import load_function
from jobqueues.emulator.lambda_driver.runtime import LocalRuntime
from jobqueues.emulator.server import Emulator
from jobqueues.ops.discovery import discover

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
    # The queues stack's one dashboard is its fleet view.
    assert list(deployed.report.stacks[QUEUES_STACK].values()).count("AWS::CloudWatch::Dashboard") == 1


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


def test_status_finds_the_consumers_in_the_other_stack(
    deployed: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the queues stack's Resize and Encode, consumed by the consumers stack's function and service
    # WHEN `jobqueues status` searches either stack
    for stack in (QUEUES_STACK, CONSUMERS_STACK):
        assert main(["--endpoint-url", deployed.server.endpoint, "status", "--json", "--stack", stack]) == 0
        rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
        # THEN each job type's row shows its consumer (it was `-`, and the consumers stack had no job type)
        assert sorted(rows) == [f"{QUEUES_STACK}/Encode", f"{QUEUES_STACK}/Resize"], stack
        assert (rows[f"{QUEUES_STACK}/Resize"]["consumer"], rows[f"{QUEUES_STACK}/Encode"]["consumer"]) == (
            "lambda",
            "ecs",
        )
    # ... with the consumers' log groups, where `dlq list` looks for a message's error
    found = discover(deployed.server.client("cloudformation"), [CONSUMERS_STACK])
    for name in ("Resize", "Encode"):
        consumer = found.find(name, stack=CONSUMERS_STACK).consumer
        assert consumer is not None and consumer.stack == CONSUMERS_STACK and consumer.log_group, name


#: The Encode service's handler (``encode:handle``, the worker command's), for the local workers: it appends the
#: job's id to the file ``ENCODE_LEDGER`` names.
ENCODE_HANDLER = """
import json, os

def handle(body, message):
    with open(os.environ["ENCODE_LEDGER"], "a") as ledger:
        ledger.write(json.loads(body)["id"] + "\\n")
"""


def test_local_up_runs_the_consumers_in_the_other_stack(deployed: Deployment, tmp_path: Path) -> None:
    # GIVEN the queues stack's job types, as `jobqueues local up` discovers them, and the handlers of the service
    found = discover(deployed.server.client("cloudformation"))
    jobs = [job for job in found.job_types if job.stack == QUEUES_STACK]
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "encode.py").write_text(ENCODE_HANDLER)
    resize_ledger, encode_ledger = tmp_path / "resize.jsonl", tmp_path / "encode.txt"
    runner = ConsumerRunner(
        deployed.server,
        jobs,
        app_dir=tmp_path,
        logs_dir=tmp_path / "logs",
        handlers=tmp_path / "handlers",
        scale_in_after_s=0,
        out=lambda line: None,
        environment={
            f"{QUEUES_STACK}/Resize": {"JOBQUEUES_DEMO_LEDGER": str(resize_ledger)},
            f"{QUEUES_STACK}/Encode": {"ENCODE_LEDGER": str(encode_ledger)},
        },
    )
    # WHEN the runner starts their consumers and a job arrives on each queue
    sqs = deployed.server.client("sqs")
    resize_id, encode_id = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("resize", "encode"))
    try:
        runner.start()
        assert runner.skipped == {} and sorted(job.job_type for job in runner.consumed()) == ["Encode", "Resize"]
        for job, job_id in (
            (found.find("Resize", QUEUES_STACK), resize_id),
            (found.find("Encode", QUEUES_STACK), encode_id),
        ):
            sqs.send_message(QueueUrl=job.queue_url, MessageBody=json.dumps({"id": job_id}))

        def ran() -> bool:
            runner.tick()
            resized = resize_ledger.exists() and resize_id in resize_ledger.read_text()
            return resized and encode_ledger.exists() and encode_id in encode_ledger.read_text()

        deadline = time.monotonic() + 120
        while not ran():
            assert time.monotonic() < deadline, "the two jobs did not run within 120 s"
            time.sleep(0.5)
    finally:
        problems = runner.stop()
    # THEN the function of the consumers stack ran Resize's job and a local worker of its service ran Encode's
    assert problems == []
    ended = [json.loads(line) for line in resize_ledger.read_text().splitlines()]
    assert [line["id"] for line in ended if line["event"] == "end"] == [resize_id]
    assert encode_ledger.read_text().split() == [encode_id]
