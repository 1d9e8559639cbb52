"""LambdaJob and EcsJob: one declaration gives queue, consumer, sqslease, IAM, scaling, alarms and a dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match, Template
from cdk_helpers import ENV

from jobqueues import EcsJob, JobQueue, JobQueueError, LambdaJob
from sqslease.config import ConsumerConfig
from sqslease.settings import LeaseSettings

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = str(ROOT / "lambda_src" / "handlers")
REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"


def consumer_app() -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE, "aws:cdk:enable-asset-metadata": True})
    return app, cdk.Stack(app, "Jobs", env=ENV)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = cdk.App(
        context={"jobqueues:image": REGISTRY_IMAGE, "aws:cdk:enable-asset-metadata": True},
        outdir=str(tmp_path_factory.mktemp("cdk.out")),
    )
    stack = cdk.Stack(app, "Jobs", env=ENV)
    thumbs = LambdaJob(
        stack,
        "Thumbnails",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        batch_size=10,
        max_batching_window=Duration.seconds(5),
        max_concurrency=50,
    )
    resize = LambdaJob(
        stack,
        "Resize",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(10),
        max_queue_time=Duration.seconds(30),
    )
    transcode = EcsJob(
        stack,
        "VideoTranscode",
        handler="media.transcode:handle",
        processing_p99=Duration.minutes(4),
        max_processing_time=Duration.hours(3),
        concurrency=4,
        max_tasks=20,
    )
    assembly = app.synth()
    return {
        "stack": stack,
        "template": Template.from_stack(stack),
        "json": assembly.get_stack_by_name("Jobs").template,
        "assembly": assembly,
        "jobs": {"Thumbnails": thumbs, "Resize": resize, "VideoTranscode": transcode},
    }


def resources(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def logical_id(stack: cdk.Stack, construct: Any) -> str:
    return stack.get_logical_id(construct.node.default_child)


# --- Lambda job --------------------------------------------------------------------------------------------------
def test_lambda_job_derives_the_vt_from_the_function_timeout(synthesized: dict) -> None:
    template: Template = synthesized["template"]
    template.has_resource_properties("AWS::SQS::Queue", {"QueueName": "Jobs-Thumbnails", "VisibilityTimeout": 185})
    template.has_resource_properties("AWS::SQS::Queue", {"QueueName": "Jobs-Resize", "VisibilityTimeout": 60})


def test_lambda_job_function_runs_sqslease_on_the_latest_runtime_with_the_full_environment(synthesized: dict) -> None:
    stack, job = synthesized["stack"], synthesized["jobs"]["Thumbnails"]
    function = synthesized["json"]["Resources"][logical_id(stack, job.function)]["Properties"]
    assert function["Runtime"] == "python3.14"
    assert function["Handler"] == "sqslease.lambda_entry.handler"
    assert function["Timeout"] == 30
    env = function["Environment"]["Variables"]
    assert env["SQSLEASE_HANDLER"] == "thumbs.handle"
    assert env["SQSLEASE_VISIBILITY_TIMEOUT"] == "185"
    assert env["SQSLEASE_MAX_BATCHING_WINDOW"] == "5"
    assert env["SQSLEASE_HEARTBEAT"] == "false"
    assert env["SQSLEASE_JOB_TYPE"] == "Thumbnails"
    assert env["SQSLEASE_STACK"] == "Jobs"  # on each EMF line: measurements keyed by the deployment
    assert env["SQSLEASE_QUEUE_URL"] == {"Ref": logical_id(stack, job.job_queue.queue)}
    assert env["SQSLEASE_DEAD_LETTER_QUEUE_URL"] == {"Ref": logical_id(stack, job.job_queue.dead_letter_queue)}
    settings = ConsumerConfig.from_env(
        {k: v for k, v in env.items() if isinstance(v, str) and k != "SQSLEASE_HANDLER"}
    ).lease
    assert settings.visibility_timeout == 185 and settings.max_batching_window == 5
    # Its own role (no managed basic-execution policy: cdk-nag IAM4) and an explicit log group with retention.
    role = synthesized["json"]["Resources"][function["Role"]["Fn::GetAtt"][0]]["Properties"]
    assert "ManagedPolicyArns" not in role
    log_group = synthesized["json"]["Resources"][function["LoggingConfig"]["LogGroup"]["Ref"]]["Properties"]
    assert log_group["RetentionInDays"] == 30
    assert not resources(synthesized["json"], "Custom::LogRetention")


def test_lambda_job_function_waits_for_its_role_policy_without_a_redundant_role_dependency(synthesized: dict) -> None:
    # The Role GetAtt orders the function after its role already (cfn-lint W3005); the policy must still come first.
    for function in resources(synthesized["json"], "AWS::Lambda::Function").values():
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        (policy_id,) = [
            policy_id
            for policy_id, policy in resources(synthesized["json"], "AWS::IAM::Policy").items()
            if policy["Properties"]["Roles"] == [{"Ref": role_id}]
        ]
        assert function["DependsOn"] == [policy_id]


def test_lambda_job_event_source_reports_batch_item_failures(synthesized: dict) -> None:
    synthesized["template"].has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "BatchSize": 10,
            "MaximumBatchingWindowInSeconds": 5,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "ScalingConfig": {"MaximumConcurrency": 50},
        },
    )


def test_one_sqslease_layer_per_stack_shared_by_every_lambda_job(synthesized: dict) -> None:
    layers = resources(synthesized["json"], "AWS::Lambda::LayerVersion")
    assert len(layers) == 1
    (layer_id,) = layers
    assert layers[layer_id]["Properties"]["CompatibleRuntimes"] == ["python3.14"]
    functions = resources(synthesized["json"], "AWS::Lambda::Function")
    assert len(functions) == 2
    for function in functions.values():
        assert function["Properties"]["Layers"] == [{"Ref": layer_id}]


def test_the_layer_holds_sqslease_under_python_without_byte_code(synthesized: dict) -> None:
    layer = next(iter(resources(synthesized["json"], "AWS::Lambda::LayerVersion").values()))
    asset_dir = Path(synthesized["assembly"].directory) / layer["Metadata"]["aws:asset:path"]
    files = {p.relative_to(asset_dir).as_posix() for p in asset_dir.rglob("*") if p.is_file()}
    assert (
        "python/sqslease/worker/__init__.py" in files
        and "python/sqslease/worker/__main__.py" in files
        and "python/sqslease/rules.py" in files
    )
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert all(f.startswith("python/sqslease/") for f in files)


def test_the_layer_asset_hash_ignores_byte_code(tmp_path: Path) -> None:
    def layer_hash() -> str:
        app, stack = consumer_app()
        LambdaJob(
            stack, "T", code=lambda_.Code.from_asset(HANDLERS), handler="thumbs.handle", timeout=Duration.seconds(9)
        )
        template = app.synth().get_stack_by_name("Jobs").template
        return next(iter(resources(template, "AWS::Lambda::LayerVersion").values()))["Properties"]["Content"]["S3Key"]

    before = layer_hash()
    stray = ROOT / "lambda_src" / "sqslease" / "__pycache__" / "zz_stray.cpython-311.pyc"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"\0not code")
    try:
        assert layer_hash() == before
    finally:
        stray.unlink()


# --- ECS job -----------------------------------------------------------------------------------------------------
def container(synthesized: dict) -> dict:
    (task,) = resources(synthesized["json"], "AWS::ECS::TaskDefinition").values()
    (definition,) = task["Properties"]["ContainerDefinitions"]
    return definition


def test_ecs_job_runs_the_worker_with_the_declared_settings_as_arguments(synthesized: dict) -> None:
    definition = container(synthesized)
    command = definition["Command"]
    assert command[:7] == [
        "python",
        "-m",
        "sqslease.worker",
        "--handler",
        "media.transcode:handle",
        "--concurrency",
        "4",
    ]
    assert "Environment" not in definition  # cdk-nag ECS2: settings are arguments
    options = dict(zip(command[3::2], command[4::2], strict=True))
    assert options["--visibility-timeout"] == "480"  # 2 x 4 min
    assert "--max-total-lease" not in options  # SQS's 12 h from receipt, the default: not max_processing_time
    assert options["--max-processing-time"] == str(3 * 3600)
    assert options["--heartbeat"] == "true"
    assert options["--shutdown-grace"] == "25"
    assert options["--job-type"] == "VideoTranscode" and options["--stack"] == "Jobs"
    lease_args = [
        part
        for name, value in options.items()
        if name not in ("--handler", "--concurrency", "--queue-url")
        for part in (name, value if isinstance(value, str) else "https://sqs.example/q")
    ]
    settings = ConsumerConfig.from_args(lease_args, environ={}).lease
    assert settings.visibility_timeout == 480 and settings.heartbeat
    # The lease cap counts from the receive (prefetch wait included): it must outlast max_processing_time + VT
    assert settings.max_total_lease == LeaseSettings.max_total_lease >= 10_800 + 480
    assert settings.max_processing_time == 10_800  # a handler still running then has failed (timed_out)
    assert definition["StopTimeout"] == 30  # shutdown grace 25 s + 5 s
    assert definition["LogConfiguration"]["LogDriver"] == "awslogs"
    assert definition["Image"] == REGISTRY_IMAGE


def test_each_stage_s_consumers_name_their_own_stack(tmp_path: Path) -> None:
    # GIVEN one stack deployed by a Dev and a Prod Stage, each with a LambdaJob, an EcsJob and a queue-only job type
    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE}, outdir=str(tmp_path))
    found: dict[str, tuple[dict, list[str], dict[str, str]]] = {}
    for stage_name in ("Dev", "Prod"):
        stack = cdk.Stack(cdk.Stage(app, stage_name, env=ENV), "TeamC")
        refunds = LambdaJob(
            stack,
            "Refunds",
            code=lambda_.Code.from_asset(HANDLERS),
            handler="thumbs.handle",
            timeout=Duration.seconds(3),
        )
        exports = EcsJob(stack, "Exports", handler="media.transcode:handle", processing_p99=Duration.seconds(2))
        emails = JobQueue(stack, "Emails", processing_p99=Duration.seconds(1))
        template = Template.from_stack(stack).to_json()
        function = template["Resources"][stack.get_logical_id(refunds.function.node.default_child)]
        (task,) = resources(template, "AWS::ECS::TaskDefinition").values()
        command = task["Properties"]["ContainerDefinitions"][0]["Command"]
        found[stage_name] = (function["Properties"]["Environment"]["Variables"], command, emails.consumer_environment())
        assert exports.job_queue.job_type == "Exports"
    # THEN every consumer is told the CloudFormation name of its own stack: what its EMF lines carry
    for stage_name, (function_env, command, queue_env) in found.items():
        options = dict(zip(command[3::2], command[4::2], strict=True))
        assert (
            function_env["SQSLEASE_STACK"] == options["--stack"] == queue_env["SQSLEASE_STACK"] == f"{stage_name}-TeamC"
        )


def test_ecs_job_cluster_has_container_insights_and_a_vpc_with_flow_logs(synthesized: dict) -> None:
    template: Template = synthesized["template"]
    template.has_resource_properties(
        "AWS::ECS::Cluster", {"ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}]}
    )
    template.resource_count_is("AWS::EC2::FlowLog", 1)
    subnets = resources(synthesized["json"], "AWS::EC2::Subnet").values()
    # The region's first two zones, chosen by CloudFormation: no zone name in the template (cfn-lint W3010).
    assert {json.dumps(s["Properties"]["AvailabilityZone"]) for s in subnets} == {
        json.dumps({"Fn::Select": [i, {"Fn::GetAZs": ""}]}) for i in (0, 1)
    }
    assert not [t for t in (r["Type"] for r in synthesized["json"]["Resources"].values()) if t.startswith("Custom::")]


def test_ecs_job_scales_on_backlog_per_task_from_zero(synthesized: dict) -> None:
    template: Template = synthesized["template"]
    template.has_resource_properties("AWS::ECS::Service", {"DesiredCount": 0})
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget", {"MinCapacity": 0, "MaxCapacity": 20}
    )
    policies = resources(synthesized["json"], "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    (tracking,) = [p["Properties"] for p in policies if p["Properties"]["PolicyType"] == "TargetTrackingScaling"]
    config = tracking["TargetTrackingScalingPolicyConfiguration"]
    assert config["TargetValue"] == 4  # concurrency
    metrics = {m["Id"]: m for m in config["CustomizedMetricSpecification"]["Metrics"]}
    assert metrics["backlog_per_task"]["Expression"] == "(visible + inflight) / tasks"
    assert metrics["backlog_per_task"]["ReturnData"] is True
    assert metrics["visible"]["MetricStat"]["Metric"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert metrics["inflight"]["MetricStat"]["Metric"]["MetricName"] == "ApproximateNumberOfMessagesNotVisible"
    assert metrics["tasks"]["MetricStat"]["Metric"]["MetricName"] == "RunningTaskCount"
    (step,) = [p["Properties"] for p in policies if p["Properties"]["PolicyType"] == "StepScaling"]
    assert step["StepScalingPolicyConfiguration"]["StepAdjustments"][0]["ScalingAdjustment"] == 1


# --- least privilege ---------------------------------------------------------------------------------------------
def _arns(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_every_consumer_role_reaches_only_its_own_queues_logs_and_tasks(synthesized: dict) -> None:
    stack, template = synthesized["stack"], synthesized["json"]
    for job_type, job in synthesized["jobs"].items():
        queue_arn = {"Fn::GetAtt": [logical_id(stack, job.job_queue.queue), "Arn"]}
        dlq_arn = {"Fn::GetAtt": [logical_id(stack, job.job_queue.dead_letter_queue), "Arn"]}
        if isinstance(job, LambdaJob):
            role_id = template["Resources"][logical_id(stack, job.function)]["Properties"]["Role"]["Fn::GetAtt"][0]
        else:
            role_id = logical_id(stack, job.task_definition.task_role)
        statements = [
            statement
            for policy in resources(template, "AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]
        assert statements, job_type
        for statement in statements:
            actions = set(_arns(statement["Action"]))
            targets = _arns(statement["Resource"])
            assert statement["Effect"] == "Allow"
            if actions & {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"}:
                assert targets == [queue_arn], (job_type, statement)
            elif actions <= {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}:
                assert targets == [dlq_arn], (job_type, statement)
            elif actions <= {"logs:CreateLogStream", "logs:PutLogEvents"}:
                assert len(targets) == 1 and "Fn::GetAtt" in targets[0], (job_type, statement)
            elif actions == {"ecs:UpdateTaskProtection", "ecs:GetTaskProtection"}:
                (arn,) = targets
                assert ":task/" in json.dumps(arn) and isinstance(job, EcsJob), (job_type, statement)
            else:
                pytest.fail(f"{job_type}: unexpected statement {statement}")


# --- alarms and dashboard ----------------------------------------------------------------------------------------
def test_consumer_alarms_come_from_the_declaration(synthesized: dict) -> None:
    template: Template = synthesized["template"]
    stack, jobs = synthesized["stack"], synthesized["jobs"]
    alarms = synthesized["json"]["Resources"]
    # Thumbnails: a 30 s function without a declared p99 -> p99 drift above half the function timeout.
    drift = alarms[logical_id(stack, jobs["Thumbnails"].alarms.p99_drift)]["Properties"]
    assert (
        drift["Threshold"] == 15_000 and drift["MetricName"] == "ProcessingTime" and drift["ExtendedStatistic"] == "p99"
    )
    # VideoTranscode: a declared p99 of 4 min with leases extended up to 3 h -> drift above the declared p99
    # (not above max_processing_time, which a 4-minute job would never reach).
    drift = alarms[logical_id(stack, jobs["VideoTranscode"].alarms.p99_drift)]["Properties"]
    assert drift["Threshold"] == 4 * 60 * 1000
    lost = alarms[logical_id(stack, jobs["VideoTranscode"].alarms.lease_lost)]["Properties"]
    assert lost["MetricName"] == "LeaseLost" and lost["Threshold"] == 1
    leak = alarms[logical_id(stack, jobs["VideoTranscode"].alarms.lease_leak)]["Properties"]
    assert leak["EvaluationPeriods"] == 36  # 3 h of 5-minute periods without a deletion
    assert jobs["Thumbnails"].alarms.errors is not None and jobs["Thumbnails"].alarms.throttles is not None
    assert jobs["VideoTranscode"].alarms.no_running_task is not None
    template.resource_count_is("AWS::CloudWatch::Dashboard", 4)  # one per job type, and the stack's fleet view


def test_dashboard_shows_the_lease_and_queue_picture(synthesized: dict) -> None:
    body = json.dumps(next(iter(resources(synthesized["json"], "AWS::CloudWatch::Dashboard").values())))
    for title in (
        "Backlog (visible + in flight)",
        "In flight vs the quota",
        "Age of the oldest message",
        "Processing time p50 / p99 (ms) vs the VT",
        "Dead-letter queue depth",
        "Lease extensions / leases lost",
        "Queue time p50 / p99 (ms), sent to started",
    ):
        assert title in body


def test_a_declared_max_queue_time_gets_its_alarm_and_a_line_on_the_queue_time_graph(synthesized: dict) -> None:
    # GIVEN Resize declared max_queue_time=30 s, the other two job types nothing
    stack, jobs, template = synthesized["stack"], synthesized["jobs"], synthesized["json"]
    resize = jobs["Resize"].job_queue
    assert resize.alarms is not None and resize.alarms.queue_time is not None
    alarm = template["Resources"][logical_id(stack, resize.alarms.queue_time)]["Properties"]
    assert alarm["MetricName"] == "QueueTime" and alarm["Threshold"] == 30_000
    assert alarm["Dimensions"] == [{"Name": "JobType", "Value": "Resize"}]
    assert [job.job_queue.alarms.queue_time for name, job in jobs.items() if name != "Resize"] == [None, None]
    # THEN its dashboard graphs the QueueTime p50 and p99 with the promise as a line; the others without a line
    bodies = {
        json.dumps(dashboard["Properties"]["DashboardName"]): json.dumps(dashboard["Properties"]["DashboardBody"])
        for dashboard in resources(template, "AWS::CloudWatch::Dashboard").values()
    }
    (resize_body,) = [body for name, body in bodies.items() if "Resize" in name]
    assert "QueueTime" in resize_body
    assert "max_queue_time" in resize_body and "30000" in resize_body
    assert all("max_queue_time" not in body for name, body in bodies.items() if "Resize" not in name)


def test_resource_budget_counts_what_consumers_add(synthesized: dict) -> None:
    from jobqueues.registry import registry_of

    budget = registry_of(synthesized["stack"]).budget
    shared = sum(
        1
        for r in synthesized["json"]["Resources"].values()
        if r["Type"].startswith("AWS::EC2::") and r["Type"] != "AWS::EC2::SecurityGroup"
    )
    assert budget.resources + shared + 6 >= len(synthesized["json"]["Resources"])
    assert budget.job_types == 3


# --- validation --------------------------------------------------------------------------------------------------
def lambda_job(**props: Any) -> None:
    _, stack = consumer_app()
    defaults = {"code": lambda_.Code.from_asset(HANDLERS), "handler": "thumbs.handle", "timeout": Duration.seconds(30)}
    LambdaJob(stack, "Job", **{**defaults, **props})


def ecs_job(**props: Any) -> cdk.Stack:
    _, stack = consumer_app()
    defaults = {"handler": "media.transcode:handle", "processing_p99": Duration.seconds(5)}
    EcsJob(stack, "Job", **{**defaults, **props})
    return stack


BAD_CONSUMERS = [
    ("lambda", {"timeout": Duration.minutes(16)}, "timeout must be between 1 s and 15 min"),
    ("lambda", {"timeout": 30}, "timeout=30 is an int, not an aws_cdk.Duration"),
    ("lambda", {"timeout": None}, "timeout is required"),
    ("lambda", {"handler": None}, "handler is required"),
    ("lambda", {"fifo": True, "max_batching_window": Duration.seconds(5)}, "not supported for FIFO queues"),
    ("lambda", {"batch_size": 100}, "batch_size 100 needs a batching window"),
    ("lambda", {"batch_size": 20, "fifo": True}, "batch_size must be between 1 and 10 for a FIFO queue"),
    ("lambda", {"max_concurrency": 1}, "max_concurrency must be between 2 and 1000"),
    ("lambda", {"max_concurrency": 1001}, "max_concurrency must be between 2 and 1000"),
    ("lambda", {"timeot": Duration.seconds(3)}, "unknown prop timeot: did you mean timeout?"),
    ("lambda", {"timeout": Duration.seconds(1)}, "timeout 1 s is too short for sqslease"),
    (
        "lambda",
        {"timeout": Duration.seconds(10), "processing_p99": Duration.seconds(40)},
        "processing_p99 40 s is not below timeout 10 s",
    ),
    ("ecs", {"processing_p99": Duration.hours(7), "lease_extension": False}, "gives a visibility timeout of 14 h"),
    ("ecs", {"max_processing_time": Duration.hours(13)}, "max_processing_time 13 h exceeds 12 h"),
    (
        "ecs",
        {"lease_extension": False, "max_processing_time": Duration.minutes(5)},
        "max_processing_time 5 min exceeds the visibility timeout 10 s",
    ),
    ("ecs", {"shutdown_grace": Duration.seconds(116)}, "makes a stopTimeout of 121 s"),
    ("ecs", {"handler": None}, "handler is required"),
    ("ecs", {"concurrency": 0}, "concurrency must be between 1 and 1000"),
    ("ecs", {"min_tasks": 3, "max_tasks": 2}, "min_tasks 3 is above max_tasks 2"),
    ("ecs", {"cluster": "my-cluster"}, "cluster='my-cluster' is a str"),
    (
        "ecs",
        {"image": ecs.ContainerImage.from_registry(REGISTRY_IMAGE), "image_directory": "worker"},
        "image_directory='worker' builds the default image, which image replaces",
    ),
]


@pytest.mark.parametrize(("kind", "props", "message"), BAD_CONSUMERS, ids=[c[2][:40] for c in BAD_CONSUMERS])
def test_bad_consumer_declarations_fail_at_synth_with_the_fix(kind: str, props: dict, message: str) -> None:
    with pytest.raises(JobQueueError) as raised:
        (lambda_job if kind == "lambda" else ecs_job)(**props)
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"{'LambdaJob' if kind == 'lambda' else 'EcsJob'} Jobs/Job cannot be deployed")


@pytest.mark.parametrize("image_directory", [None, "worker"])
def test_a_default_image_without_its_dockerfile_fails_at_synth_with_the_fix(
    image_directory: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default image is built from a directory relative to the current one: an app's own directory has
    no ``lambda_src``, and a directory without a ``Dockerfile`` builds nothing."""
    (tmp_path / "worker").mkdir()  # no Dockerfile
    monkeypatch.chdir(tmp_path)
    stack = cdk.Stack(cdk.App(), "Jobs", env=ENV)  # no jobqueues:image context: the image is built
    props: dict[str, Any] = {} if image_directory is None else {"image_directory": image_directory}
    with pytest.raises(JobQueueError) as raised:
        EcsJob(stack, "Job", handler="media.transcode:handle", processing_p99=Duration.seconds(5), **props)
    message = str(raised.value)
    path = tmp_path / (image_directory or "lambda_src")
    assert message.startswith("EcsJob Jobs/Job cannot be deployed")
    assert f"image_directory='{image_directory or 'lambda_src'}'" in message
    assert f"{path / 'Dockerfile'} does not exist" in message
    assert all(fix in message for fix in ("image=", "image_directory=", "jobqueues:image"))


def test_more_handlers_than_the_in_flight_quota_is_a_warning() -> None:
    stack = ecs_job(concurrency=1000, max_tasks=200)
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("200,000 handlers can hold more messages"))


# --- bring your own ----------------------------------------------------------------------------------------------
def inline_function(stack: cdk.Stack, timeout: Duration) -> lambda_.Function:
    return lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="app.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
        timeout=timeout,
    )


def test_add_lambda_consumer_checks_the_function_timeout_against_the_declared_vt() -> None:
    _, stack = consumer_app()
    queue = JobQueue(stack, "Email", processing_p99=Duration.seconds(3))  # VT 10 s
    function = inline_function(stack, Duration.seconds(60))
    with pytest.raises(JobQueueError, match=r"needs a visibility timeout of at least 6 min .* declare lambda_timeout"):
        queue.add_lambda_consumer(function)


def test_add_lambda_consumer_binds_an_existing_function() -> None:
    _, stack = consumer_app()
    queue = JobQueue(stack, "Email", lambda_timeout=Duration.seconds(60))
    function = inline_function(stack, Duration.seconds(60))
    alarms = queue.add_lambda_consumer(function, batch_size=5)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping", {"BatchSize": 5, "FunctionResponseTypes": ["ReportBatchItemFailures"]}
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"SQSLEASE_VISIBILITY_TIMEOUT": "360"})}},
    )
    assert alarms.errors is not None


def test_add_ecs_consumer_binds_an_existing_service() -> None:
    _, stack = consumer_app()
    queue = JobQueue(stack, "Render", processing_p99=Duration.seconds(30), lease_extension=True)
    cluster = ecs.Cluster(stack, "Cluster", vpc=cdk.aws_ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a"]))
    task = ecs.FargateTaskDefinition(stack, "Task")
    task.add_container(
        "Worker",
        image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
        command=queue.worker_command("render:handle", concurrency=2),
    )
    service = ecs.FargateService(stack, "Service", cluster=cluster, task_definition=task)
    queue.add_ecs_consumer(service, max_tasks=3, target_backlog_per_task=2)
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::ApplicationAutoScaling::ScalableTarget", {"MaxCapacity": 3})
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": ["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"]})]
                )
            }
        },
    )


def test_an_ecs_job_with_its_own_asset_image_passes_cdk_nag(tmp_path: Path) -> None:
    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    image_dir = tmp_path / "worker"
    image_dir.mkdir()
    (image_dir / "Dockerfile").write_text("FROM public.ecr.aws/docker/library/python:3.14-slim\n")
    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    stack = cdk.Stack(app, "Jobs", env=ENV)
    EcsJob(
        stack,
        "Render",
        handler="render:handle",
        processing_p99=Duration.minutes(2),
        image=ecs.ContainerImage.from_asset(str(image_dir)),
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged finding


def test_the_p99_drift_alarm_of_a_lambda_job_is_below_its_function_timeout() -> None:
    app, stack = consumer_app()
    code = lambda_.Code.from_asset(HANDLERS)
    declared = LambdaJob(
        stack,
        "Declared",
        code=code,
        handler="thumbs.handle",
        timeout=Duration.seconds(10),
        processing_p99=Duration.seconds(2),
    )
    undeclared = LambdaJob(
        stack, "Undeclared", code=code, handler="thumbs.handle", timeout=Duration.seconds(10), lease_extension=True
    )
    alarms = app.synth().get_stack_by_name("Jobs").template["Resources"]
    threshold = {
        name: alarms[logical_id(stack, job.alarms.p99_drift)]["Properties"]["Threshold"]
        for name, job in (("declared", declared), ("undeclared", undeclared))
    }
    assert threshold == {"declared": 2_000, "undeclared": 5_000}  # the declared p99; else half the timeout
    assert max(threshold.values()) < 10_000


def test_add_lambda_consumer_accepts_the_visibility_timeout_its_queue_accepted() -> None:
    _, stack = consumer_app()
    queue = JobQueue(
        stack,
        "Resize",
        lambda_timeout=Duration.seconds(30),
        lease_extension=True,
        visibility_timeout=Duration.seconds(60),
    )
    queue.add_lambda_consumer(inline_function(stack, Duration.seconds(30)))
    Template.from_stack(stack).has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 60})


def test_the_queue_and_its_lambda_consumer_apply_one_visibility_timeout_rule() -> None:
    # With lease extension: at least timeout + max_batching_window + 10 s, on the queue and on the consumer.
    _, stack = consumer_app()
    with pytest.raises(JobQueueError, match=r"visibility_timeout 35 s is below the 40 s"):
        JobQueue(
            stack,
            "Queue",
            lambda_timeout=Duration.seconds(30),
            lease_extension=True,
            visibility_timeout=Duration.seconds(35),
        )
    queue = JobQueue(
        stack,
        "Render",
        processing_p99=Duration.seconds(5),
        lease_extension=True,
        visibility_timeout=Duration.seconds(35),
    )
    with pytest.raises(JobQueueError, match=r"needs a visibility timeout of at least 40 s .* the queue has 35 s"):
        queue.add_lambda_consumer(inline_function(stack, Duration.seconds(30)))


def test_add_lambda_consumer_refuses_a_function_sqslease_cannot_serve() -> None:
    _, stack = consumer_app()
    short = JobQueue(stack, "Short", lambda_timeout=Duration.seconds(3))
    with pytest.raises(JobQueueError, match=r"function timeout 1 s is too short for sqslease"):
        short.add_lambda_consumer(inline_function(stack, Duration.seconds(1)))
    _, stack = consumer_app()
    slow = JobQueue(stack, "Slow", processing_p99=Duration.seconds(40))  # VT 80 s: enough for a 10 s function
    with pytest.raises(JobQueueError, match=r"processing_p99 40 s is not below the function timeout 10 s"):
        slow.add_lambda_consumer(inline_function(stack, Duration.seconds(10)))


def test_consumers_and_producers_of_a_kms_queue_get_only_the_key_actions_they_use_and_pass_cdk_nag() -> None:
    from aws_cdk import Validations
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks

    app, stack = consumer_app()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    thumbs = LambdaJob(
        stack,
        "Thumbnails",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        encryption_key=key,
    )
    render = EcsJob(stack, "Render", handler="render:handle", processing_p99=Duration.seconds(5), encryption_key=key)
    producer = iam.Role(stack, "Producer", assumed_by=iam.AccountRootPrincipal())
    thumbs.job_queue.grant_send_messages(producer)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    template = app.synth().get_stack_by_name("Jobs").template  # raises on any unacknowledged finding
    key_arn = {"Fn::GetAtt": [logical_id(stack, key), "Arn"]}
    roles = {
        "Thumbnails": template["Resources"][logical_id(stack, thumbs.function)]["Properties"]["Role"]["Fn::GetAtt"][0],
        "Render": logical_id(stack, render.task_definition.task_role),
        "producer": logical_id(stack, producer),
    }
    for who, role_id in roles.items():
        kms_statements = [
            statement
            for policy in resources(template, "AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if any(action.startswith("kms:") for action in _arns(statement["Action"]))
        ]
        actions = {action for statement in kms_statements for action in _arns(statement["Action"])}
        assert actions == {"kms:Decrypt", "kms:GenerateDataKey"}, (who, kms_statements)
        assert all(_arns(statement["Resource"]) == [key_arn] for statement in kms_statements), who


def test_the_p99_drift_bound_with_lease_extension_is_the_declared_p99_else_the_processing_cap() -> None:
    from jobqueues.consumer_alarms import p99_drift_threshold_ms

    # GIVEN lease extension WHEN a p99 is declared THEN it is the bound; without one, max_processing_time or 12 h.
    assert p99_drift_threshold_ms(60, True, 3 * 3600, processing_p99_s=240) == 240_000
    assert p99_drift_threshold_ms(60, True, 3 * 3600) == 3 * 3600 * 1000
    assert p99_drift_threshold_ms(60, True, None) == 12 * 3600 * 1000
    # Without lease extension the VT is 2 x p99: half the VT.
    assert p99_drift_threshold_ms(60, False, None, processing_p99_s=30) == 30_000


def test_a_consumer_construct_s_job_type_takes_no_second_consumer() -> None:
    # Its alarms, dashboard and scaling are the job type's: a second consumer is refused before anything is made.
    _, stack = consumer_app()
    job = LambdaJob(
        stack, "Job", code=lambda_.Code.from_asset(HANDLERS), handler="thumbs.handle", timeout=Duration.seconds(30)
    )
    with pytest.raises(JobQueueError, match=r"job type 'Job' has a consumer already \(Jobs/Job\)"):
        job.job_queue.add_lambda_consumer(job.function)
    worker = EcsJob(stack, "Work", handler="w:handle", processing_p99=Duration.seconds(5))
    with pytest.raises(JobQueueError, match=r"add_ecs_consumer on Jobs/Work/Queue: job type 'Work' has a consumer"):
        worker.job_queue.add_ecs_consumer(worker.service)


def test_an_ecs_job_without_a_basis_is_not_told_to_declare_a_lambda_timeout() -> None:
    _, stack = consumer_app()
    with pytest.raises(JobQueueError, match="no basis for the visibility timeout") as raised:
        EcsJob(stack, "Work", handler="w:handle", lease_extension=False)
    assert "lambda_timeout" not in str(raised.value)
