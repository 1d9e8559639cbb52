"""End to end: the real `cdk` CLI deploys a hand-written consumers app to the emulator, nothing skipped.

`tests/emulator_apps/consumers_app.py` has one of each resource a jobqueues consumer emits (Lambda
with a layer and an SQS event source, Fargate service in a new VPC with flow logs, application
auto scaling with metric math, metric-math alarms, a dashboard). One deploy per module; boto3 reads
everything back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment, deployment

from jobqueues.emulator.deploy import DeployError, verify
from jobqueues.emulator.server import LocalServer

pytestmark = [NEEDS_CDK, pytest.mark.heavy]

APP = Path(__file__).resolve().parent / "emulator_apps" / "consumers_app.py"
STACK = "EmulatorConsumers"
CLUSTER = f"{STACK}-cluster"
SERVICE_ID = f"service/{CLUSTER}/{STACK}-VideoTranscode"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory, APP) as deployed:
        yield deployed


def test_every_resource_is_created_and_checked(deployed: Deployment) -> None:
    types = set(deployed.report.stacks[STACK].values())
    assert {
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Logs::LogGroup",
        "AWS::ECS::Cluster",
        "AWS::ECS::TaskDefinition",
        "AWS::ECS::Service",
        "AWS::EC2::VPC",
        "AWS::EC2::NatGateway",
        "AWS::EC2::FlowLog",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::Dashboard",
    } <= types
    template = json.loads((deployed.assembly / f"{STACK}.template.json").read_text())
    assert len(deployed.report.stacks[STACK]) == len(template["Resources"])
    assert deployed.report.properties_compared >= 50
    assert "AWS::ECS::Service" in deployed.report.not_verifiable


def test_function_keeps_its_layer_role_and_configuration(deployed: Deployment) -> None:
    lambda_ = deployed.server.client("lambda")
    function = lambda_.get_function(FunctionName=f"{STACK}-Thumbnails")["Configuration"]
    assert (function["Runtime"], function["Handler"], function["Timeout"]) == ("python3.14", "index.handler", 30)
    assert function["Environment"]["Variables"] == {"JOB_TYPE": "Thumbnails", "LEASE_SECONDS": "30"}
    [layer] = lambda_.list_layers()["Layers"]
    assert [x["Arn"] for x in function["Layers"]] == [layer["LatestMatchingVersion"]["LayerVersionArn"]]
    role = function["Role"].rsplit("/", 1)[-1]
    attached = deployed.server.client("iam").list_attached_role_policies(RoleName=role)["AttachedPolicies"]
    assert [p["PolicyName"] for p in attached] == ["AWSLambdaBasicExecutionRole"]


def test_event_source_mapping_is_readable(deployed: Deployment) -> None:
    lambda_ = deployed.server.client("lambda")
    [mapping] = lambda_.list_event_source_mappings(FunctionName=f"{STACK}-Thumbnails")["EventSourceMappings"]
    mapping = lambda_.get_event_source_mapping(UUID=mapping["UUID"])
    assert mapping["EventSourceArn"].endswith(f":{STACK}-Thumbnails")
    assert (mapping["BatchSize"], mapping["MaximumBatchingWindowInSeconds"]) == (7, 4)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["State"] == "Enabled"


def _queue_through_api(server: LocalServer) -> str:
    """A queue + DLQ pair and a mapping to the deployed function, made through the API, not CloudFormation."""
    sqs = server.client("sqs")
    dlq = sqs.create_queue(QueueName="api-mapped-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = sqs.create_queue(
        QueueName="api-mapped",
        Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})},
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    server.client("lambda").create_event_source_mapping(
        FunctionName=f"{STACK}-Thumbnails", EventSourceArn=arn, BatchSize=5
    )
    return url


@pytest.mark.parametrize("made_by", ["cloudformation", "api"])
def test_event_source_mapping_never_touches_the_queue(deployed: Deployment, made_by: str) -> None:
    # moto would receive the messages at each SendMessage and fail to invoke the function (no Docker),
    # burning receive counts until they reach the DLQ.
    sqs = deployed.server.client("sqs")
    if made_by == "cloudformation":
        url = sqs.get_queue_url(QueueName=f"{STACK}-Thumbnails")["QueueUrl"]
    else:
        url = _queue_through_api(deployed.server)
    redrive = json.loads(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]["RedrivePolicy"])
    dlq_url = sqs.get_queue_url(QueueName=redrive["deadLetterTargetArn"].rsplit(":", 1)[-1])["QueueUrl"]
    for i in range(6):  # moto acts on a mapping inside SendMessage itself: once answered, it did all it would
        sqs.send_message(QueueUrl=url, MessageBody=f"job {i}")
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]) == (
        "6",
        "0",
    )
    dlq = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert dlq["ApproximateNumberOfMessages"] == "0"
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"])
    assert sorted(m["Body"] for m in received["Messages"]) == [f"job {i}" for i in range(6)]
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in received["Messages"]} == {"1"}  # this receive only
    sqs.purge_queue(QueueUrl=url)


def test_scalable_target_and_metric_math_policies(deployed: Deployment) -> None:
    autoscaling = deployed.server.client("application-autoscaling")
    [target] = autoscaling.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[SERVICE_ID])[
        "ScalableTargets"
    ]
    assert (target["ScalableDimension"], target["MinCapacity"], target["MaxCapacity"]) == (
        "ecs:service:DesiredCount",
        0,
        8,
    )
    policies = autoscaling.describe_scaling_policies(ServiceNamespace="ecs", ResourceId=SERVICE_ID)["ScalingPolicies"]
    by_type = {p["PolicyType"]: p for p in policies}
    tracking = by_type["TargetTrackingScaling"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["TargetValue"] == 4
    queries = {q["Id"]: q for q in tracking["CustomizedMetricSpecification"]["Metrics"]}
    assert queries["backlog_per_task"]["Expression"] == "(visible + inflight) / MAX([running, 1])"
    assert queries["running"]["MetricStat"]["Metric"]["Namespace"] == "ECS/ContainerInsights"
    step = by_type["StepScaling"]["StepScalingPolicyConfiguration"]
    assert step["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]


def test_metric_math_alarms(deployed: Deployment) -> None:
    cloudwatch = deployed.server.client("cloudwatch")
    [backlog] = cloudwatch.describe_alarms(AlarmNames=[f"{STACK}-VideoTranscode-backlog"])["MetricAlarms"]
    assert backlog["Threshold"] == 100 and backlog["EvaluationPeriods"] == 3
    queries = {q["Id"]: q for q in backlog["Metrics"]}
    assert [q["Expression"] for q in queries.values() if q.get("Expression")] == ["visible + inflight"]
    assert queries["visible"]["MetricStat"]["Metric"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    policies = deployed.server.client("application-autoscaling").describe_scaling_policies(ServiceNamespace="ecs")
    step_arn = next(p["PolicyARN"] for p in policies["ScalingPolicies"] if p["PolicyType"] == "StepScaling")
    step_alarms = [a for a in cloudwatch.describe_alarms()["MetricAlarms"] if a["AlarmActions"] == [step_arn]]
    assert len(step_alarms) == 1 and step_alarms[0]["Metrics"]


def test_fargate_service_task_and_cluster(deployed: Deployment) -> None:
    ecs = deployed.server.client("ecs")
    [cluster] = ecs.describe_clusters(clusters=[CLUSTER], include=["SETTINGS"])["clusters"]
    assert cluster["settings"] == [{"name": "containerInsights", "value": "enabled"}]
    [service] = ecs.describe_services(cluster=CLUSTER, services=[f"{STACK}-VideoTranscode"])["services"]
    assert (service["desiredCount"], service["launchType"]) == (0, "FARGATE")
    subnets = service["networkConfiguration"]["awsvpcConfiguration"]["subnets"]
    described = deployed.server.client("ec2").describe_subnets(SubnetIds=subnets)["Subnets"]
    assert sorted(s["AvailabilityZone"] for s in described) == ["us-east-1a", "us-east-1b"]
    task = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])["taskDefinition"]
    assert (task["cpu"], task["memory"], task["networkMode"]) == ("512", "1024", "awsvpc")
    assert task["requiresCompatibilities"] == ["FARGATE"] and task["executionRoleArn"] and task["taskRoleArn"]
    [container] = task["containerDefinitions"]
    assert container["image"] == "public.ecr.aws/docker/library/python:3.14-slim"
    assert container["command"] == ["python", "-m", "sqslease.worker"]
    assert container["logConfiguration"]["logDriver"] == "awslogs"


def test_log_groups_flow_log_and_dashboard(deployed: Deployment) -> None:
    groups = deployed.server.client("logs").describe_log_groups()["logGroups"]
    retention = {g["logGroupName"].split("-")[1][:-8]: g.get("retentionInDays") for g in groups}
    assert retention["ThumbnailsLogs"] == 14 and retention["VideoTranscodeLogs"] == 14
    [flow_log] = deployed.server.client("ec2").describe_flow_logs()["FlowLogs"]
    assert (flow_log["TrafficType"], flow_log["LogDestinationType"]) == ("ALL", "cloud-watch-logs")
    body = deployed.server.client("cloudwatch").get_dashboard(DashboardName=f"{STACK}-VideoTranscode")
    [widget] = json.loads(body["DashboardBody"])["widgets"]
    assert widget["properties"]["title"] == "backlog"


def test_verify_fails_on_a_property_that_differs_from_the_template(deployed: Deployment) -> None:
    lambda_ = deployed.server.client("lambda")
    lambda_.update_function_configuration(FunctionName=f"{STACK}-Thumbnails", Timeout=99)
    try:
        with pytest.raises(DeployError, match=r"ThumbnailsFunction.*Timeout: template 30, emulator 99"):
            verify(deployed.server, deployed.assembly)
    finally:
        lambda_.update_function_configuration(FunctionName=f"{STACK}-Thumbnails", Timeout=30)
    verify(deployed.server, deployed.assembly)


@pytest.mark.parametrize(
    ("resource_type", "hint"),
    [
        ("Custom::VpcRestrictDefaultSG", "restrict_default_security_group=False"),
        ("Custom::LogRetention", "logs.LogGroup(retention=...)"),
        ("AWS::CloudFormation::CustomResource", "native CloudFormation resources"),
    ],
)
def test_custom_resource_fails_the_deploy_with_a_hint(deployed: Deployment, resource_type: str, hint: str) -> None:
    # moto would report it CREATE_COMPLETE although its Lambda never ran.
    function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{STACK}-Thumbnails"
    template = {"Resources": {"Restrict": {"Type": resource_type, "Properties": {"ServiceToken": function_arn}}}}
    stack_name = "Custom" + resource_type.replace(":", "")
    cloudformation = deployed.server.client("cloudformation")
    cloudformation.create_change_set(
        StackName=stack_name, ChangeSetName="c1", ChangeSetType="CREATE", TemplateBody=json.dumps(template)
    )
    with pytest.raises(Exception, match=f"{resource_type} is a custom resource") as raised:
        cloudformation.execute_change_set(ChangeSetName="c1", StackName=stack_name)
    assert hint in str(raised.value)
    assert cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"
