"""End to end: LambdaJob's deployment options deployed with the real `cdk` CLI to the emulator and read back.

`tests/emulator_apps/lambda_options_app.py` has an ARM64 function in a VPC with a layer of its own, tracing,
reserved concurrency, filters and event source metrics, and a job in provisioned mode with idempotency. The deploy's
post-deploy check compares what the emulator keeps (a mismatch fails the deploy); the filtered job then runs through
the local Lambda driver, which deletes what its filters filter out, unprocessed; the idempotent job runs a message
once and deletes its duplicate delivery, and a producer's retry of it (its idempotency_key), unrun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver
from jobqueues.emulator.lambda_driver.function import load_function
from jobqueues.emulator.lambda_driver.runtime import LocalRuntime
from jobqueues.emulator.server import Emulator

pytestmark = NEEDS_CDK

STACK = "EmulatorLambdaOptions"


@pytest.fixture(scope="module")
def deployed(options_deployment: Deployment) -> Deployment:
    """The options app (its three stacks) deployed once for the three options test modules."""
    return options_deployment


def function_named(deployed: Deployment, job_type: str) -> dict:
    lambda_ = deployed.server.client("lambda")
    (name,) = [
        f["FunctionName"]
        for f in lambda_.list_functions()["Functions"]
        if f.get("Environment", {}).get("Variables", {}).get("SQSLEASE_JOB_TYPE") == job_type
    ]
    return lambda_.get_function(FunctionName=name)


def mapping_of(deployed: Deployment, function_name: str) -> dict:
    lambda_ = deployed.server.client("lambda")
    (mapping,) = lambda_.list_event_source_mappings(FunctionName=function_name)["EventSourceMappings"]
    return lambda_.get_event_source_mapping(UUID=mapping["UUID"])


def test_the_deploy_compares_the_options_the_emulator_keeps(deployed: Deployment) -> None:
    # The deploy raised on any mismatch; what it could not compare is said.
    assert deployed.report.properties_compared >= 60
    assert "ProvisionedPollerConfig" in deployed.report.not_verifiable["AWS::Lambda::EventSourceMapping"]
    assert "X-Ray" in deployed.report.not_verifiable["AWS::Lambda::Function"]


def test_the_function_keeps_its_architecture_vpc_tracing_concurrency_and_layers(deployed: Deployment) -> None:
    response = function_named(deployed, "Thumbnails")
    function = response["Configuration"]
    assert function["Architectures"] == ["arm64"]
    assert function["TracingConfig"] == {"Mode": "Active"}
    assert response["Concurrency"] == {"ReservedConcurrentExecutions": 10}
    ec2 = deployed.server.client("ec2")
    subnets = ec2.describe_subnets(SubnetIds=function["VpcConfig"]["SubnetIds"])["Subnets"]
    assert len(subnets) == 2 and not any(s["MapPublicIpOnLaunch"] for s in subnets)  # the private ones
    (group,) = ec2.describe_security_groups(GroupIds=function["VpcConfig"]["SecurityGroupIds"])["SecurityGroups"]
    assert group["Description"] == "thumbnail workers: outbound only"
    lambda_ = deployed.server.client("lambda")
    layers = [lambda_.get_layer_version(LayerName=a.split(":")[-2], VersionNumber=int(a.split(":")[-1]))
              for a in (x["Arn"] for x in function["Layers"])]  # fmt: skip
    assert layers[0]["Description"] == "a layer of the team's own"
    assert layers[1]["Description"].startswith("sqslease ")  # last: no layer of yours replaces it
    assert layers[1]["CompatibleArchitectures"] == ["x86_64", "arm64"]


def test_the_event_sources_keep_filters_metrics_and_pollers(deployed: Deployment) -> None:
    thumbs = mapping_of(deployed, function_named(deployed, "Thumbnails")["Configuration"]["FunctionName"])
    patterns = [json.loads(f["Pattern"]) for f in thumbs["FilterCriteria"]["Filters"]]
    assert patterns == [
        {"body": {"kind": ["thumb"]}},
        {"body": {"priority": [{"numeric": [">", 5, "<=", 9]}]}},  # FilterRule.between: (5, 9]
    ]
    assert thumbs["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert thumbs["ScalingConfig"] == {"MaximumConcurrency": 5}
    bursts = mapping_of(deployed, function_named(deployed, "Bursts")["Configuration"]["FunctionName"])
    assert bursts["ProvisionedPollerConfig"] == {"MinimumPollers": 2, "MaximumPollers": 8}
    assert "ScalingConfig" not in bursts


def test_the_local_driver_runs_what_the_filters_keep_and_deletes_the_rest_unprocessed(
    deployed: Deployment, tmp_path: Path
) -> None:
    # GIVEN the deployed Thumbnails function, run locally with the demo's ledger
    emulator = Emulator(deployed.server.endpoint)
    stack = DeployedStack.load(emulator, STACK)
    name = function_named(deployed, "Thumbnails")["Configuration"]["FunctionName"]
    function = load_function(emulator, stack, stack.logical_id(name) or "", tmp_path / "fn")
    ledger = tmp_path / "ledger.jsonl"
    log = (tmp_path / "fn.log").open("ab")
    runtime = LocalRuntime(function, emulator, log, log, {"JOBQUEUES_DEMO_LEDGER": str(ledger)})
    driver = LambdaDriver(emulator, function, runtime, idle_wait_s=1)
    sqs = deployed.server.client("sqs")
    queue_url = sqs.get_queue_url(QueueName=function.mapping.queue_name)["QueueUrl"]
    # WHEN a thumbnail, an urgent video (priority 7), a plain video and a body that is no JSON arrive
    bodies = [
        {"id": "thumb", "kind": "thumb"},
        {"id": "urgent", "kind": "video", "priority": 7},
        {"id": "video", "kind": "video", "priority": 1},
    ]
    for body in [*map(json.dumps, bodies), "not json"]:
        sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    try:
        while driver.stats.records + driver.stats.filtered_out < 4:
            driver.poll_once()
    finally:
        driver.stop()
        log.close()
    # THEN the two that match a filter ran, the other two were deleted without running, and the queue is empty
    ran = {line["id"] for line in map(json.loads, ledger.read_text().splitlines()) if line["event"] == "end"}
    assert ran == {"thumb", "urgent"}
    assert driver.stats.filtered_out == 2 and driver.stats.deleted == 2
    counts = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")


def test_the_idempotency_table_is_deployed_and_the_function_reads_it(deployed: Deployment) -> None:
    # GIVEN Bursts, declared with idempotency=True: the stack's table, compared by the post-deploy check
    dynamodb = deployed.server.client("dynamodb")
    stack = DeployedStack.load(deployed.server, STACK)
    (name,) = [stack.physical_ids[k] for k, t in deployed.report.stacks[STACK].items() if t == "AWS::DynamoDB::Table"]
    table = dynamodb.describe_table(TableName=name)["Table"]
    # THEN its key is pk (string), TTL on ttl, point-in-time recovery on
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}
    backups = dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    # ... and the Bursts function (only) has the variables that turn sqslease's idempotency on
    bursts = function_named(deployed, "Bursts")["Configuration"]["Environment"]["Variables"]
    assert bursts["SQSLEASE_IDEMPOTENCY_TABLE"] == name
    assert bursts["SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD"] == "1209600"  # the DLQ's 14 days, the longer
    assert bursts["SQSLEASE_IDEMPOTENCY_KEY"] == "thumbs.job_key"  # idempotency_key
    thumbnails = function_named(deployed, "Thumbnails")["Configuration"]["Environment"]["Variables"]
    assert "SQSLEASE_IDEMPOTENCY_TABLE" not in thumbnails
    assert "AWS::DynamoDB::Table" in deployed.report.not_verifiable


def test_the_local_driver_deletes_a_duplicate_delivery_of_a_completed_message_unrun(
    deployed: Deployment, tmp_path: Path
) -> None:
    # GIVEN the deployed Bursts function, run locally with the demo's ledger
    emulator = Emulator(deployed.server.endpoint)
    stack = DeployedStack.load(emulator, STACK)
    name = function_named(deployed, "Bursts")["Configuration"]["FunctionName"]
    function = load_function(emulator, stack, stack.logical_id(name) or "", tmp_path / "fn")
    ledger = tmp_path / "ledger.jsonl"
    log_file = tmp_path / "fn.log"
    log = log_file.open("ab")
    runtime = LocalRuntime(function, emulator, log, log, {"JOBQUEUES_DEMO_LEDGER": str(ledger)})
    driver = LambdaDriver(emulator, function, runtime, idle_wait_s=1)
    sqs = deployed.server.client("sqs")
    queue_url = sqs.get_queue_url(QueueName=function.mapping.queue_name)["QueueUrl"]
    try:
        # WHEN a job runs and completes
        first = sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": "burst-1"}))["MessageId"]
        while driver.stats.records < 1:
            driver.poll_once()
        # ... and the same message is delivered again (as after a delete that was lost: same MessageId)
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": "burst-1"}))
        (again,) = sqs.receive_message(
            QueueUrl=queue_url, WaitTimeSeconds=5, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]
        )["Messages"]
        _, invocation, deleted = driver.invoke([{**again, "MessageId": first}])
        # ... and a producer's retry of the same job (a new MessageId, the same id: idempotency_key="thumbs.job_key")
        retry = sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps({"id": "burst-1"}))["MessageId"]
        (retried,) = sqs.receive_message(
            QueueUrl=queue_url, WaitTimeSeconds=5, MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]
        )["Messages"]
        _, retry_invocation, retry_deleted = driver.invoke([retried])
    finally:
        driver.stop()
        log.close()
    # THEN the handler ran once; the duplicate and the retry were reported done (deleted) without running
    ran = [line["id"] for line in map(json.loads, ledger.read_text().splitlines()) if line["event"] == "end"]
    assert ran == ["burst-1"]
    assert invocation.error is None and deleted == [first]
    outcomes = [json.loads(line)["Outcome"] for line in log_file.read_text().splitlines() if '"Outcome"' in line]
    assert retry_invocation.error is None and retry_deleted == [retry] and retried["MessageId"] == retry
    assert outcomes == ["success", "duplicate", "duplicate"]
    counts = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")
