"""An ECS service as a job type's consumer (:func:`bind_ecs_consumer`), declared by ``EcsJob`` or brought with
``add_ecs_consumer``: task scale-in protection, scaling on backlog per task, and the no-running-task alarm and
graph beside the shared binding. Its container runs ``IJobQueue.consumer_contract().worker_command(...)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aws_cdk import Acknowledgment, ArnFormat, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from jobqueues.alarms import alarm
from jobqueues.consumer_alarms import ConsumerAlarms
from jobqueues.consumer_binding import Binding, DeclaredConsumer, bind_consumer, claim_consumer
from jobqueues.consumer_options import brought_runtime_options
from jobqueues.defaults import ECS_MAX_TASKS, ECS_MIN_TASKS
from jobqueues.errors import JobQueueError
from jobqueues.interface import IJobQueue
from jobqueues.marker import mark_consumer, reference
from jobqueues.metrics import consumer_period
from jobqueues.nag import nag_text
from jobqueues.registry import stack_of
from jobqueues.scaling import ServiceNames, running_tasks, scale_on_backlog
from sqslease import config
from sqslease.rules import DEFAULT_WORKER_CONCURRENCY


def bind_ecs_consumer(
    scope: Construct,
    job_queue: IJobQueue,
    service: ecs.BaseService,
    *,
    min_tasks: int = ECS_MIN_TASKS,
    max_tasks: int = ECS_MAX_TASKS,
    target_backlog_per_task: int = DEFAULT_WORKER_CONCURRENCY,
    add_settings: bool = True,
    hooks: Sequence[str] | None = None,
    idempotency_key: str | None = None,
    declared: DeclaredConsumer | None = None,
) -> ConsumerAlarms:
    """Make ``service`` the consumer of ``job_queue``: grants (consume, task protection), scaling on backlog per
    task, alarms and a dashboard. Its container must run the job queue's ``consumer_contract().worker_command(...)``.

    :param min_tasks: tasks when idle. Default: 0.
    :param max_tasks: tasks at most. Default: 10.
    :param target_backlog_per_task: outstanding messages per task the scaling aims at. Default: 4.
    :param add_settings: complete the command of the task definition's default container, the worker's, with the
        settings its ``worker_command(...)`` could not hold (:meth:`ConsumerContract.brought_worker_settings`: the
        idempotency settings, ``hooks``, ``idempotency_key``); a caller that created it with them passes False.
        Default: True.
    :param hooks: ``sqslease`` hooks, import paths, the worker's ``--hooks``. Default: none.
    :param idempotency_key: the idempotency key function's import path, with idempotency on, the worker's
        ``--idempotency-key``. Default: none (the ``MessageId``).
    :param declared: what an ``EcsJob`` knows of its service (its resource, the logical ids of its resources).
        Default: looked up.
    """
    if not isinstance(service, ecs.BaseService):
        raise JobQueueError(f"add_ecs_consumer: service={service!r} is not an ecs.BaseService (FargateService)")
    worker, told = _brought_worker_settings(job_queue, service, hooks, idempotency_key, add_settings=add_settings)
    claim_consumer(job_queue, scope, "add_ecs_consumer")
    if told and worker is not None:
        complete_worker_command(job_queue, service.task_definition, worker, told)
    stack = stack_of(scope)
    # What the declaring EcsJob holds is not asked of the kernel again (each read is a round trip).
    task_role = declared.task_role if declared and declared.task_role else service.task_definition.task_role
    binding = bind_consumer(scope, job_queue, task_role)
    cluster_name = declared.cluster_name if declared and declared.cluster_name else service.cluster.cluster_name
    _grant_task_protection(stack, task_role, cluster_name)
    scaling = {"min_tasks": min_tasks, "max_tasks": max_tasks, "target_backlog_per_task": target_backlog_per_task}
    # Read once (each read is a round trip): the scaling policies' dimensions and the running-tasks alarm's.
    names = ServiceNames(
        cluster_name, service.service_name, declared.path if declared and declared.path else service.node.path
    )
    scale_on_backlog(scope, service, names, job_queue.queue, **scaling)
    _mark(job_queue, service, stack, cluster_name, scaling, declared)
    return _running_tasks_alarm(scope, job_queue, names, binding)


def _mark(
    job_queue: IJobQueue,
    service: ecs.BaseService,
    stack: Stack,
    cluster_name: str,
    scaling: dict[str, int],
    declared: DeclaredConsumer | None,
) -> None:
    """The consumer marker: the service, its cluster and task definition, and its scaling bounds."""
    known = declared.references if declared is not None else {}
    looked_up: dict[str, Callable[[], dict[str, str] | None]] = {  # each a few round trips: only when not known
        "service": lambda: reference(service, service.service_arn, "arn", stack),
        "cluster": lambda: reference(service.cluster, cluster_name, "name", stack),
        "task_definition": lambda: reference(
            service.task_definition, service.task_definition.task_definition_arn, "arn", stack
        ),
    }
    references = {key: known[key] if key in known else look_up() for key, look_up in looked_up.items()}
    resource = declared.resource if declared is not None else None
    mark_consumer(job_queue, service, {"kind": "ecs", **references, **scaling}, resource)


def _running_tasks_alarm(
    scope: Construct, job_queue: IJobQueue, names: ServiceNames, binding: Binding
) -> ConsumerAlarms:
    """The service's own alarm (a backlog with no task running) and graph, beside the shared binding's."""
    period = consumer_period(scope)
    tasks = running_tasks(names.cluster_name, names.service_name, period)
    no_task = alarm(
        scope,
        "NoRunningTaskAlarm",
        cloudwatch.MathExpression(
            expression="IF(visible >= 1 AND FILL(tasks, 0) < 1, 1, 0)",
            using_metrics={"visible": binding.metrics.visible, "tasks": tasks},
            label="backlog waiting, no task running",
            period=period,
        ),
        threshold=1,
        evaluation_periods=3,
        description=(
            f"{job_queue.job_type}: messages have waited 15 min with no task running: tasks fail to start "
            "(image, role, capacity) or scaling is off."
        ),
    )
    return binding.finish(
        [cloudwatch.GraphWidget(title="Running tasks", left=[tasks], width=8)], no_running_task=no_task
    )


def _brought_worker_settings(
    job_queue: IJobQueue,
    service: ecs.BaseService,
    hooks: Sequence[str] | None,
    idempotency_key: str | None,
    *,
    add_settings: bool,
) -> tuple[ecs.ContainerDefinition | None, dict[str, str]]:
    """The worker container and the settings (name -> text) the binder completes its command with: checked
    before the service is claimed, so a refused binding changes nothing."""
    options, errors = brought_runtime_options(
        hooks, idempotency_key, idempotency=job_queue.idempotency_table is not None
    )
    if errors:
        raise JobQueueError(
            f"add_ecs_consumer on {job_queue.node.path} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in errors)
        )
    told = options.apply(job_queue.consumer_contract()).brought_worker_settings() if add_settings else {}
    if not told:
        return None, told  # nothing to tell the worker: its container is not looked up (a round trip each)
    worker = service.task_definition.default_container
    if worker is None:
        raise JobQueueError(
            f"add_ecs_consumer on {job_queue.node.path}: job type {job_queue.job_type!r} has settings for its worker "
            f"({', '.join(told)}), which go to the task definition's default container, and "
            f"{service.task_definition.node.path} has none: add the worker's container (essential) before binding"
        )
    return worker, told


def _grant_task_protection(stack: Stack, task_role: iam.IRole, cluster_name: str) -> None:
    """Let the worker set ECS task scale-in protection on its own task (an id known only at run time)."""
    own_tasks = stack.format_arn(
        service="ecs", resource="task", resource_name=f"{cluster_name}/*", arn_format=ArnFormat.SLASH_RESOURCE_NAME
    )
    protection = iam.PolicyStatement(
        actions=["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"], resources=[own_tasks]
    )
    task_role.add_to_principal_policy(protection)
    policy = task_role.node.try_find_child("DefaultPolicy")
    if policy is not None:
        Validations.of(policy).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_text(stack, own_tasks)}]",
                reason=(
                    "sqslease sets ECS task scale-in protection on its own task, whose id exists only at run time; "
                    "the wildcard is limited to the tasks of this cluster and to the two task-protection actions"
                ),
            )
        )


def complete_worker_command(
    job_queue: IJobQueue, task_definition: ecs.TaskDefinition, worker: ecs.ContainerDefinition, told: dict[str, str]
) -> None:
    """Give a brought worker the settings ``told`` (setting name -> text) as options of its command, the one channel
    of an ECS worker: those its command lacks are appended (a property override of the container's ``Command``,
    which a container definition keeps read-only). Its command must run ``sqslease.worker``, and may give none of
    them another value: else a ``JobQueueError`` names the fix."""
    rendered = worker.render_container_definition()
    command = [str(part) for part in rendered.command or []]
    where = f"add_ecs_consumer on {job_queue.node.path}"
    if "sqslease.worker" not in [*(str(part) for part in rendered.entry_point or []), *command]:
        raise JobQueueError(
            f"{where}: job type {job_queue.job_type!r} has settings for its worker ({', '.join(told)}), which go to "
            f"the command of the task definition's default container, and {worker.node.path}'s command "
            f"{command!r} does not run sqslease.worker: give it command=job_queue.worker_command('package.module:"
            "handler')"
        )
    present = config.given(command)
    clashes = [
        f"{name} {present[name]!r}, not {text!r}" for name, text in told.items() if present.get(name, text) != text
    ]
    if clashes:
        raise JobQueueError(
            f"{where}: the command of {worker.node.path} gives {'; '.join(clashes)}: drop those options from the "
            "command (the binder gives them)"
        )
    missing = {name: text for name, text in told.items() if name not in present}
    containers = [c.node.path for c in task_definition.node.children if isinstance(c, ecs.ContainerDefinition)]
    cfn = task_definition.node.default_child
    assert isinstance(cfn, ecs.CfnTaskDefinition)
    cfn.add_property_override(
        f"ContainerDefinitions.{containers.index(worker.node.path)}.Command", [*command, *config.options(missing)]
    )


def acknowledge_environment(task_definition: ecs.TaskDefinition, environment: dict[str, str]) -> None:
    """Acknowledge cdk-nag's ECS2 (a container with environment variables) for the worker's ``environment``, the
    ``environment=`` prop's: plain settings, never secrets (the worker's own settings are its options)."""
    Validations.of(task_definition).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-ECS2",
            reason=(
                f"the variables ({', '.join(sorted(environment))}) are plain settings, the environment= prop's; "
                "secret values go through secrets= (Secrets Manager or SSM), and sqslease's settings are the "
                "worker's command-line options"
            ),
        )
    )
