"""LambdaJob's deployment options: architecture, VPC, reserved concurrency, tracing, layers of your own, and the
event source's filters, metrics and provisioned pollers; in the template, cdk-nag and cfn-lint clean, and refused
at synth with the fix when Lambda would refuse them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk.assertions import Annotations, Match
from cdk_helpers import ENV, lint_template

from jobqueues import JobQueueError, LambdaJob, deploy_time_availability_zones
from jobqueues.lambda_options import VPC_ACCESS_ACTIONS

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = str(ROOT / "lambda_src" / "handlers")
LAYER_DIR = str(ROOT / "tests" / "emulator_apps" / "layer")
KIND_IS_THUMB = {"body": {"kind": lambda_.FilterRule.is_equal("thumb")}}


class JobsStack(cdk.Stack):
    """A stack whose VPCs take the region's first two zones at deploy time: no lookup, no zone names (W3010)."""

    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def job(stack: cdk.Stack, job_type: str = "Job", **props: Any) -> LambdaJob:
    defaults = {"code": lambda_.Code.from_asset(HANDLERS), "handler": "thumbs.handle", "timeout": Duration.seconds(30)}
    return LambdaJob(stack, job_type, **{**defaults, **props})


def resources(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def own_layer(stack: cdk.Stack, name: str = "Deps", runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_14) -> Any:
    return lambda_.LayerVersion(stack, name, code=lambda_.Code.from_asset(LAYER_DIR), compatible_runtimes=[runtime])


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A VPC, traced ARM64 job with a layer of its own, filters and metrics, and a provisioned-mode job: nag on."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = JobsStack(app, "Jobs", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1, flow_logs={"All": ec2.FlowLogOptions()})
    group = ec2.SecurityGroup(stack, "Sg", vpc=vpc, description="thumbnail workers")
    thumbs = job(
        stack,
        "Thumbnails",
        architecture=lambda_.Architecture.ARM_64,
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        security_groups=[group],
        reserved_concurrent_executions=20,
        max_concurrency=10,
        tracing=lambda_.Tracing.ACTIVE,
        layers=[own_layer(stack)],
        filters=[lambda_.FilterCriteria.filter(KIND_IS_THUMB)],
        metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
        hooks=["thumbs_hooks:Timing", "tracing.setup:ProviderHooks"],
    )
    polled = job(
        stack,
        "Polled",
        provisioned_poller_config=lambda_.ProvisionedPollerConfig(minimum_pollers=2, maximum_pollers=20),
    )
    # The struct of aws_lambda_event_sources, the module SqsEventSource comes from, of the same shape.
    sourced = job(
        stack,
        "Sourced",
        provisioned_poller_config=event_sources.ProvisionedPollerConfig(minimum_pollers=3, maximum_pollers=30),
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "assembly": assembly, "json": assembly.get_stack_by_name("Jobs").template,
            "jobs": {"Thumbnails": thumbs, "Polled": polled, "Sourced": sourced}}  # fmt: skip


def function_of(synthesized: dict, name: str) -> dict:
    stack, function = synthesized["stack"], synthesized["jobs"][name].function
    return synthesized["json"]["Resources"][stack.get_logical_id(function.node.default_child)]["Properties"]


def mapping_of(synthesized: dict, name: str) -> dict:
    function_id = synthesized["stack"].get_logical_id(synthesized["jobs"][name].function.node.default_child)
    (mapping,) = [
        m["Properties"]
        for m in resources(synthesized["json"], "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    return mapping


def test_the_function_gets_its_architecture_reserved_concurrency_tracing_and_vpc(synthesized: dict) -> None:
    function = function_of(synthesized, "Thumbnails")
    assert function["Architectures"] == ["arm64"]
    assert function["ReservedConcurrentExecutions"] == 20
    assert function["TracingConfig"] == {"Mode": "Active"}
    stack = synthesized["stack"]
    private = [s for s in stack.node.find_child("Vpc").private_subnets]
    assert function["VpcConfig"]["SubnetIds"] == [{"Ref": stack.get_logical_id(s.node.default_child)} for s in private]
    (group_id,) = function["VpcConfig"]["SecurityGroupIds"]
    assert group_id == {"Fn::GetAtt": [stack.get_logical_id(stack.node.find_child("Sg").node.default_child), "GroupId"]}
    # Unset, the options leave the template as it was.
    plain = function_of(synthesized, "Polled")
    assert not {"Architectures", "ReservedConcurrentExecutions", "TracingConfig", "VpcConfig"} & set(plain)


def test_hooks_reach_the_function_as_the_setting_sqslease_reads(synthesized: dict) -> None:
    from sqslease.config import ConsumerConfig

    # GIVEN a job declared with hooks=; WHEN synthesized
    environment = function_of(synthesized, "Thumbnails")["Environment"]["Variables"]
    # THEN the function gets SQSLEASE_HOOKS, which sqslease parses back into the same paths
    assert environment["SQSLEASE_HOOKS"] == "thumbs_hooks:Timing,tracing.setup:ProviderHooks"
    plain = {k: v for k, v in environment.items() if isinstance(v, str)}
    assert ConsumerConfig.from_env(plain).lease.hooks == ("thumbs_hooks:Timing", "tracing.setup:ProviderHooks")
    # and a job without hooks gets no variable for them
    assert "SQSLEASE_HOOKS" not in function_of(synthesized, "Polled")["Environment"]["Variables"]


def test_a_vpc_function_s_role_manages_its_interfaces_inline_before_the_function_exists(synthesized: dict) -> None:
    function = function_of(synthesized, "Thumbnails")
    role_id = function["Role"]["Fn::GetAtt"][0]
    role = synthesized["json"]["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in role  # no AWSLambdaVPCAccessExecutionRole (its logs:* on *): cdk-nag IAM4
    (policy_id, policy), *_ = [
        (k, p) for k, p in resources(synthesized["json"], "AWS::IAM::Policy").items()
        if p["Properties"]["Roles"] == [{"Ref": role_id}]
    ]  # fmt: skip
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert {"Action": list(VPC_ACCESS_ACTIONS), "Effect": "Allow", "Resource": "*"} in statements
    assert any(s["Action"] == ["xray:PutTraceSegments", "xray:PutTelemetryRecords"] for s in statements)
    function_id = synthesized["stack"].get_logical_id(synthesized["jobs"]["Thumbnails"].function.node.default_child)
    assert policy_id in synthesized["json"]["Resources"][function_id]["DependsOn"]  # Lambda checks ENI rights


def test_layers_of_your_own_come_before_the_sqslease_layer_which_serves_both_architectures(synthesized: dict) -> None:
    layers = resources(synthesized["json"], "AWS::Lambda::LayerVersion")
    (sqslease_id,) = [k for k in layers if k.startswith("SqsleaseLayer")]
    (deps_id,) = [k for k in layers if k.startswith("Deps")]
    assert function_of(synthesized, "Thumbnails")["Layers"] == [{"Ref": deps_id}, {"Ref": sqslease_id}]
    assert function_of(synthesized, "Polled")["Layers"] == [{"Ref": sqslease_id}]
    assert layers[sqslease_id]["Properties"]["CompatibleArchitectures"] == ["x86_64", "arm64"]


def test_the_event_source_gets_filters_metrics_and_provisioned_pollers(synthesized: dict) -> None:
    mapping = mapping_of(synthesized, "Thumbnails")
    (only,) = mapping["FilterCriteria"]["Filters"]
    assert json.loads(only["Pattern"]) == {"body": {"kind": ["thumb"]}}
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": 10}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    polled = mapping_of(synthesized, "Polled")
    assert polled["ProvisionedPollerConfig"] == {"MinimumPollers": 2, "MaximumPollers": 20}
    assert "ScalingConfig" not in polled and "FilterCriteria" not in polled


def test_either_provisioned_poller_config_struct_is_taken(synthesized: dict) -> None:
    # GIVEN aws_lambda_event_sources.ProvisionedPollerConfig (not aws_lambda's); WHEN synthesized
    # THEN the event source gets its pollers as it would aws_lambda's
    assert mapping_of(synthesized, "Sourced")["ProvisionedPollerConfig"] == {"MinimumPollers": 3, "MaximumPollers": 30}


def test_the_template_is_cfn_lint_clean(synthesized: dict) -> None:
    template_file = Path(synthesized["assembly"].directory) / "Jobs.template.json"
    findings = [f"{m.rule.id} {m.message}" for m in lint_template(template_file)]
    assert findings == []


def test_without_the_acknowledgement_cdk_nag_reports_the_wildcards(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a VPC, traced job WHEN its acknowledgement is taken away THEN cdk-nag fails: the clean result is live.
    from cdk_nag import AwsSolutionsChecks

    monkeypatch.setattr("jobqueues.lambda_job.acknowledge_wildcards", lambda role, deployment: None)
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1, flow_logs={"All": ec2.FlowLogOptions()})
    job(stack, vpc=vpc, tracing=lambda_.Tracing.ACTIVE, reserved_concurrent_executions=20, max_concurrency=10)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match=r"AwsSolutions-IAM5"):
        app.synth()


def test_more_filters_than_the_default_quota_is_a_warning() -> None:
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    filters = [lambda_.FilterCriteria.filter({"body": {"kind": [f"k{i}"]}}) for i in range(6)]
    job(stack, filters=filters)
    Annotations.from_stack(stack).has_warning(
        "*", Match.string_like_regexp(r"filters has 6 filters: .* only after a quota increase .*filtersAboveDefault")
    )


def test_reserved_concurrency_with_provisioned_pollers_is_a_warning() -> None:
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    job(stack, reserved_concurrent_executions=50, provisioned_poller_config=lambda_.ProvisionedPollerConfig())
    warning = Match.string_like_regexp("can invoke more at once than the reserved concurrency")
    # On the function, whose options these are, not on its queue.
    Annotations.from_stack(stack).has_warning("/Jobs/Job/Function", warning)
    Annotations.from_stack(stack).has_no_warning("/Jobs/Job/Queue", warning)


def _bad(stack: cdk.Stack) -> dict[str, Any]:
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    other_vpc = ec2.Vpc(stack, "Other", max_azs=2, nat_gateways=1)
    pollers = lambda_.ProvisionedPollerConfig
    return {
        "architecture": (
            {"architecture": "arm64"},
            "architecture='arm64' is a str, not an aws_cdk.aws_lambda.Architecture",
        ),
        "vpc": ({"vpc": "vpc-123"}, "vpc='vpc-123' is a str, not a construct with vpc_id"),
        "public subnets": (
            {"vpc": vpc, "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC)},
            "vpc_subnets selects public subnets",
        ),
        "subnets without vpc": (
            {"vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)},
            "vpc_subnets is given without vpc",
        ),
        "groups not a list": ({"security_groups": "sg-1"}, "security_groups='sg-1' is not a list"),
        "reserved 0": ({"reserved_concurrent_executions": 0}, "reserved_concurrent_executions 0 is below 2"),
        "reserved str": ({"reserved_concurrent_executions": "5"}, "reserved_concurrent_executions='5' is a str"),
        "reserved below max": (
            {"reserved_concurrent_executions": 5, "max_concurrency": 10},
            "max_concurrency 10 is above reserved_concurrent_executions 5: the invocations above it are throttled; "
            "lower max_concurrency to at most 5",
        ),
        "reserved alone": (
            {"reserved_concurrent_executions": 40},
            "reserved_concurrent_executions 40 without max_concurrency: the event source invokes up to 1,250 at once "
            "and the invocations above 40 are throttled; set max_concurrency=40",
        ),
        "tracing": ({"tracing": True}, "tracing=True is a bool, not an aws_cdk.aws_lambda.Tracing"),
        "sqslease variable": (
            {"environment": {"SQSLEASE_VISIBILITY_TIMEOUT": "5"}},
            "environment['SQSLEASE_VISIBILITY_TIMEOUT'] collides with a variable the function reads: SQSLEASE_* "
            "variables are sqslease's settings",
        ),
        "six layers": (
            {"layers": [own_layer(stack, f"L{i}") for i in range(5)]},
            "layers has 5 layers: a function takes at most 5, and the sqslease layer is one of them; pass at most 4",
        ),
        "layer runtime": (
            {"layers": [own_layer(stack, "Old", lambda_.Runtime.PYTHON_3_12)]},
            "is compatible with python3.12, not python3.14",
        ),
        "filter not json": ({"filters": [{"pattern": "kind=thumb"}]}, "filters[0] pattern 'kind=thumb' is not a JSON"),
        "filter key": (
            {"filters": [lambda_.FilterCriteria.filter({"attributes": {"SenderId": ["x"]}})]},
            "filters[0] filters on attributes: an SQS event source filters on the body key only",
        ),
        "filter shape": ({"filters": [{"Pattern": "{}"}]}, "filters[0]={'Pattern': '{}'} has no 'pattern' string"),
        "eleven filters": (
            {"filters": [lambda_.FilterCriteria.filter(KIND_IS_THUMB)] * 11},
            "filters has 11 filters: an event source takes at most 10",
        ),
        "metrics": (
            {"metrics_config": lambda_.MetricsConfig(metrics=[lambda_.MetricType.KAFKA_METRICS])},
            "metrics_config has MetricType.KAFKA_METRICS, which only Kafka event sources produce",
        ),
        "min pollers": (
            {"provisioned_poller_config": pollers(minimum_pollers=1)},
            "provisioned_poller_config.minimum_pollers must be between 2 and 200 for an SQS event source (got 1)",
        ),
        "max pollers": (
            {"provisioned_poller_config": pollers(maximum_pollers=2001)},
            "provisioned_poller_config.maximum_pollers must be between 2 and 2,000 for an SQS event source (got 2001)",
        ),
        "min above max": (
            {"provisioned_poller_config": pollers(minimum_pollers=10, maximum_pollers=5)},
            "provisioned_poller_config.minimum_pollers 10 is above maximum_pollers 5",
        ),
        "pollers and max concurrency": (
            {"provisioned_poller_config": pollers(minimum_pollers=2), "max_concurrency": 10},
            "max_concurrency 10 and provisioned_poller_config cannot both be set",
        ),
        "poller group": (
            {"provisioned_poller_config": pollers(poller_group_name="shared")},
            "poller_group_name='shared': poller groups are for Kafka event sources only",
        ),
        "hooks not a list": ({"hooks": "thumbs_hooks:Timing"}, "hooks='thumbs_hooks:Timing' is a str, not a list"),
        "hook not a path": (
            {"hooks": ["thumbs_hooks:Timing", "timing hooks"]},
            "hooks[1]='timing hooks' is not an import path: name a Hooks object or class as 'package.module:name'",
        ),
        "hooks as a variable": (
            {"environment": {"SQSLEASE_HOOKS": "thumbs_hooks:Timing"}},
            "SQSLEASE_HOOKS is the job's hooks= prop: pass hooks=['package.module:name', ...] instead",
        ),
        "variable name": (
            {"environment": {"1BAD-NAME": "x"}},
            "environment['1BAD-NAME'] is not a name Lambda takes: a letter, then letters, digits or '_'",
        ),
        "variable Lambda sets": (
            {"environment": {"AWS_REGION": "eu-west-1"}},
            "environment['AWS_REGION']: Lambda sets AWS_REGION itself and refuses it in a function's environment",
        ),
        "filter with an empty body": (
            {"filters": [lambda_.FilterCriteria.filter({"body": {}})]},
            "filters[0] pattern '{\"body\":{}}' has an empty 'body' object (Lambda refuses it",
        ),
        "group of another vpc": (
            {"vpc": vpc, "security_groups": [ec2.SecurityGroup(stack, "OtherSg", vpc=other_vpc)]},
            "security_groups[0] (Jobs/OtherSg) is in VPC Jobs/Other, not in vpc=Jobs/Vpc",
        ),
        "subnets of another vpc": (
            {"vpc": vpc, "vpc_subnets": ec2.SubnetSelection(subnets=other_vpc.private_subnets)},
            "vpc_subnets.subnets[0] (Jobs/Other/PrivateSubnet1) is in VPC Jobs/Other, not in vpc=Jobs/Vpc",
        ),
        "pollers float": (
            {"provisioned_poller_config": pollers(minimum_pollers=2.5)},
            "provisioned_poller_config.minimum_pollers=2.5 is a float, not a whole number",
        ),
        "a layer twice": (
            {"layers": [own_layer(stack, "Twice")] * 2},
            "layers[1] repeats layers[0]: Lambda takes each layer once (a function's Layers are unique); remove the "
            "repeat",
        ),
        "a metric twice": (
            {"metrics_config": lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT] * 2)},
            "metrics_config names MetricType.EVENT_COUNT 2 times: Lambda takes each metric once; pass "
            "lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])",
        ),
        "pollers a dict": (
            {"provisioned_poller_config": {"minimum_pollers": 2}},
            "provisioned_poller_config={'minimum_pollers': 2} is a dict, not an aws_cdk.aws_lambda."
            "ProvisionedPollerConfig or an aws_cdk.aws_lambda_event_sources.ProvisionedPollerConfig: pass "
            "lambda_.ProvisionedPollerConfig(minimum_pollers=2, maximum_pollers=20)",
        ),
        "event sources' pollers out of range": (
            {"provisioned_poller_config": event_sources.ProvisionedPollerConfig(maximum_pollers=2001)},
            "provisioned_poller_config.maximum_pollers must be between 2 and 2,000 for an SQS event source (got 2001)",
        ),
    }


BAD = list(_bad(cdk.Stack(cdk.App(), "Cases", env=ENV)))


@pytest.mark.parametrize("case", BAD)
def test_bad_options_fail_at_synth_naming_the_prop_the_value_and_the_fix(case: str) -> None:
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)
    props, message = _bad(stack)[case]
    with pytest.raises(JobQueueError) as raised:
        job(stack, **props)
    assert str(raised.value).startswith("LambdaJob Jobs/Job cannot be deployed")
    assert message in str(raised.value)


def test_no_layers_and_no_metrics_are_valid_and_mean_none(tmp_path: Path) -> None:
    # GIVEN layers=[] (Lambda takes 0-5 layers) and MetricsConfig(metrics=[]) (0-3 metrics, "Minimum: 0")
    app = cdk.App(outdir=str(tmp_path))
    stack = JobsStack(app, "Jobs", env=ENV)
    empty = job(stack, "Empty", layers=[], metrics_config=lambda_.MetricsConfig(metrics=[]))
    plain = job(stack, "Plain")
    template = app.synth().get_stack_by_name("Jobs").template

    def properties(construct: Any) -> dict[str, Any]:
        resource = template["Resources"][stack.get_logical_id(construct.node.default_child)]
        return dict(resource["Properties"])

    # WHEN synthesized THEN the function has only the sqslease layer, as without the prop
    assert properties(empty.function)["Layers"] == properties(plain.function)["Layers"]
    assert len(properties(empty.function)["Layers"]) == 1
    # and the event source asks for no metric, explicitly: an update from [EventCount] turns them off
    (mapping,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and r["Properties"]["FunctionName"] == {"Ref": stack.get_logical_id(empty.function.node.default_child)}
    ]
    assert mapping["MetricsConfig"] == {"Metrics": []}
    findings = lint_template(tmp_path / "Jobs.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


def test_a_group_or_subnet_whose_vpc_is_unknown_at_synth_is_not_guessed() -> None:
    # GIVEN a VPC of the stack, and a group and subnet imported by id (their VPC is not in the app)
    stack = JobsStack(cdk.App(), "Jobs", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    group = ec2.SecurityGroup.from_security_group_id(stack, "Shared", "sg-0123456789abcdef0")
    subnet = ec2.Subnet.from_subnet_attributes(stack, "Sub", subnet_id="subnet-0123", availability_zone="us-east-1a")
    # WHEN a job takes them; THEN it is built: nothing says they are of another VPC
    built = job(stack, vpc=vpc, security_groups=[group], vpc_subnets=ec2.SubnetSelection(subnets=[subnet]))
    assert [g.security_group_id for g in built.function.connections.security_groups] == ["sg-0123456789abcdef0"]


def test_a_group_made_in_another_stack_with_the_job_s_vpc_is_accepted() -> None:
    # GIVEN a VPC in a network stack, and a group made with it in the jobs' stack (a cross-stack reference)
    app = cdk.App()
    network = JobsStack(app, "Network", env=ENV)
    vpc = ec2.Vpc(network, "Vpc", max_azs=2, nat_gateways=1)
    jobs = JobsStack(app, "Jobs", env=ENV)
    group = ec2.SecurityGroup(jobs, "Sg", vpc=vpc)
    # WHEN a job of the jobs' stack takes both; THEN it is built (the group is of the job's VPC)
    built = job(jobs, vpc=vpc, security_groups=[group])
    assert len(built.function.connections.security_groups) == 1
