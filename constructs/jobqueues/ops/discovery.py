"""The job types of deployed (or synthesized) stacks, found from the markers their constructs leave
(:mod:`jobqueues.marker`), never from queue names.

:func:`discover` reads every stack CloudFormation lists (or those named), their templates and physical ids, on
AWS as on the emulator; :func:`discover_templates` reads synthesized templates (``jobqueues drift --app``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from jobqueues.marker_format import CONSUMER_MARKER, IMAGE_DIRECTORY_MARKER, MARKER_VERSION, QUEUE_MARKER
from jobqueues.ops import intrinsics
from jobqueues.ops.errors import NotFound, OpsError
from sqslease.emf import deployment_name

#: Stack states in which a stack's resources exist.
LIVE_STATES = frozenset(
    {
        "CREATE_COMPLETE",
        "UPDATE_COMPLETE",
        "UPDATE_ROLLBACK_COMPLETE",
        "UPDATE_IN_PROGRESS",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
        "IMPORT_COMPLETE",
        "IMPORT_ROLLBACK_COMPLETE",
    }
)


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


@dataclass(frozen=True)
class JobType:
    """One job type: where its queues are and what it declared (seconds; ``None``: not declared or unknown).

    ``queue_url`` and ``dead_letter_queue_url`` are ``None`` when read from a synthesized template, or when the
    queue is another stack's (see :mod:`jobqueues.marker`). ``max_receive_count`` is the template's. ``fair``: the
    job type declared its queue fair (its message groups are tenants; docs/fair-queues.md).
    """

    job_type: str
    stack: str
    path: str
    queue_url: str | None
    dead_letter_queue_url: str | None
    fifo: bool = False
    visibility_timeout_s: float | None = None
    max_receive_count: int | None = None
    processing_p99_s: float | None = None
    max_processing_time_s: float | None = None
    lambda_timeout_s: float | None = None
    max_batching_window_s: float = 0
    lease_extension: bool = False
    consumer: LambdaConsumer | EcsConsumer | None = None
    fair: bool = False

    @property
    def name(self) -> str:
        """``stack/job type``: unique even when two stages deploy the same job type; what its consumers' EMF lines
        are measured as (:func:`sqslease.emf.deployment_name`)."""
        return deployment_name(self.stack, self.job_type)


@dataclass
class StackTemplate:
    """A stack's name, account, region, template and physical ids (empty for a synthesized one)."""

    name: str
    template: dict[str, Any]
    account: str = ""
    region: str = ""
    physical_ids: dict[str, str] = field(default_factory=dict)

    def value(self, value: Any) -> Any:
        """A template value with its intrinsics computed; ``None`` if it cannot be (a template not deployed)."""
        if value is None:
            return None
        try:
            return intrinsics.resolve(value, self)
        except intrinsics.Unresolvable:
            return None

    def named(self, reference: dict[str, str] | None) -> str | None:
        """What a marker's reference names: a logical id's physical id (a queue's URL, a function's name, a
        service's ARN), or the literal (``arn``, ``name``); a queue ARN becomes its URL. ``None``: unknown."""
        if not reference:
            return None
        if "logical_id" in reference:
            return self.physical_ids.get(reference["logical_id"])
        arn = reference.get("arn")
        if arn is not None and arn.startswith("arn:") and ":sqs:" in arn:
            _, partition, _, region, account, name = arn.split(":", 5)
            suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
            return f"https://sqs.{region}.{suffix}/{account}/{name}"
        return arn or reference.get("name")


@dataclass(frozen=True)
class Discovery:
    """Every job type found, and the stacks searched."""

    job_types: list[JobType]
    stacks: list[str]

    def find(self, job_type: str, stack: str | None = None) -> JobType:
        """The job type named ``job_type`` (or ``stack/job type``); :class:`NotFound` naming those that exist."""
        if "/" in job_type and stack is None:
            stack, job_type = job_type.rsplit("/", 1)
        matches = [j for j in self.job_types if j.job_type == job_type and stack in (None, j.stack)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise NotFound(
                f"job type {job_type} is in {len(matches)} stacks ({', '.join(j.stack for j in matches)}): "
                f"pass --stack, or name it as STACK/{job_type}"
            )
        known = ", ".join(j.name for j in self.job_types) or "none"
        where = f"stack {stack}" if stack else f"{len(self.stacks)} stacks searched"
        raise NotFound(f"no job type {job_type} in {where}; job types: {known}")


def job_types_in(stacks: Iterable[StackTemplate]) -> list[JobType]:
    """The job types whose markers are in ``stacks``' templates, references computed where they can be; a
    queue marker and a consumer marker are joined on the stack and the job queue's construct path."""
    job_types: dict[tuple[str, str], JobType] = {}  # (stack, path): paths repeat across apps, stacks do not
    consumers: dict[tuple[str, str], LambdaConsumer | EcsConsumer] = {}
    for stack in stacks:
        resources: dict[str, Any] = stack.template.get("Resources", {})
        for resource in resources.values():
            metadata = resource.get("Metadata") or {}
            queue_marker = _marker(stack, metadata, QUEUE_MARKER)
            consumer_marker = _marker(stack, metadata, CONSUMER_MARKER)
            if queue_marker is not None:
                job_types[stack.name, queue_marker["path"]] = _job_type(stack, queue_marker)
            if consumer_marker is not None:
                consumers[stack.name, consumer_marker["path"]] = _consumer(stack, resource, consumer_marker)
                if "queue" in consumer_marker:  # an imported job queue: its marker is the consumer's
                    job_types[stack.name, consumer_marker["path"]] = _job_type(stack, consumer_marker["queue"])
    found = [replace(j, consumer=consumers.get(key)) for key, j in job_types.items()]
    return sorted(found, key=lambda j: (j.job_type, j.stack))


def _marker(stack: StackTemplate, metadata: dict[str, Any], key: str) -> dict[str, Any] | None:
    marker: dict[str, Any] | None = metadata.get(key)
    if marker is not None and marker.get("version", 0) > MARKER_VERSION:
        raise OpsError(
            f"stack {stack.name} was deployed by a newer jobqueues (marker version {marker['version']}): "
            "upgrade cdk-jobqueues"
        )
    return marker


def _job_type(stack: StackTemplate, marker: dict[str, Any]) -> JobType:
    queue_resource = stack.template.get("Resources", {}).get((marker.get("queue") or {}).get("logical_id", ""), {})
    return JobType(
        job_type=marker["job_type"],
        stack=stack.name,
        path=marker["path"],
        queue_url=stack.named(marker.get("queue")),
        dead_letter_queue_url=stack.named(marker.get("dead_letter_queue")),
        fifo=bool(marker.get("fifo")),
        visibility_timeout_s=marker.get("visibility_timeout_s"),
        max_receive_count=_max_receive_count(queue_resource),
        processing_p99_s=marker.get("processing_p99_s"),
        max_processing_time_s=marker.get("max_processing_time_s"),
        lambda_timeout_s=marker.get("lambda_timeout_s"),
        max_batching_window_s=marker.get("max_batching_window_s") or 0,
        lease_extension=bool(marker.get("lease_extension")),
        fair=bool(marker.get("fair")),
    )


def discover_templates(stacks: Iterable[StackTemplate]) -> Discovery:
    """The job types of synthesized templates (no physical ids: URLs are ``None``)."""
    stacks = list(stacks)
    return Discovery(job_types_in(stacks), sorted(s.name for s in stacks))


def discover(cloudformation: Any, stack_names: list[str] | None = None) -> Discovery:
    """The job types of the deployed stacks ``cloudformation`` (a boto3 client) lists, or of ``stack_names``.

    Reads each stack's template and resources, eight stacks at a time. A named stack that does not exist is a
    :class:`NotFound` naming those that do.
    """
    live = _live_stacks(cloudformation)
    if stack_names:
        missing = [n for n in stack_names if n not in live]
        if missing:
            raise NotFound(f"no deployed stack {', '.join(missing)}; stacks: {', '.join(sorted(live)) or 'none'}")
        live = {n: live[n] for n in stack_names}
    with ThreadPoolExecutor(max_workers=8) as pool:
        templates = list(pool.map(lambda item: _load(cloudformation, *item), sorted(live.items())))
    return Discovery(job_types_in(templates), sorted(live))


def _live_stacks(cloudformation: Any) -> dict[str, str]:
    """Stack name -> stack id, for every stack whose resources exist."""
    stacks = {}
    for page in cloudformation.get_paginator("list_stacks").paginate():
        for summary in page["StackSummaries"]:
            if summary["StackStatus"] in LIVE_STATES:
                stacks[summary["StackName"]] = summary["StackId"]
    return stacks


def _load(cloudformation: Any, name: str, stack_id: str) -> StackTemplate:
    body = cloudformation.get_template(StackName=name, TemplateStage="Original")["TemplateBody"]
    if isinstance(body, str) and QUEUE_MARKER not in body and CONSUMER_MARKER not in body:
        # No job type here (the CDK bootstrap stack, say, which is YAML): skip its resources too.
        return StackTemplate(name, {})
    template = json.loads(body) if isinstance(body, str) else dict(body)
    physical_ids = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=name):
        for resource in page["StackResourceSummaries"]:
            if "PhysicalResourceId" in resource:
                physical_ids[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    _, _, _, region, account, _ = stack_id.split(":", 5)
    return StackTemplate(name, template, account, region, physical_ids)


def _max_receive_count(resource: dict[str, Any]) -> int | None:
    redrive = resource.get("Properties", {}).get("RedrivePolicy")
    if isinstance(redrive, str):
        redrive = json.loads(redrive)
    count = redrive.get("maxReceiveCount") if isinstance(redrive, dict) else None
    return int(count) if isinstance(count, int | str) and str(count).isdigit() else None


def _consumer(stack: StackTemplate, resource: dict[str, Any], marker: dict[str, Any]) -> LambdaConsumer | EcsConsumer:
    if marker["kind"] == "lambda":
        function_name = stack.named(marker.get("function"))
        logging = resource.get("Properties", {}).get("LoggingConfig", {})
        log_group = stack.value(logging.get("LogGroup"))
        if log_group is None and function_name is not None and "LogGroup" not in logging:
            log_group = f"/aws/lambda/{function_name}"
        return LambdaConsumer(
            function_name=function_name,
            log_group=log_group,
            timeout_s=marker.get("timeout_s"),
            batch_size=marker.get("batch_size"),
            max_batching_window_s=marker.get("max_batching_window_s") or 0,
            max_concurrency=marker.get("max_concurrency"),
        )
    log_group, prefix = _ecs_log_group(stack, marker.get("task_definition"))
    return EcsConsumer(
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
