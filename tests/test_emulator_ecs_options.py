"""End to end: an app whose EcsJobs use the deployment options (`tests/emulator_apps/ecs_options_app.py`: a VPC
of its own, ARM64, secrets, Fargate Spot, a public IP, ECS Exec, tag propagation) deployed with the real `cdk`
CLI to the local emulator. The deploy's own check compares each option the emulator keeps with the template;
boto3 reads them back here, and a changed value fails that check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from emulator_apps.ecs_options_app import DATABASE_SECRET_ARN, STACK_NAME
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.emulator.checks import check_resource
from jobqueues.emulator.consumers.ecs_workers import worker_spec
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.server import Emulator
from jobqueues.ops.discovery import discover

APP_DIR = Path(__file__).resolve().parent / "emulator_apps"  # the ECS options app's directory

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
    assert {
        "AWS::ECS::ClusterCapacityProviderAssociations",
        "AWS::SSM::Parameter",
        "AWS::EC2::SecurityGroup",
        "AWS::SecretsManager::Secret",
        "AWS::KMS::Key",
    } <= set(types.values())
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
    # GIVEN Crawl, declared with idempotency=True: its command names the table
    stack = DeployedStack.load(deployed.server, STACK_NAME)
    (table,) = [
        stack.physical_ids[k] for k, t in deployed.report.stacks[STACK_NAME].items() if t == "AWS::DynamoDB::Table"
    ]
    (crawl,) = [j for j in discover(deployed.server.client("cloudformation")).job_types if j.job_type == "Crawl"]
    # WHEN `jobqueues local up` computes its worker process
    spec = worker_spec(Emulator(deployed.server.endpoint), crawl, tmp_path, None)
    # THEN the worker reads the deployed table (sqslease's idempotency on), and Render's does not
    assert spec.command[spec.command.index("--idempotency-table") + 1] == table and spec.unresolved == ()
    assert spec.command[spec.command.index("--idempotency-retention-period") + 1] == "1209600"
    # ... with the declared key function (idempotency_key) as its option
    assert spec.command[spec.command.index("--idempotency-key") + 1] == "crawl:page_key"


def secret_of(deployed: Deployment, logical_prefix: str) -> dict[str, Any]:
    stack = DeployedStack.load(deployed.server, STACK_NAME)
    [logical_id] = [k for k, t in deployed.report.stacks[STACK_NAME].items() if t == "AWS::SecretsManager::Secret"]
    assert logical_id.startswith(logical_prefix)
    return deployed.server.client("secretsmanager").describe_secret(SecretId=stack.physical_ids[logical_id])


def test_a_secret_of_the_stack_is_generated_under_its_key(deployed: Deployment) -> None:
    # GIVEN the stack's own secret (GenerateSecretString, a KMS key of the stack); WHEN deployed
    described = secret_of(deployed, "Admin")
    client = deployed.server.client("secretsmanager")
    value = json.loads(client.get_secret_value(SecretId=described["ARN"])["SecretString"])
    # THEN Secrets Manager holds the template's fields and a generated password as the generator asked
    assert value["username"] == "render" and len(value["password"]) == 24
    assert not set(value["password"]) & set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # exclude_punctuation
    assert described["Description"] == "render admin credentials"
    # the stack's key (moto's DescribeKey answers 500 for a key CloudFormation made: listed instead)
    stack = DeployedStack.load(deployed.server, STACK_NAME)
    [key_logical_id] = [k for k, t in deployed.report.stacks[STACK_NAME].items() if t == "AWS::KMS::Key"]
    key_id = stack.physical_ids[key_logical_id]
    assert described["KmsKeyId"].rsplit("/", 1)[-1] == key_id
    assert key_id in [k["KeyId"] for k in deployed.server.client("kms").list_keys()["Keys"]]


def test_local_workers_get_the_secrets_the_emulator_holds_and_a_line_for_each_it_does_not(
    deployed: Deployment,
) -> None:
    # GIVEN the Render job: a generated secret's JSON key, an SSM parameter (both in the stack), and a secret the
    # app imports, which the emulator does not hold
    job = discover(deployed.server.client("cloudformation"), [STACK_NAME]).find("Render")
    admin = json.loads(
        deployed.server.client("secretsmanager").get_secret_value(SecretId=secret_of(deployed, "Admin")["ARN"])[
            "SecretString"
        ]
    )
    # WHEN `local up` prepares its workers
    spec = worker_spec(deployed.server, job, APP_DIR, None)
    # THEN they get what ECS would inject, and one line names the missing secret and how to create it
    assert spec.environment["ADMIN_PASSWORD"] == admin["password"]
    assert spec.environment["API_TOKEN"] == "local"
    assert "DATABASE_PASSWORD" not in spec.environment
    [line] = spec.missing_secrets
    assert line.startswith("secret DATABASE_PASSWORD: Secrets Manager secret render/database-AbCdEf")
    assert f"aws --endpoint-url {deployed.server.endpoint} secretsmanager create-secret --name render/database " in line
    # and once created as the line says, the next start gets it
    deployed.server.client("secretsmanager").create_secret(
        Name="render/database", SecretString=json.dumps({"password": "from-the-line"})
    )
    try:
        again = worker_spec(deployed.server, job, APP_DIR, None)
        assert again.environment["DATABASE_PASSWORD"] == "from-the-line" and again.missing_secrets == ()
    finally:
        deployed.server.client("secretsmanager").delete_secret(
            SecretId="render/database", ForceDeleteWithoutRecovery=True
        )
