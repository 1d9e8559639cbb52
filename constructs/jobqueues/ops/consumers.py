"""A job type's consumer as its stack deploys it: a Lambda function or an ECS service, read from its marker
(:mod:`jobqueues.marker`) and its template (the log group its lines go to)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobqueues.marker_format import IMAGE_DIRECTORY_MARKER
from jobqueues.ops.stack_template import StackTemplate


@dataclass(frozen=True)
class LambdaConsumer:
    """A job type's Lambda function, as deployed. Durations in seconds."""

    function_name: str | None
    log_group: str | None
    timeout_s: float | None = None
    batch_size: int | None = None
    max_batching_window_s: float = 0
    max_concurrency: int | None = None
    kind: str = "lambda"
    #: The stack holding the function (its job queue's may be another: see :mod:`jobqueues.ops.discovery`).
    stack: str = ""


@dataclass(frozen=True)
class EcsConsumer:
    """A job type's ECS service, as deployed: the worker's task definition and its scaling bounds."""

    service: str | None  # ARN
    cluster: str | None
    task_definition: str | None  # ARN
    log_group: str | None
    log_stream_prefix: str | None = None
    #: The default image's build directory, relative to the app's (``None``: an image of your own).
    image_directory: str | None = None
    min_tasks: int = 0
    max_tasks: int = 1
    target_backlog_per_task: float = 1
    kind: str = "ecs"
    #: The stack holding the service (its job queue's may be another: see :mod:`jobqueues.ops.discovery`).
    stack: str = ""


def consumer_of(stack: StackTemplate, resource: dict[str, Any], marker: dict[str, Any]) -> LambdaConsumer | EcsConsumer:
    if marker["kind"] == "lambda":
        function_name = stack.named(marker.get("function"))
        logging = resource.get("Properties", {}).get("LoggingConfig", {})
        log_group = stack.value(logging.get("LogGroup"))
        if log_group is None and function_name is not None and "LogGroup" not in logging:
            log_group = f"/aws/lambda/{function_name}"
        return LambdaConsumer(
            stack=stack.name,
            function_name=function_name,
            log_group=log_group,
            timeout_s=marker.get("timeout_s"),
            batch_size=marker.get("batch_size"),
            max_batching_window_s=marker.get("max_batching_window_s") or 0,
            max_concurrency=marker.get("max_concurrency"),
        )
    log_group, prefix = _ecs_log_group(stack, marker.get("task_definition"))
    return EcsConsumer(
        stack=stack.name,
        service=stack.named(marker.get("service")),
        cluster=stack.named(marker.get("cluster")),
        task_definition=stack.named(marker.get("task_definition")),
        log_group=log_group,
        log_stream_prefix=prefix,
        image_directory=(resource.get("Metadata") or {}).get(IMAGE_DIRECTORY_MARKER),
        min_tasks=int(marker.get("min_tasks", 0)),
        max_tasks=int(marker.get("max_tasks", 1)),
        target_backlog_per_task=float(marker.get("target_backlog_per_task", 1)),
    )


def _ecs_log_group(stack: StackTemplate, task_definition: Any) -> tuple[str | None, str | None]:
    """The ``awslogs`` group and stream prefix of the task definition's first container that logs there."""
    if not isinstance(task_definition, dict) or "logical_id" not in task_definition:
        return None, None
    resource = stack.template.get("Resources", {}).get(task_definition["logical_id"], {})
    for container in resource.get("Properties", {}).get("ContainerDefinitions", []):
        options = (container.get("LogConfiguration") or {}).get("Options") or {}
        if "awslogs-group" in options:
            return stack.value(options["awslogs-group"]), stack.value(options.get("awslogs-stream-prefix"))
    return None, None
