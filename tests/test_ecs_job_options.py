"""EcsJob's deployment options: environment and secrets, Fargate Spot, ARM64, a VPC, subnets and security groups of
your own, a public IP, ECS Exec and tag propagation. Each is checked at synth (a ``JobQueueError`` naming the prop,
the value and the fix) and rendered into templates that pass cdk-nag AwsSolutions and cfn-lint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_ssm as ssm
from aws_cdk.assertions import Template
from cdk_helpers import ENV, lint_template
from cdk_nag import AwsSolutionsChecks

from jobqueues import EcsJob, JobQueueError, deploy_time_availability_zones

REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobs/db-AbCdEf"


class JobsStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def new_stack(app: cdk.App | None = None) -> cdk.Stack:
    app = app or cdk.App(context={"jobqueues:image": REGISTRY_IMAGE})
    return JobsStack(app, "Jobs", env=ENV)


def own_vpc(stack: cdk.Stack) -> ec2.Vpc:
    return ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1, flow_logs={"All": ec2.FlowLogOptions()})


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE}, outdir=str(out))
    stack = new_stack(app)
    vpc = own_vpc(stack)
    key = kms.Key(stack, "SecretKey", enable_key_rotation=True)
    database = secretsmanager.Secret.from_secret_attributes(
        stack, "Database", secret_complete_arn=SECRET_ARN, encryption_key=key
    )
    token = ssm.StringParameter.from_string_parameter_name(stack, "Token", "/jobs/token")
    group = ec2.SecurityGroup(stack, "Workers", vpc=vpc, description="render workers")
    render = EcsJob(
        stack,
        "Render",
        handler="render:handle",
        processing_p99=Duration.seconds(30),
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        security_groups=[group],
        cpu_architecture=ecs.CpuArchitecture.ARM64,
        environment={"LOG_FORMAT": "json"},
        secrets={
            "DB_PASSWORD": ecs.Secret.from_secrets_manager(database, "password"),
            "API_TOKEN": ecs.Secret.from_ssm_parameter(token),
        },
        enable_execute_command=True,
        propagate_tags=ecs.PropagatedTagSource.SERVICE,
        hooks=["render.hooks:Timing", "tracing_setup:ProviderHooks"],
    )
    crawl = EcsJob(
        stack,
        "Crawl",
        handler="crawl:handle",
        processing_p99=Duration.seconds(20),
        vpc=vpc,
        capacity_provider_strategies=[
            ecs.CapacityProviderStrategy(capacity_provider="FARGATE", base=1, weight=1),
            ecs.CapacityProviderStrategy(capacity_provider="FARGATE_SPOT", weight=3),
        ],
    )
    encode = EcsJob(
        stack,
        "Encode",
        handler="encode:handle",
        processing_p99=Duration.seconds(20),
        vpc=vpc,
        cpu_architecture=ecs.CpuArchitecture.ARM64,
        capacity_provider_strategies=[ecs.CapacityProviderStrategy(capacity_provider="FARGATE_SPOT", weight=1)],
        platform_version=ecs.FargatePlatformVersion.VERSION1_4,
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    artifact = assembly.get_stack_by_name("Jobs")
    return {
        "stack": stack,
        "template": artifact.template,
        "file": Path(artifact.template_full_path),
        "jobs": {"Render": render, "Crawl": crawl, "Encode": encode},
        "key": key,
    }


def resource(synthesized: dict, construct: Any) -> dict:
    return synthesized["template"]["Resources"][synthesized["stack"].get_logical_id(construct.node.default_child)]


def statements(synthesized: dict, role: Any) -> list[dict]:
    role_id = synthesized["stack"].get_logical_id(role.node.default_child)
    return [
        statement
        for policy in synthesized["template"]["Resources"].values()
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def actions(statement: dict) -> list[str]:
    return statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]


def test_the_templates_pass_cfn_lint(synthesized: dict) -> None:
    findings = [f"{m.rule.id} {m.message}" for m in lint_template(synthesized["file"])]
    assert findings == []


def test_an_arm64_worker_gets_its_platform_variables_and_secrets(synthesized: dict) -> None:
    render = synthesized["jobs"]["Render"]
    task = resource(synthesized, render.task_definition)["Properties"]
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    [worker] = task["ContainerDefinitions"]
    assert worker["Environment"] == [{"Name": "LOG_FORMAT", "Value": "json"}]
    secrets = {s["Name"]: s["ValueFrom"] for s in worker["Secrets"]}
    assert secrets["DB_PASSWORD"] == f"{SECRET_ARN}:password::"
    assert "parameter/jobs/token" in json.dumps(secrets["API_TOKEN"])
    # The lease stays in the command (the consumer contract), never in the environment.
    assert "--visibility-timeout" in worker["Command"]
    crawl_task = resource(synthesized, synthesized["jobs"]["Crawl"].task_definition)["Properties"]
    assert "RuntimePlatform" not in crawl_task  # Fargate's default, X86_64
    assert "Environment" not in crawl_task["ContainerDefinitions"][0]


def test_hooks_reach_the_worker_as_its_hooks_option(synthesized: dict) -> None:
    from sqslease.config import ConsumerConfig

    # GIVEN a job declared with hooks=; WHEN synthesized
    [worker] = resource(synthesized, synthesized["jobs"]["Render"].task_definition)["Properties"][
        "ContainerDefinitions"
    ]
    command = worker["Command"]
    # THEN the worker's command names them once, as sqslease parses the setting
    value = command[command.index("--hooks") + 1]
    assert value == "render.hooks:Timing,tracing_setup:ProviderHooks"
    assert ConsumerConfig.from_env({"SQSLEASE_HOOKS": value}).lease.hooks == (
        "render.hooks:Timing",
        "tracing_setup:ProviderHooks",
    )
    [crawl] = resource(synthesized, synthesized["jobs"]["Crawl"].task_definition)["Properties"]["ContainerDefinitions"]
    assert "--hooks" not in crawl["Command"]


def test_the_execution_role_reads_exactly_the_job_s_secrets_and_decrypts_only_with_their_key(
    synthesized: dict,
) -> None:
    render, crawl = synthesized["jobs"]["Render"], synthesized["jobs"]["Crawl"]
    granted = {
        action: statement["Resource"]
        for statement in statements(synthesized, render.task_definition.execution_role)
        for action in actions(statement)
        if action.split(":")[0] in {"secretsmanager", "ssm", "kms"}
    }
    assert granted["secretsmanager:GetSecretValue"] == SECRET_ARN
    assert "parameter/jobs/token" in json.dumps(granted["ssm:GetParameters"])
    assert not any(action.startswith("kms:") for action in granted)  # the key's own policy grants it, below
    key_policy = resource(synthesized, synthesized["key"])["Properties"]["KeyPolicy"]["Statement"]
    execution_role_id = synthesized["stack"].get_logical_id(render.task_definition.execution_role.node.default_child)
    [decrypt] = [
        s for s in key_policy if s["Principal"] != {"AWS": {"Fn::Join": key_policy[0]["Principal"]["AWS"]["Fn::Join"]}}
    ]
    assert decrypt["Action"] == "kms:Decrypt"
    assert decrypt["Principal"] == {"AWS": {"Fn::GetAtt": [execution_role_id, "Arn"]}}
    assert decrypt["Condition"] == {"StringEquals": {"kms:ViaService": "secretsmanager.us-east-1.amazonaws.com"}}
    # A job without secrets reads none, and decrypts nothing.
    crawl_actions = [a for s in statements(synthesized, crawl.task_definition.execution_role) for a in actions(s)]
    assert sorted(crawl_actions) == ["logs:CreateLogStream", "logs:PutLogEvents"]


def test_fargate_spot_is_the_service_s_strategy_and_the_cluster_s_provider(synthesized: dict) -> None:
    crawl = synthesized["jobs"]["Crawl"]
    service = resource(synthesized, crawl.service)["Properties"]
    assert service["CapacityProviderStrategy"] == [
        {"CapacityProvider": "FARGATE", "Base": 1, "Weight": 1},
        {"CapacityProvider": "FARGATE_SPOT", "Weight": 3},
    ]
    assert "LaunchType" not in service  # a strategy replaces the launch type
    cluster_id = synthesized["stack"].get_logical_id(crawl.cluster.node.default_child)
    [association] = [
        r["Properties"]
        for r in synthesized["template"]["Resources"].values()
        if r["Type"] == "AWS::ECS::ClusterCapacityProviderAssociations"
    ]
    assert association["Cluster"] == {"Ref": cluster_id}
    assert sorted(association["CapacityProviders"]) == ["FARGATE", "FARGATE_SPOT"]
    render_service = resource(synthesized, synthesized["jobs"]["Render"].service)["Properties"]
    assert render_service["LaunchType"] == "FARGATE" and "CapacityProviderStrategy" not in render_service


def test_arm64_tasks_run_on_fargate_spot_on_the_platform_version_given(synthesized: dict) -> None:
    # GIVEN an ARM64 job placing its tasks on FARGATE_SPOT, platform 1.4.0 pinned; WHEN synthesized
    encode = synthesized["jobs"]["Encode"]
    service = resource(synthesized, encode.service)["Properties"]
    task = resource(synthesized, encode.task_definition)["Properties"]
    # THEN Spot is its strategy, ARM64 its task's platform, 1.4.0 its service's platform version
    assert service["CapacityProviderStrategy"] == [{"CapacityProvider": "FARGATE_SPOT", "Weight": 1}]
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert service["PlatformVersion"] == "1.4.0"
    # and a job that pins none leaves the version to ECS (LATEST: 1.4.0 for Linux)
    crawl = resource(synthesized, synthesized["jobs"]["Crawl"].service)["Properties"]
    assert "PlatformVersion" not in crawl


def test_arm64_on_fargate_spot_without_a_pinned_platform_version_is_accepted() -> None:
    stack = new_stack()
    job = EcsJob(
        stack,
        "Job",
        handler="h:handle",
        processing_p99=Duration.seconds(5),
        cpu_architecture=ecs.CpuArchitecture.ARM64,
        capacity_provider_strategies=[spot(provider="FARGATE", base=1), spot(weight=3)],
    )
    assert job.service_plan.architecture == "ARM64" and job.service_plan.fargate_spot


def test_the_tasks_run_in_the_vpc_subnets_and_groups_given(synthesized: dict) -> None:
    render, crawl = synthesized["jobs"]["Render"], synthesized["jobs"]["Crawl"]
    stack = synthesized["stack"]
    vpc = render.service_plan.vpc
    assert vpc is not None
    private = [{"Ref": stack.get_logical_id(s.node.default_child)} for s in vpc.private_subnets]
    awsvpc = resource(synthesized, render.service)["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert awsvpc["Subnets"] == private and awsvpc["AssignPublicIp"] == "DISABLED"
    group = stack.node.find_child("Workers")
    assert awsvpc["SecurityGroups"] == [{"Fn::GetAtt": [stack.get_logical_id(group.node.default_child), "GroupId"]}]
    # Both jobs share one cluster in that VPC, with Container Insights.
    assert render.cluster is crawl.cluster or render.cluster.node.path == crawl.cluster.node.path
    cluster = resource(synthesized, render.cluster)["Properties"]
    assert cluster["ClusterSettings"] == [{"Name": "containerInsights", "Value": "enabled"}]
    assert not any(
        r["Type"] == "AWS::EC2::VPC" and k.startswith("JobQueuesVpc")
        for k, r in synthesized["template"]["Resources"].items()
    )


def test_ecs_exec_and_tag_propagation(synthesized: dict) -> None:
    render, crawl = synthesized["jobs"]["Render"], synthesized["jobs"]["Crawl"]
    service = resource(synthesized, render.service)["Properties"]
    assert service["EnableExecuteCommand"] is True and service["PropagateTags"] == "SERVICE"
    crawl_service = resource(synthesized, crawl.service)["Properties"]
    assert "EnableExecuteCommand" not in crawl_service and "PropagateTags" not in crawl_service
    by_action = {
        a: s["Resource"] for s in statements(synthesized, render.task_definition.task_role) for a in actions(s)
    }
    assert all(by_action[f"ssmmessages:{a}"] == "*" for a in ("CreateControlChannel", "OpenDataChannel"))
    log_group_id = synthesized["stack"].get_logical_id(render.node.find_child("Logs").node.default_child)
    # A session's log goes to the worker's own log group (DEFAULT logging): no write to any other.
    assert by_action["logs:PutLogEvents"] == {"Fn::GetAtt": [log_group_id, "Arn"]}
    crawl_actions = {a for s in statements(synthesized, crawl.task_definition.task_role) for a in actions(s)}
    assert not any(a.startswith(("ssmmessages:", "logs:")) for a in crawl_actions)


def test_the_default_image_of_an_arm64_job_is_built_for_arm64(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "Dockerfile").write_text(f"FROM {REGISTRY_IMAGE}\n")
    monkeypatch.chdir(tmp_path)
    app = cdk.App(outdir=str(tmp_path / "cdk.out"))  # no jobqueues:image: the image is built
    stack = JobsStack(app, "Jobs", env=ENV)
    EcsJob(
        stack,
        "Render",
        handler="render:handle",
        processing_p99=Duration.seconds(5),
        image_directory="worker",
        cpu_architecture=ecs.CpuArchitecture.ARM64,
    )
    app.synth()
    assets = json.loads((tmp_path / "cdk.out" / "Jobs.assets.json").read_text())
    [image] = assets["dockerImages"].values()
    assert image["source"]["platform"] == "linux/arm64"


# --- bad input ---------------------------------------------------------------------------------------------------
def ecs_job(**props: Any) -> None:
    stack = new_stack()
    vpc = own_vpc(stack)
    resolved = {k: (v(stack, vpc) if callable(v) else v) for k, v in props.items()}
    EcsJob(stack, "Job", handler="media.transcode:handle", processing_p99=Duration.seconds(5), **resolved)


def spot(
    weight: int | None = 1, base: int | None = None, provider: str = "FARGATE_SPOT"
) -> ecs.CapacityProviderStrategy:
    return ecs.CapacityProviderStrategy(capacity_provider=provider, weight=weight, base=base)


def parameter(stack: cdk.Stack) -> ecs.Secret:
    return ecs.Secret.from_ssm_parameter(ssm.StringParameter.from_string_parameter_name(stack, "P", "/p"))


def own_cluster(stack: cdk.Stack, vpc: ec2.Vpc) -> ecs.Cluster:
    return ecs.Cluster(stack, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)


BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"environment": {"SQSLEASE_VISIBILITY_TIMEOUT": "60"}}, "environment['SQSLEASE_VISIBILITY_TIMEOUT'] collides"),
    ({"environment": {"ECS_AGENT_URI": "http://x"}}, "ECS_AGENT_URI is set by ECS"),
    ({"environment": {"PORT": 8080}}, "environment['PORT']=8080 is an int, not a str"),
    ({"environment": ["A=1"]}, "environment=['A=1'] is a list, not a mapping"),
    ({"secrets": {"DB": "arn:aws:secretsmanager:us-east-1:1:secret:db"}}, "secrets['DB']='arn:aws:secretsmanager"),
    ({"secrets": lambda s, v: {"SQSLEASE_HANDLER": parameter(s)}}, "secrets['SQSLEASE_HANDLER'] collides"),
    (
        {
            "environment": {"TOKEN": "x"},
            "secrets": lambda s, v: {"TOKEN": parameter(s)},
        },
        "'TOKEN' is in both environment and secrets",
    ),
    ({"capacity_provider_strategies": []}, "capacity_provider_strategies=[] names no capacity provider"),
    ({"capacity_provider_strategies": [spot(provider="EC2_SPOT")]}, "capacity_provider='EC2_SPOT' is not a Fargate"),
    (
        {"capacity_provider_strategies": [spot(weight=1001)]},
        "FARGATE_SPOT weight=1001 is out of range: AWS takes 0-1,000",
    ),
    ({"capacity_provider_strategies": [spot(base=-1)]}, "FARGATE_SPOT base=-1 is out of range"),
    ({"capacity_provider_strategies": [spot(weight=None)]}, "every weight is 0 (a weight left out is 0)"),
    ({"capacity_provider_strategies": [spot(base=1), spot(base=1, provider="FARGATE")]}, "both have a base"),
    ({"capacity_provider_strategies": [spot(), spot()]}, "names FARGATE_SPOT 2 times"),
    (
        {"capacity_provider_strategies": [{"capacity_provider": "FARGATE_SPOT"}]},
        "is a dict, not an aws_cdk.aws_ecs.CapacityProviderStrategy",
    ),
    (
        {
            "capacity_provider_strategies": [spot()],
            "cpu_architecture": ecs.CpuArchitecture.ARM64,
            "platform_version": ecs.FargatePlatformVersion.VERSION1_3,
        },
        "platform_version=ecs.FargatePlatformVersion.VERSION1_3 pins Fargate platform 1.3.0, and FARGATE_SPOT runs "
        "ARM64 Linux tasks on platform 1.4.0 or later: pass platform_version=ecs.FargatePlatformVersion.VERSION1_4, "
        "or leave it out (LATEST, 1.4.0 for Linux)",
    ),
    (
        {"capacity_provider_strategies": [spot()], "platform_version": ecs.FargatePlatformVersion.VERSION1_2},
        "platform_version=ecs.FargatePlatformVersion.VERSION1_2 pins Fargate platform 1.2.0, and FARGATE_SPOT runs "
        "X86_64 Linux tasks on platform 1.3.0 or later: pass platform_version=ecs.FargatePlatformVersion.VERSION1_3",
    ),
    (
        {"platform_version": "1.4.0"},
        "platform_version='1.4.0' is a str, not an aws_cdk.aws_ecs.FargatePlatformVersion member: pass e.g. "
        "ecs.FargatePlatformVersion.VERSION1_4",
    ),
    (
        {"environment": {"RENDER QUALITY": "high"}},
        "environment['RENDER QUALITY'] is not a variable name ECS passes as written: it contains whitespace, which "
        "ECS's environment files refuse in a name (Docker's env-file format) and no shell can name; a trailing "
        "space from a paste is invisible in the console; rename it, e.g. 'RENDER_QUALITY'",
    ),
    (
        {"environment": {"TOKEN ": "x"}},
        "environment['TOKEN '] is not a variable name ECS passes as written: it contains whitespace, which ECS's "
        "environment files refuse in a name (Docker's env-file format) and no shell can name; a trailing space from a "
        "paste is invisible in the console; rename it, e.g. 'TOKEN'",
    ),
    (
        {"environment": {"  ": "x"}},
        "environment['  '] is not a variable name ECS passes as written: it is blank, which ECS refuses "
        "(RegisterTaskDefinition: 'Environment variable name cannot be null or blank'); rename it, e.g. 'MY_SETTING'",
    ),
    ({"environment": {"": "x"}}, "environment[''] is not a variable name ECS passes as written: it is blank"),
    (
        {"environment": {"A=B": "x"}},
        "environment['A=B'] is not a variable name ECS passes as written: the container gets NAME=VALUE, split at "
        "the first '=', so the worker would see variable 'A' instead; rename it, e.g. 'A_B'",
    ),
    (
        {"secrets": lambda s, v: {"DB PASSWORD": parameter(s)}},
        "secrets['DB PASSWORD'] is not a variable name ECS passes as written: it contains whitespace",
    ),
    (
        {"cpu_architecture": "ARM64"},
        "cpu_architecture='ARM64' is a str, not an aws_cdk.aws_ecs.CpuArchitecture: pass ecs.CpuArchitecture.ARM64",
    ),
    ({"cpu_architecture": ecs.CpuArchitecture.of("RISCV")}, "cpu_architecture='RISCV' is not one Fargate runs"),
    (
        {"cluster": own_cluster, "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)},
        "is given without vpc: a subnet selection picks subnets of a VPC; pass vpc=cluster.vpc with cluster=Jobs/Cl",
    ),
    (
        {"cluster": own_cluster, "vpc": lambda s, v: ec2.Vpc(s, "Other", max_azs=2)},
        "vpc=Jobs/Other is not the VPC of cluster=Jobs/Cluster (Jobs/Vpc)",
    ),
    (
        {
            "vpc": lambda s, v: v,
            "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            "assign_public_ip": True,
        },
        "assign_public_ip=True with vpc_subnets=SubnetSelection(subnet_type=<SubnetType.PRIVATE_WITH_EGRESS",
    ),
    ({"assign_public_ip": "yes"}, "assign_public_ip='yes' is a str, not a bool"),
    ({"vpc": "vpc-123"}, "vpc='vpc-123' is a str, not a construct with vpc_id"),
    ({"security_groups": ["sg-123"]}, "security_groups[0]='sg-123' is a str, not a construct with security_group_id"),
    ({"enable_execute_command": 1}, "enable_execute_command=1 is an int, not a bool"),
    ({"propagate_tags": "SERVICE"}, "propagate_tags='SERVICE' is a str, not an aws_cdk.aws_ecs.PropagatedTagSource"),
    ({"hooks": "render.hooks:Timing"}, "hooks='render.hooks:Timing' is a str, not a list"),
    (
        {"hooks": ["render.hooks:Timing,other:Hooks"]},
        "hooks[0]='render.hooks:Timing,other:Hooks' is not an import path",
    ),
    ({"hooks": [3]}, "hooks[0]=3 is an int, not a str"),
    (
        {"environment": {"SQSLEASE_HOOKS": "render.hooks:Timing"}},
        "SQSLEASE_HOOKS is the job's hooks= prop: pass hooks=['package.module:name', ...] instead",
    ),
    (
        {
            "vpc": lambda s, v: v,
            "security_groups": lambda s, v: [ec2.SecurityGroup(s, "OtherSg", vpc=ec2.Vpc(s, "Other", max_azs=2))],
        },
        "security_groups[0] (Jobs/OtherSg) is in VPC Jobs/Other, not in vpc=Jobs/Vpc: the consumer runs in one VPC, "
        "and AWS refuses a security group of another; create the group in it",
    ),
    (
        {
            "cluster": own_cluster,
            "security_groups": lambda s, v: [ec2.SecurityGroup(s, "OtherSg", vpc=ec2.Vpc(s, "Other", max_azs=2))],
        },
        "security_groups[0] (Jobs/OtherSg) is in VPC Jobs/Other, not in vpc=Jobs/Vpc",
    ),
    (
        {
            "vpc": lambda s, v: v,
            "vpc_subnets": lambda s, v: ec2.SubnetSelection(subnets=ec2.Vpc(s, "Other", max_azs=2).private_subnets),
        },
        "vpc_subnets.subnets[0] (Jobs/Other/PrivateSubnet1) is in VPC Jobs/Other, not in vpc=Jobs/Vpc",
    ),
]


@pytest.mark.parametrize(("props", "message"), BAD_OPTIONS, ids=[m[:48] for _, m in BAD_OPTIONS])
def test_bad_options_fail_at_synth_naming_the_prop_the_value_and_the_fix(props: dict, message: str) -> None:
    with pytest.raises(JobQueueError) as raised:
        ecs_job(**props)
    assert str(raised.value).startswith("EcsJob Jobs/Job cannot be deployed")
    assert message in str(raised.value)


def test_every_bad_option_and_the_queue_s_errors_come_in_one_error() -> None:
    with pytest.raises(JobQueueError) as raised:
        ecs_job(
            max_receive_count=0,
            capacity_provider_strategies=[spot(weight=2000)],
            environment={"SQSLEASE_HEARTBEAT": "false"},
        )
    message = str(raised.value)
    assert all(part in message for part in ("max_receive_count", "weight=2000", "SQSLEASE_HEARTBEAT"))


def test_a_public_ip_in_public_subnets_and_arm64_on_fargate_are_accepted() -> None:
    stack = new_stack()
    vpc = own_vpc(stack)
    job = EcsJob(
        stack,
        "Job",
        handler="h:handle",
        processing_p99=Duration.seconds(5),
        vpc=vpc,
        assign_public_ip=True,
        cpu_architecture=ecs.CpuArchitecture.ARM64,
        capacity_provider_strategies=[spot(provider="FARGATE"), spot(weight=0)],
    )
    template = Template.from_stack(stack).to_json()
    [service] = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::ECS::Service"]
    awsvpc = service["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert awsvpc["AssignPublicIp"] == "ENABLED"
    assert job.service_plan.architecture == "ARM64"
    assert awsvpc["Subnets"] == [{"Ref": stack.get_logical_id(s.node.default_child)} for s in vpc.public_subnets]
