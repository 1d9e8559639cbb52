"""End to end: an app whose EcsJobs use the deployment options (`tests/emulator_apps/ecs_options_app.py`: a VPC
of its own, ARM64, secrets, Fargate Spot, a public IP, ECS Exec, tag propagation) deployed with the real `cdk`
CLI to the local emulator. The deploy's own check compares each option the emulator keeps with the template;
boto3 reads them back here, and a changed value fails that check."""

from __future__ import annotations

import json
from typing import Any

import pytest
from emulator_apps.ecs_options_app import DATABASE_SECRET_ARN, STACK_NAME
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.ops.discovery import discover
from local_emulator.checks import check_resource
from local_emulator.consumers.ecs_workers import worker_spec
from local_emulator.deployed import DeployedStack
from local_emulator.server import Emulator

pytestmark = NEEDS_CDK


@pytest.fixture(scope="module")
def deployed(options_deployment: Deployment) -> Deployment:
    """The options app (its three stacks) deployed once for the three options test modules."""
    return options_deployment


def template(deployed: Deployment) -> dict[str, Any]:
    return json.loads((deployed.assembly / f"{STACK_NAME}.template.json").read_text())


def services(deployed: Deployment) -> dict[str, dict[str, Any]]:
    ecs = deployed.server.client("ecs")
    found = {}
    for logical_id, resource_type in deployed.report.stacks[STACK_NAME].items():
        if resource_type == "AWS::ECS::Service":
            arn = DeployedStack.load(deployed.server, STACK_NAME).physical_ids[logical_id]
            cluster = arn.split(":service/", 1)[1].split("/")[0]
            [service] = ecs.describe_services(cluster=cluster, services=[arn])["services"]
            found[logical_id.removesuffix(logical_id[-8:]).removesuffix("Service")] = service
    return found


def test_every_resource_is_deployed_and_its_options_compared(deployed: Deployment) -> None:
    types = deployed.report.stacks[STACK_NAME]
    assert len(types) == len(template(deployed)["Resources"])
    assert {"AWS::ECS::ClusterCapacityProviderAssociations", "AWS::SSM::Parameter", "AWS::EC2::SecurityGroup"} <= set(
        types.values()
    )
    assert deployed.report.properties_compared >= 100


def test_the_spot_service_keeps_its_strategy_and_public_ip(deployed: Deployment) -> None:
    crawl = services(deployed)["Crawl"]
    assert crawl["capacityProviderStrategy"] == [
        {"capacityProvider": "FARGATE", "base": 1, "weight": 1},
        {"capacityProvider": "FARGATE_SPOT", "weight": 4},
    ]
    assert crawl.get("launchType") is None
    awsvpc = crawl["networkConfiguration"]["awsvpcConfiguration"]
    assert awsvpc["assignPublicIp"] == "ENABLED"
    physical_ids = DeployedStack.load(deployed.server, STACK_NAME).physical_ids
    public = [
        physical_ids[logical_id]
        for logical_id, resource in template(deployed)["Resources"].items()
        if resource["Type"] == "AWS::EC2::Subnet"
        and {"Key": "aws-cdk:subnet-type", "Value": "Public"} in resource["Properties"]["Tags"]
    ]
    assert len(public) == 2 and sorted(awsvpc["subnets"]) == sorted(public)  # the VPC's public subnets
    [cluster] = deployed.server.client("ecs").describe_clusters(clusters=[crawl["clusterArn"]])["clusters"]
    assert sorted(cluster["capacityProviders"]) == ["FARGATE", "FARGATE_SPOT"]


def test_the_arm64_service_keeps_exec_tags_network_secrets_and_platform(deployed: Deployment) -> None:
    render = services(deployed)["Render"]
    assert (render["enableExecuteCommand"], render["propagateTags"], render["launchType"]) == (
        True,
        "SERVICE",
        "FARGATE",
    )
    awsvpc = render["networkConfiguration"]["awsvpcConfiguration"]
    [group] = deployed.server.client("ec2").describe_security_groups(GroupIds=awsvpc["securityGroups"])[
        "SecurityGroups"
    ]
    assert group["Description"] == "render workers: egress only" and awsvpc["assignPublicIp"] == "DISABLED"
    ecs = deployed.server.client("ecs")
    task = ecs.describe_task_definition(taskDefinition=render["taskDefinition"])["taskDefinition"]
    assert task["runtimePlatform"] == {"cpuArchitecture": "ARM64", "operatingSystemFamily": "LINUX"}
    [worker] = task["containerDefinitions"]
    assert worker["environment"] == [{"name": "RENDER_QUALITY", "value": "high"}]
    secrets = {s["name"]: s["valueFrom"] for s in worker["secrets"]}
    assert secrets["DATABASE_PASSWORD"] == f"{DATABASE_SECRET_ARN}:password::"
    assert secrets["API_TOKEN"].endswith(":parameter/render/api-token")


def test_the_check_reports_an_option_the_emulator_does_not_hold(deployed: Deployment) -> None:
    stack = DeployedStack.load(deployed.server, STACK_NAME)
    resources = template(deployed)["Resources"]
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::ECS::Service":
            continue
        properties = dict(resource["Properties"])
        compared, mismatches = check_resource(
            deployed.server, "AWS::ECS::Service", stack.physical_ids[logical_id], properties, stack
        )
        assert compared >= 7 and mismatches == []
        changed = {**properties, "EnableExecuteCommand": not properties.get("EnableExecuteCommand", False)}
        changed["PropagateTags"] = "TASK_DEFINITION"
        _, mismatches = check_resource(
            deployed.server, "AWS::ECS::Service", stack.physical_ids[logical_id], changed, stack
        )
        assert [m.split(":")[0] for m in mismatches] == ["EnableExecuteCommand", "PropagateTags"]


def test_the_idempotent_worker_gets_the_deployed_tables_name(deployed: Deployment, tmp_path: Path) -> None:
    # GIVEN Crawl, declared with idempotency=True: its container has the table's variables
    (table,) = deployed.server.client("dynamodb").list_tables()["TableNames"]
    (crawl,) = [j for j in discover(deployed.server.client("cloudformation")).job_types if j.job_type == "Crawl"]
    # WHEN `jobqueues local up` computes its worker process
    spec = worker_spec(Emulator(deployed.server.endpoint), crawl, tmp_path, None)
    # THEN the worker reads the deployed table (sqslease's idempotency on), and Render's does not
    assert spec.environment["SQSLEASE_IDEMPOTENCY_TABLE"] == table and spec.unresolved == ()
    assert spec.environment["SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD"] == "1209600"
