"""The job types of deployed (or synthesized) stacks, found from the markers their constructs leave
(:mod:`jobqueues.marker`), never from queue names.

:func:`discover` reads every stack CloudFormation lists (or those named), their templates and physical ids, on
AWS as on the emulator; :func:`discover_templates` reads synthesized templates (``jobqueues drift --app``).

A consumer's marker is joined to its job queue's on the job queue's construct path: in the consumer's own stack,
else in another stack of the account and region (``add_lambda_consumer`` and ``add_ecs_consumer`` with a function
or service of another stack); when two stacks hold a job queue of that path (two apps alike), the one the
consumer's stack imports from (its ``Fn::ImportValue`` names start with the exporting stack's name).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from jobqueues.marker_format import CONSUMER_MARKER, MARKER_VERSION, QUEUE_MARKER, resource_metadata

# A job type's parts, importable from here with it (``as``: a re-export).
from jobqueues.ops.consumers import EcsConsumer as EcsConsumer
from jobqueues.ops.consumers import LambdaConsumer as LambdaConsumer
from jobqueues.ops.consumers import consumer_of
from jobqueues.ops.errors import NotFound, OpsError
from jobqueues.ops.name_hints import construct_paths, resource_names
from jobqueues.ops.parallel_reads import read_pool
from jobqueues.ops.stack_template import StackTemplate as StackTemplate
from jobqueues.ops.stack_template import imported_stacks
from jobqueues.ops.unknown_names import (
    check_stack,
    no_deployed_stacks,
    no_job_type,
    no_job_type_in,
    no_stack,
    not_a_name,
    split_name,
)
from sqslease.emf import deployment_name

#: The advice for a stack not among the deployed ones listed: it may be in another region or account.
NOT_HERE = "pass the --region or --profile it is deployed with"

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
    payload_bucket: str | None = None  # for bodies larger than the queue takes (None: none, or not deployed)
    adopted: bool = False  # its queue is no resource of its stack (``JobQueue.from_queue_attributes``): its owner's

    @property
    def name(self) -> str:
        """``stack/job type``: unique even when two stages deploy the same job type; what its consumers' EMF lines
        are measured as (:func:`sqslease.emf.deployment_name`)."""
        return deployment_name(self.stack, self.job_type)


@dataclass(frozen=True)
class Discovery:
    """Every job type found, the stacks searched, and where they were searched (``region R, account A``; empty for
    synthesized templates)."""

    job_types: list[JobType]
    stacks: list[str]
    where: str = ""
    not_here: str = ""  # the advice for a stack not among those searched (deployed: the region or profile)

    def find(self, job_type: str, stack: str | None = None) -> JobType:
        """The job type named ``job_type`` (or ``stack/job type``); :class:`NotFound` naming those that exist, or
        the stacks searched when ``stack`` is none of them (:mod:`jobqueues.ops.unknown_names`)."""
        names, paths, resources = [j.name for j in self.job_types], construct_paths(self.job_types), self._resources()
        line = not_a_name(job_type, names, self.stacks, self.where, resources, paths)
        if line is not None:  # a URL, an ARN or a construct path, as `cdk` and the console spell them
            raise NotFound(line)
        stack, job_type = split_name(job_type, stack)
        if stack is not None and stack not in self.stacks:
            where, not_here = self.where, self.not_here
            raise NotFound(no_stack(stack, job_type, names, self.stacks, where, not_here, resources, paths))
        matches = [j for j in self.job_types if j.job_type == job_type and stack in (None, j.stack, _consumer_stack(j))]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise NotFound(
                f"job type {job_type} is in {len(matches)} stacks ({', '.join(j.stack for j in matches)}): "
                f"pass --stack, or name it as STACK/{job_type}"
            )
        if stack is None:
            raise NotFound(no_job_type(job_type, names, self.stacks, self.where, self.not_here, resources, paths))
        own = sorted({j.job_type for j in self.job_types if stack in (j.stack, _consumer_stack(j))})
        raise NotFound(no_job_type_in(stack, job_type, own, names, resources))

    def _resources(self) -> dict[str, tuple[str, str]]:
        return resource_names(self.job_types)


def job_types_in(stacks: Iterable[StackTemplate]) -> list[JobType]:
    """The job types whose markers are in ``stacks``' templates, references computed where they can be; a
    consumer marker is joined to its job queue's on the construct path (:func:`_job_queue_of`)."""
    job_types: dict[tuple[str, str], JobType] = {}  # (stack, path): paths repeat across apps, stacks do not
    consumers: list[tuple[StackTemplate, str, LambdaConsumer | EcsConsumer]] = []
    for stack in stacks:
        resources: dict[str, Any] = stack.template.get("Resources", {})
        for logical_id, metadata in _resource_metadata(stack).items():
            resource = resources.get(logical_id) or {}
            queue_marker = _marker(stack, metadata, QUEUE_MARKER)
            consumer_marker = _marker(stack, metadata, CONSUMER_MARKER)
            if queue_marker is not None:
                job_types[stack.name, queue_marker["path"]] = _job_type(stack, queue_marker)
            if consumer_marker is not None:
                consumers.append((stack, consumer_marker["path"], consumer_of(stack, resource, consumer_marker)))
                if "queue" in consumer_marker:  # an imported job queue: its marker is the consumer's
                    job_types[stack.name, consumer_marker["path"]] = _job_type(stack, consumer_marker["queue"])
    joined: dict[tuple[str, str], LambdaConsumer | EcsConsumer] = {}
    for stack, path, consumer in consumers:
        key = _job_queue_of(stack, path, job_types)
        if key is not None:
            joined[key] = consumer
    found = [replace(j, consumer=joined.get(key)) for key, j in job_types.items()]
    return sorted(found, key=lambda j: (j.job_type, j.stack))


def _job_queue_of(stack: StackTemplate, path: str, job_types: dict[tuple[str, str], JobType]) -> tuple[str, str] | None:
    """The key of the job queue a consumer of ``stack`` names by ``path``: in its own stack, else the one other
    stack holding that path, else among several the one ``stack`` imports from; ``None`` when none is certain."""
    if (stack.name, path) in job_types:
        return stack.name, path
    candidates = [key for key in job_types if key[1] == path]
    if len(candidates) > 1:
        imported = imported_stacks(stack.template)
        candidates = [key for key in candidates if key[0] in imported]
    return candidates[0] if len(candidates) == 1 else None


def _consumer_stack(job: JobType) -> str | None:
    return job.consumer.stack if job.consumer is not None else None


def _resource_metadata(stack: StackTemplate) -> dict[str, dict[str, Any]]:
    """``stack``'s resources' metadata, its markers merged in (:func:`resource_metadata`); a marker that cannot be
    read is an :class:`OpsError` naming the stack."""
    try:
        return resource_metadata(stack.template)
    except ValueError as error:
        raise OpsError(f"stack {stack.name}: {error}") from error


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
        payload_bucket=stack.named(marker.get("payload_bucket")),
        adopted="logical_id" not in (marker.get("queue") or {}),
    )


def discover_templates(stacks: Iterable[StackTemplate]) -> Discovery:
    """The job types of synthesized templates (no physical ids: URLs are ``None``)."""
    stacks = list(stacks)
    return Discovery(job_types_in(stacks), sorted(s.name for s in stacks), "the synthesized app")


def discover(cloudformation: Any, stack_names: list[str] | None = None) -> Discovery:
    """The job types of the deployed stacks ``cloudformation`` (a boto3 client) lists, or of ``stack_names``.

    Reads each stack's template and resources, eight stacks at a time. A named stack that does not exist is a
    :class:`NotFound` naming those that do. A job type is of the stacks named when its queue or its consumer is in
    one: a named stack's consumer of another stack's job queue, or a named stack's job queue without a consumer
    there (it may be another stack's), has the other stacks read too, to join them.
    """
    for name in stack_names or ():
        check_stack(name)
    live = _live_stacks(cloudformation)
    searched = live
    if stack_names:
        missing = [n for n in stack_names if n not in live]
        if missing:  # every stack read, for a job type's or a queue's name given as a stack's
            every = job_types_in(_load_all(cloudformation, live))
            where, names, paths = _where(cloudformation, live), [j.name for j in every], construct_paths(every)
            resources = resource_names(every)
            raise NotFound(no_deployed_stacks(missing, list(live), where, NOT_HERE, names, resources, paths))
        searched = {n: live[n] for n in stack_names}
    templates = _load_all(cloudformation, searched)
    job_types = job_types_in(templates)
    if searched is not live and (_consumers_elsewhere(templates) or any(j.consumer is None for j in job_types)):
        # a consumer of another stack's job queue, or a job queue whose consumer may be in another stack
        templates += _load_all(cloudformation, {n: i for n, i in live.items() if n not in searched})
        job_types = job_types_in(templates)
    job_types = [j for j in job_types if j.stack in searched or _consumer_stack(j) in searched]
    return Discovery(job_types, sorted(searched), _where(cloudformation, live), NOT_HERE)


def _load_all(cloudformation: Any, stacks: dict[str, str]) -> list[StackTemplate]:
    with read_pool() as pool:
        return list(pool.map(lambda item: _load(cloudformation, *item), sorted(stacks.items())))


def _consumers_elsewhere(stacks: list[StackTemplate]) -> bool:
    """Whether a consumer marker of ``stacks`` names a job queue none of them holds (another stack's)."""
    paths: dict[str, set[str]] = {QUEUE_MARKER: set(), CONSUMER_MARKER: set()}
    for stack in stacks:
        for metadata in _resource_metadata(stack).values():
            for key, marker in metadata.items():
                if key in paths and isinstance(marker, dict) and "queue" not in marker:
                    paths[key].add(marker.get("path", ""))
    return bool(paths[CONSUMER_MARKER] - paths[QUEUE_MARKER])


def _where(cloudformation: Any, live: dict[str, str]) -> str:
    """``region R`` and, when a stack's id tells it, ``, account A``: where the stacks were listed."""
    accounts = {stack_id.split(":")[4] for stack_id in live.values() if stack_id.count(":") >= 5}
    region = f"region {cloudformation.meta.region_name}"
    return f"{region}, account {accounts.pop()}" if len(accounts) == 1 else region


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
