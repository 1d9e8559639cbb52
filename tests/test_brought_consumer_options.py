"""``hooks`` and ``idempotency_key`` on the bring-your-own binders (``add_lambda_consumer``, ``add_ecs_consumer``, a
declared or an imported job queue's): the consumer gets the settings sqslease reads, under the rules of
``LambdaJob`` and ``EcsJob`` (one reader, :mod:`jobqueues.consumer_options`), in its one channel (a function's
variables, a worker's command); cdk-nag AwsSolutions and cfn-lint clean; bad options refused at synth, naming the
option, the value and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from cdk_helpers import ENV, lint_template, new_stack
from test_idempotency_constructs import REGISTRY_IMAGE, JobsStack, inline_function

from jobqueues import JobQueue, JobQueueError
from jobqueues.interface import IJobQueue
from sqslease.config import ConsumerConfig

KEY = "orders.keys:order_id"
HOOKS = ["orders.hooks:Timing", "tracing.setup:ProviderHooks"]


def worker_service(stack: cdk.Stack, job_queue: IJobQueue, name: str) -> ecs.FargateService:
    """A Fargate service of the user's whose container runs the job queue's worker command."""
    cluster = stack.node.try_find_child("Cluster")
    if cluster is None:
        cluster = ecs.Cluster(stack, "Cluster", container_insights_v2=ecs.ContainerInsights.ENABLED)
        cluster.vpc.add_flow_log("All")
    task = ecs.FargateTaskDefinition(stack, f"{name}Task")
    task.add_container(
        "Worker",
        image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
        command=job_queue.consumer_contract().worker_command(f"{name.lower()}:handle"),
        logging=ecs.LogDrivers.aws_logs(stream_prefix=name),
    )
    return ecs.FargateService(stack, f"{name}Service", cluster=cluster, task_definition=task)


def imported(stack: cdk.Stack) -> IJobQueue:
    arn = "arn:aws:sqs:us-east-1:123456789012:{}"
    return JobQueue.from_queue_attributes(
        stack,
        "Adopted",
        job_type="Adopted",
        queue=sqs.Queue.from_queue_arn(stack, "AdoptedQueue", arn.format("adopted")),
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, "AdoptedDlq", arn.format("adopted-dlq")),
        visibility_timeout=Duration.minutes(3),
    )


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A function and a service of the user's bound with hooks and a key (idempotency on), one of each bound
    without, and an imported job queue's function with hooks. cdk-nag on."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = JobsStack(app, "Jobs", env=ENV)
    orders = JobQueue(stack, "Orders", lambda_timeout=Duration.seconds(30), idempotency=True)
    orders.add_lambda_consumer(inline_function(stack, "OrdersFn"), hooks=HOOKS, idempotency_key=KEY)
    emails = JobQueue(stack, "Emails", lambda_timeout=Duration.seconds(30))
    emails.add_lambda_consumer(inline_function(stack, "EmailsFn"))
    args = {"processing_p99": Duration.seconds(20), "lease_extension": True, "idempotency": True}
    invoices = JobQueue(stack, "Invoices", **args)  # type: ignore[arg-type]
    invoices.add_ecs_consumer(worker_service(stack, invoices, "Invoices"), hooks=HOOKS, idempotency_key=KEY)
    credits = JobQueue(stack, "Credits", **args)  # type: ignore[arg-type]
    credits.add_ecs_consumer(worker_service(stack, credits, "Credits"))
    imported(stack).add_lambda_consumer(inline_function(stack, "AdoptedFn"), hooks=HOOKS[:1])
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "dir": Path(assembly.directory), "json": assembly.get_stack_by_name("Jobs").template}


def resource(synthesized: dict, path: str) -> dict[str, Any]:
    construct = synthesized["stack"].node.find_child(path).node.default_child
    return dict(synthesized["json"]["Resources"][synthesized["stack"].get_logical_id(construct)]["Properties"])


def function_variables(synthesized: dict, name: str) -> dict[str, str]:
    variables = resource(synthesized, name)["Environment"]["Variables"]
    return {k: v for k, v in variables.items() if isinstance(v, str)}


def worker(synthesized: dict, name: str) -> tuple[list[str], dict[str, Any]]:
    """The worker container's command and variables (a table's name is a reference)."""
    (container,) = resource(synthesized, f"{name}Task")["ContainerDefinitions"]
    return list(container["Command"]), {v["Name"]: v["Value"] for v in container.get("Environment", [])}


def test_a_brought_function_gets_the_hooks_and_the_key_as_the_variables_sqslease_reads(synthesized: dict) -> None:
    # GIVEN add_lambda_consumer(..., hooks=, idempotency_key=); WHEN synthesized
    variables = function_variables(synthesized, "OrdersFn")
    # THEN the function's environment names them, and sqslease parses them back
    settings = ConsumerConfig.from_env(variables).lease
    assert settings.hooks == tuple(HOOKS) and settings.idempotency_key == KEY
    assert "SQSLEASE_IDEMPOTENCY_TABLE" in resource(synthesized, "OrdersFn")["Environment"]["Variables"]
    # and a function bound without them gets neither
    assert not {"SQSLEASE_HOOKS", "SQSLEASE_IDEMPOTENCY_KEY"} & set(function_variables(synthesized, "EmailsFn"))
    # an imported job queue's binder takes hooks too
    assert ConsumerConfig.from_env(function_variables(synthesized, "AdoptedFn")).lease.hooks == tuple(HOOKS[:1])


def test_a_brought_worker_is_told_the_hooks_and_the_key_in_its_command(synthesized: dict) -> None:
    # GIVEN add_ecs_consumer(..., hooks=, idempotency_key=) on a service whose command is the job queue's
    command, environment = worker(synthesized, "Invoices")
    # WHEN the worker reads its command (as python -m sqslease.worker does), everything in one channel
    assert environment == {}  # no container variable: cdk-nag ECS2
    table = command[command.index("--idempotency-table") + 1]
    args = [part if isinstance(part, str) else "REF" for part in command[3:]]  # after python -m sqslease.worker
    settings = ConsumerConfig.from_args(args, environ={}).lease
    assert settings.visibility_timeout == 40  # the command's options are read: max(2 x 20 s, 10 s)
    # THEN it runs the hooks and keys its records on the key function, in the job queue's table
    assert settings.hooks == tuple(HOOKS) and settings.idempotency_key == KEY
    assert command.count("--hooks") == command.count("--idempotency-key") == command.count("--idempotency-table") == 1
    assert isinstance(table, dict)  # the table's name: a reference
    # and a worker bound without them gets neither
    plain, _ = worker(synthesized, "Credits")
    assert "--hooks" not in plain and "--idempotency-key" not in plain and "--idempotency-table" in plain


def test_a_brought_worker_whose_command_runs_no_sqslease_worker_is_refused() -> None:
    # GIVEN a service whose container runs a command of its own, and settings to tell its worker
    stack = new_stack()
    job_queue = JobQueue(stack, "Orders", processing_p99=Duration.seconds(20), lease_extension=True)
    cluster = ecs.Cluster(stack, "Cluster", vpc=cdk.aws_ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a"]))
    task = ecs.FargateTaskDefinition(stack, "Task")
    task.add_container("Worker", image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE), command=["./run.sh"])
    service = ecs.FargateService(stack, "Service", cluster=cluster, task_definition=task)
    # WHEN bound with hooks THEN the binder says where the settings go and how to get them there
    with pytest.raises(JobQueueError, match=r"Test/Task/Worker's command \['./run.sh'\] does not run sqslease.worker"):
        job_queue.add_ecs_consumer(service, hooks=HOOKS)


def test_a_brought_worker_command_that_gives_other_settings_is_refused() -> None:
    stack = new_stack()
    job_queue = JobQueue(stack, "Orders", processing_p99=Duration.seconds(20), lease_extension=True)
    cluster = ecs.Cluster(stack, "Cluster", vpc=cdk.aws_ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a"]))
    task = ecs.FargateTaskDefinition(stack, "Task")
    command = [*job_queue.worker_command("orders:handle"), "--hooks", "other.hooks:Timing"]
    task.add_container("Worker", image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE), command=command)
    service = ecs.FargateService(stack, "Service", cluster=cluster, task_definition=task)
    with pytest.raises(JobQueueError, match=r"gives hooks 'other.hooks:Timing', not 'orders.hooks:Timing,tracing"):
        job_queue.add_ecs_consumer(service, hooks=HOOKS)


def test_the_template_is_cfn_lint_clean(synthesized: dict) -> None:
    findings = lint_template(synthesized["dir"] / "Jobs.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


# --- bad options: the rules of LambdaJob and EcsJob -----------------------------------------------------------------
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "hooks not a list": (
        {"hooks": "orders.hooks:Timing"},
        "hooks='orders.hooks:Timing' is a str, not a list: pass a list of import paths, e.g. ['myapp.hooks:Timing']",
    ),
    "hook not a path": (
        {"hooks": ["orders.hooks:Timing", "timing hooks"]},
        "hooks[1]='timing hooks' is not an import path: name a Hooks object or class as 'package.module:name', "
        "e.g. hooks=['myapp.hooks:Timing']",
    ),
    "key not a path": (
        {"idempotency_key": "order id"},
        "idempotency_key='order id' is not an import path: name the key function key(body, message) -> str as "
        "'package.module:function', e.g. idempotency_key='orders.keys:order_id'",
    ),
    "key not a str": ({"idempotency_key": ["a.b:c"]}, "idempotency_key=['a.b:c'] is a list, not a str: pass a str"),
    "key without idempotency": (
        {"idempotency_key": KEY, "_idempotency": False},
        f"idempotency_key={KEY!r} needs idempotency on, which is off: pass idempotency=True (or a table) with it, "
        "or drop idempotency_key",
    ),
}


def bind(method: str, stack: cdk.Stack, job_queue: JobQueue, **options: Any) -> None:
    if method == "add_lambda_consumer":
        job_queue.add_lambda_consumer(inline_function(stack, "Fn"), **options)
    else:
        job_queue.add_ecs_consumer(worker_service(stack, job_queue, "Orders"), **options)


@pytest.mark.parametrize("case", BAD)
@pytest.mark.parametrize("method", ["add_lambda_consumer", "add_ecs_consumer"])
def test_bad_options_are_refused_at_synth_naming_the_option_the_value_and_the_fix(method: str, case: str) -> None:
    options, expected = BAD[case]
    options = dict(options)
    stack = new_stack()
    job_queue = JobQueue(
        stack,
        "Orders",
        lambda_timeout=Duration.seconds(30),
        lease_extension=True,
        idempotency=options.pop("_idempotency", True),
    )
    with pytest.raises(JobQueueError) as raised:
        bind(method, stack, job_queue, **options)
    message = str(raised.value)
    assert message.startswith(f"{method} on Test/Orders cannot be deployed:")
    assert expected in message


# --- a function on a runtime the sqslease layer does not serve -----------------------------------------------------
def function_on(stack: cdk.Stack, runtime: lambda_.Runtime) -> lambda_.Function:
    handler = "app.handler" if runtime.family == lambda_.RuntimeFamily.PYTHON else "index.handler"
    return lambda_.Function(
        stack, "Fn", runtime=runtime, handler=handler, code=lambda_.Code.from_inline("x"), timeout=Duration.seconds(30)
    )


@pytest.mark.parametrize("runtime", ["PYTHON_3_12", "PYTHON_3_13", "NODEJS_22_X"])
def test_a_function_on_a_runtime_the_layer_does_not_serve_is_refused_naming_the_runtimes_and_the_fix(
    runtime: str,
) -> None:
    # GIVEN a function of the user's on a runtime the sqslease layer is not built for (it serves python3.14)
    stack = new_stack()
    job_queue = JobQueue(stack, "Orders", lambda_timeout=Duration.seconds(30))
    function = function_on(stack, getattr(lambda_.Runtime, runtime))
    name = function.runtime.name
    # WHEN it is bound with the layer THEN a JobQueueError names the runtime, the layer's, and both fixes
    with pytest.raises(JobQueueError) as raised:
        job_queue.add_lambda_consumer(function)
    message = str(raised.value)
    assert message.startswith("add_lambda_consumer on Test/Orders cannot be deployed:")
    assert (
        f"the function's runtime {name} is not one the sqslease layer serves (python3.14): give the function "
        "runtime=lambda_.Runtime.PYTHON_3_14, or pass add_layer=False and ship sqslease in its code"
    ) in message


def test_a_function_on_another_python_binds_without_the_layer() -> None:
    # GIVEN a python3.12 function that ships sqslease in its own code
    stack = new_stack()
    job_queue = JobQueue(stack, "Orders", lambda_timeout=Duration.seconds(30))
    function = function_on(stack, lambda_.Runtime.PYTHON_3_12)
    # WHEN it is bound without the layer THEN it is the consumer, its runtime kept, no layer added
    job_queue.add_lambda_consumer(function, add_layer=False)
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::Lambda::Function", {"Runtime": "python3.12", "Layers": Match.absent()})
    template.resource_count_is("AWS::Lambda::LayerVersion", 0)
