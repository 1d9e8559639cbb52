"""Plan, then build, for an ``EcsJob``: a pure function turns its declaration into every value its queue, its task
definition, its service and their scaling get.

:func:`plan_ecs_job` runs the consumer's rules (:mod:`jobqueues.consumer_rules`), plans the service
(:func:`jobqueues.ecs_service_plan.plan_ecs_service`) and the job queue with their findings
(:func:`jobqueues.plan.plan_job_queue`), so one plan holds every value, error and warning. Pure Python (no
aws_cdk), as the queue's plan: a token is carried as given, and so are the CDK objects (the image, the cluster, a
VPC); what the rules need of them is read by the construct (:func:`jobqueues.ecs_options.ecs_job_declaration`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobqueues import defaults
from jobqueues.consumer_rules import (
    ConsumerCheck,
    check_ecs_consumer,
    check_handler,
    check_hooks,
    check_idempotency_key,
    stop_timeout_s,
)
from jobqueues.declaration import QueueDeclaration
from jobqueues.declaration_warnings import DeclarationWarning
from jobqueues.ecs_service_plan import EcsServiceDeclaration, EcsServicePlan, plan_ecs_service
from jobqueues.plan import Given, QueuePlan, plan_job_queue


@dataclass(frozen=True)
class EcsJobDeclaration:
    """Everything declared for one ``EcsJob``: plain values, durations in seconds, CDK objects as given.

    ``None`` means "not declared": the plan applies the default of :mod:`jobqueues.defaults`.

    :param queue: the job queue's declaration. ``EcsJob``'s props default ``lease_extension`` to
        ``defaults.ECS_LEASE_EXTENSION``; a declaration made by hand says it.
    :param handler: the per-message function, ``package.module:function``; required (or a token in ``tokens``).
    :param image: the container image (an ``ecs.ContainerImage``), as given; ``None``: the default image.
    :param image_directory: the directory whose ``Dockerfile`` builds the default image.
    :param registry_image: the image of context ``jobqueues:image``, which replaces the default image (the
        construct reads the context; a declaration made by hand gives it); ``None``: none.
    :param concurrency: handlers per task. :param min_tasks: tasks when idle. :param max_tasks: tasks at most.
    :param target_backlog_per_task: outstanding messages per task the scaling aims at; ``None``: ``concurrency``.
    :param cpu: task CPU units. :param memory_limit_mib: task memory in MiB.
    :param shutdown_grace: seconds running handlers get after SIGTERM.
    :param log_retention: the ``logs.RetentionDays`` member's name of the worker's log group.
    :param cluster: the ``ecs.ICluster`` given; ``None``: the stack's shared one.
    :param service: the deployment options.
    :param hooks: ``sqslease`` hooks, import paths. :param idempotency_key: the key function's import path.
    :param queue_resources: the queue's construct props, as :func:`jobqueues.plan.plan_job_queue` takes them.
    :param alarms_enabled: ``alarms.enabled``.
    :param tokens: the job's props given as unresolved tokens (``handler``): prop name -> the value as given.
    :param errors: what the construct found where the props entered (types, units), listed first.
    :param refused: the props given with a value of the wrong type (in ``errors``): not reported missing too.
    """

    queue: QueueDeclaration
    handler: str | None = None
    image: Any = None
    image_directory: str | None = None
    registry_image: str | None = None
    concurrency: int | None = None
    min_tasks: int | None = None
    max_tasks: int | None = None
    target_backlog_per_task: int | None = None
    cpu: int | None = None
    memory_limit_mib: int | None = None
    shutdown_grace: float | None = None
    log_retention: str | None = None
    cluster: Any = None
    service: EcsServiceDeclaration = field(default_factory=EcsServiceDeclaration)
    hooks: tuple[str, ...] = ()
    idempotency_key: str | None = None
    queue_resources: Mapping[str, Any] = field(default_factory=dict)
    alarms_enabled: bool = True
    tokens: Mapping[str, object] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    refused: frozenset[str] = frozenset()


@dataclass(frozen=True)
class EcsJobPlan:
    """Every final value of one ``EcsJob``. Durations in seconds.

    :param queue: the job queue's plan; its errors and warnings are the whole declaration's.
    :param service: the task definition's and the service's deployment options.
    :param handler: the per-message function (the worker's ``--handler``), or a token as given.
    :param image: the container image given; ``None``: ``registry_image``, else built from ``image_directory``.
    :param image_directory: the directory whose ``Dockerfile`` builds the default image.
    :param registry_image: the registry image that replaces the default one; ``None``: none.
    :param concurrency: handlers per task. :param min_tasks: tasks when idle. :param max_tasks: tasks at most.
    :param target_backlog_per_task: outstanding messages per task the scaling aims at.
    :param cpu: task CPU units. :param memory_limit_mib: task memory in MiB.
    :param shutdown_grace: seconds running handlers get after SIGTERM.
    :param stop_timeout: the container's ``stopTimeout``, whole seconds: the grace and the worker's margin.
    :param log_retention: the ``logs.RetentionDays`` member's name of the worker's log group.
    :param cluster: the cluster given; ``None``: the stack's shared one.
    :param hooks: ``sqslease`` hooks, import paths.
    :param idempotency_key: the idempotency key function's import path; ``None``: the ``MessageId``.
    """

    queue: QueuePlan
    service: EcsServicePlan
    handler: str | Given | None
    image: Any
    image_directory: str
    registry_image: str | None
    concurrency: int
    min_tasks: int
    max_tasks: int
    target_backlog_per_task: int
    cpu: int
    memory_limit_mib: int
    shutdown_grace: float
    stop_timeout: int
    log_retention: str
    cluster: Any
    hooks: tuple[str, ...]
    idempotency_key: str | None

    @property
    def errors(self) -> list[str]:
        """Every problem of the declaration, each with its fix; a plan with errors is never built."""
        return self.queue.errors

    @property
    def warnings(self) -> list[DeclarationWarning]:
        """Every warning, each with an id to acknowledge it by."""
        return self.queue.warnings


def plan_ecs_job(d: EcsJobDeclaration) -> EcsJobPlan:
    """The plan of declaration ``d``: the consumer's rules, the service's and the queue's, each value settled."""
    consumer, service = ecs_consumer_check(d)
    queue = plan_job_queue(d.queue, consumer=consumer, alarms_enabled=d.alarms_enabled, resources=d.queue_resources)
    concurrency = _or(d.concurrency, defaults.ECS_CONCURRENCY)
    grace = defaults.ECS_SHUTDOWN_GRACE_S if d.shutdown_grace is None else d.shutdown_grace
    return EcsJobPlan(
        queue=queue,
        service=service,
        handler=Given(d.tokens["handler"]) if "handler" in d.tokens else d.handler,
        image=d.image,
        image_directory=d.image_directory or defaults.ECS_IMAGE_DIRECTORY,
        registry_image=d.registry_image,
        concurrency=concurrency,
        min_tasks=_or(d.min_tasks, defaults.ECS_MIN_TASKS),
        max_tasks=_or(d.max_tasks, defaults.ECS_MAX_TASKS),
        target_backlog_per_task=_or(d.target_backlog_per_task, concurrency),
        cpu=_or(d.cpu, defaults.ECS_CPU),
        memory_limit_mib=_or(d.memory_limit_mib, defaults.ECS_MEMORY_MIB),
        shutdown_grace=grace,
        stop_timeout=stop_timeout_s(grace),
        log_retention=d.log_retention or defaults.LOG_RETENTION,
        cluster=d.cluster,
        hooks=d.hooks,
        idempotency_key=d.idempotency_key,
    )


def ecs_consumer_check(d: EcsJobDeclaration) -> tuple[ConsumerCheck, EcsServicePlan]:
    """The consumer's errors (those found where the props entered first) and warnings, and the service's plan."""
    service = plan_ecs_service(d.service)
    errors = [*d.errors, *_handler_problems(d), *_image_problems(d), *service.errors]
    errors += check_hooks(d.hooks)
    errors += check_idempotency_key(d.idempotency_key, d.queue.idempotency or "idempotency" in d.refused)
    consumer = check_ecs_consumer(
        concurrency=_or(d.concurrency, defaults.ECS_CONCURRENCY),
        min_tasks=_or(d.min_tasks, defaults.ECS_MIN_TASKS),
        max_tasks=_or(d.max_tasks, defaults.ECS_MAX_TASKS),
        shutdown_grace_s=d.shutdown_grace,
    )
    return ConsumerCheck(errors + consumer.errors, consumer.warnings), service


def _handler_problems(d: EcsJobDeclaration) -> list[str]:
    """``handler`` missing, or not an import path."""
    if d.handler is None and "handler" not in d.tokens and "handler" not in d.refused:
        return ["handler is required: pass the per-message function, e.g. 'media.transcode:handle'"]
    if d.handler is not None:
        return check_handler(d.handler, "package.module:function", "handler='media.transcode:handle'")
    return []


def _image_problems(d: EcsJobDeclaration) -> list[str]:
    """An image given beside ``image_directory``, or a default image without its ``Dockerfile``."""
    if d.image is not None and d.image_directory is not None:
        return [
            f"image_directory={d.image_directory!r} builds the default image, which image replaces: pass one of them"
        ]
    if d.image is None and not d.registry_image:
        return missing_dockerfile(d.image_directory or defaults.ECS_IMAGE_DIRECTORY)
    return []


def missing_dockerfile(image_directory: str) -> list[str]:
    """The error, if any, of building the default image from ``image_directory`` (relative to the current
    directory): checked here, as CDK's own error names neither the prop nor the fix."""
    dockerfile = os.path.join(os.path.abspath(image_directory), "Dockerfile")
    if os.path.isfile(dockerfile):
        return []
    return [
        f"image_directory={image_directory!r}: {dockerfile} does not exist (the default worker image is built "
        f"from the Dockerfile in image_directory, relative to the current directory {os.getcwd()}); pass "
        "image= your own image, or image_directory= a directory whose Dockerfile installs sqslease and your "
        f"handlers, or the registry image in context {defaults.IMAGE_CONTEXT}"
    ]


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
