"""The markers a job type leaves in its stack's template, where the ``jobqueues`` command finds it after a deploy.

Never the queue-name convention (``queue_name=`` breaks it): every job queue's source queue resource carries
:data:`QUEUE_MARKER` (its job type, construct path, queues and declared numbers) and every consumer's resource
carries :data:`CONSUMER_MARKER` (its kind, resources and scaling), joined on the job queue's construct path. An
imported job queue has no resource of its own: its consumer's marker carries the queue part too.

A queue marker is written in the template's own ``Metadata`` under
:data:`jobqueues.marker_format.RESOURCE_MARKERS`, by its source queue's logical id, all of a stack's at once when
the template is rendered: on the resource itself it cost three round trips to the CDK's Node kernel a job type (the
queue's resource, two reads, and the metadata), a third of a job queue's cost over the same resources written by
hand. There its numbers that are no integers are written as decimal text, which cfn-lint accepts
(:func:`jobqueues.marker_format.template_marker`); :func:`jobqueues.marker_format.resource_metadata` reads a
resource's markers from either place, as the same values.

A queue adopted with ``JobQueue.from_queue_attributes`` has no resource: its queue marker is written there under
its construct path (:func:`mark_adopted_job_queue`), and a consumer bound to it carries the same part.

A marker names a resource by its logical id in the marker's stack (``{"logical_id": ...}``), or by a literal
(``{"arn": ...}``, ``{"name": ...}``) for one made elsewhere. Never a ``Ref``: CloudFormation reads a ``Ref`` in
metadata as a dependency (a queue's marker would depend on the queue itself), and a token of another stack's
resource would make CDK export it. A resource of another stack, known only by a token, is left out (``None``);
:mod:`jobqueues.ops.discovery` reports it as not found.
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import CfnResource, IAnyProducer, IResolveContext, Lazy, Stack, Token
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from jobqueues.inputs import is_token
from jobqueues.interface import IJobQueue
from jobqueues.marker_format import (
    CONSUMER_MARKER,
    MARKER_VERSION,
    QUEUE_MARKER,
    RESOURCE_MARKERS,
    template_marker,
)
from jobqueues.registry import StackRegistry


def mark_job_queue(
    job_queue: IJobQueue,
    registry: StackRegistry,
    path: str,
    queue: dict[str, str],
    dead_letter_queue: dict[str, str] | None,
    payload_bucket: dict[str, str] | None = None,
) -> None:
    """Put the queue marker of a declared ``JobQueue`` at construct ``path`` in its stack's template (``registry``'s),
    by its source queue's logical id, ``queue`` (``{"logical_id": ...}``), with the references to its dead-letter
    queue (:func:`reference`'s form), known to its caller without a round-trip, and to its payload bucket
    (:func:`payload_bucket_reference`; ``None``: none)."""
    part = _queue_part(job_queue, path, queue, dead_letter_queue, payload_bucket)
    # a None is left out, as the kernel leaves it out of a resource's metadata
    _stack_markers(registry).setdefault(queue["logical_id"], {})[QUEUE_MARKER] = template_marker(
        {k: v for k, v in part.items() if v is not None}
    )


def mark_adopted_job_queue(job_queue: IJobQueue, registry: StackRegistry) -> None:
    """Put the queue marker of a queue adopted with ``JobQueue.from_queue_attributes`` in its stack's template
    (``registry``'s), under its construct path: it has no resource of its own to be named by. So the ``jobqueues``
    command finds it with no consumer bound through jobqueues too (a service of the team's own running its
    ``worker_command``); a consumer bound to it carries the same part (:func:`mark_consumer`)."""
    part = queue_part(job_queue, registry.stack)
    _stack_markers(registry).setdefault(part["path"], {})[QUEUE_MARKER] = template_marker(
        {k: v for k, v in part.items() if v is not None}
    )


def _stack_markers(registry: StackRegistry) -> dict[str, dict[str, Any]]:
    """The markers of ``registry``'s stack by logical id: put in its template's metadata on first use, rendered with
    it (one lazy value a stack; :data:`RESOURCE_MARKERS`)."""
    markers: dict[str, dict[str, Any]] | None = registry.cache.get(RESOURCE_MARKERS)
    if markers is None:
        markers = registry.cache[RESOURCE_MARKERS] = {}
        registry.stack.add_metadata(RESOURCE_MARKERS, Lazy.uncached_any(_Markers(markers)))
        registry.budget.checks.append(lambda: _markers_kept(registry.stack))
    return markers


def _markers_kept(stack: Stack) -> list[str]:
    """A stack whose template metadata lost its markers, refused: ``template_options.metadata`` set wholesale after
    the job queues were declared would drop them, and the ``jobqueues`` command could not find the job types."""
    if RESOURCE_MARKERS in (stack.template_options.metadata or {}):
        return []
    return [
        f"the stack's template_options.metadata was replaced after its job queues were declared, which drops "
        f"their markers ({RESOURCE_MARKERS}: the jobqueues command finds the job types by them). Add your keys "
        "with stack.add_metadata(key, value) instead, or set template_options.metadata before declaring them"
    ]


@jsii.implements(IAnyProducer)
class _Markers:
    """A stack's markers, as the template is rendered."""

    def __init__(self, markers: dict[str, dict[str, Any]]) -> None:
        self._markers = markers

    def produce(self, context: IResolveContext) -> Any:
        return self._markers


def mark_consumer(
    job_queue: IJobQueue, consumer: IConstruct, part: dict[str, Any], resource: CfnResource | None = None
) -> None:
    """Put the consumer marker on ``consumer``'s template resource: ``part`` (the kind and its facts), the job
    queue's path, and the queue part when the job queue has no resource of its own (an imported one).

    :param resource: ``consumer``'s template resource, when the caller has it. Default: looked up.
    """
    if resource is None:
        found = consumer.node.default_child
        if not isinstance(found, CfnResource):
            return
        resource = found
    # A jobqueues construct knows its path and whether it owns its queues without asking the kernel.
    path = getattr(job_queue, "construct_path", None) or job_queue.node.path
    marker: dict[str, Any] = {"version": MARKER_VERSION, "path": path, **part}
    owns_queues = getattr(job_queue, "owns_queues", None)
    if owns_queues is False or (
        owns_queues is None and not isinstance(job_queue.queue.node.default_child, CfnResource)
    ):
        marker["queue"] = queue_part(job_queue, Stack.of(resource))
    resource.add_metadata(CONSUMER_MARKER, _local(marker))


def queue_part(job_queue: IJobQueue, stack: Stack) -> dict[str, Any]:
    """The job type, its queues and the numbers it declared, in seconds (``None``: not declared)."""
    queue, dead_letter_queue = _queue(job_queue.queue, stack), _queue(job_queue.dead_letter_queue, stack)
    bucket = payload_bucket_reference(job_queue, stack)
    return _queue_part(job_queue, job_queue.node.path, queue, dead_letter_queue, bucket)


def payload_bucket_reference(job_queue: IJobQueue, stack: Stack) -> dict[str, str] | None:
    """How a marker of ``stack`` names ``job_queue``'s payload bucket (:func:`reference`); ``None`` without one (no
    round-trip)."""
    bucket = job_queue.payload_bucket
    return None if bucket is None else reference(bucket, bucket.bucket_name, "name", stack)


def _queue_part(
    job_queue: IJobQueue,
    path: str,
    queue: dict[str, str] | None,
    dead_letter_queue: dict[str, str] | None,
    payload_bucket: dict[str, str] | None = None,
) -> dict[str, Any]:
    bucket = {"payload_bucket": payload_bucket} if payload_bucket is not None else {}
    return _local(
        {
            "version": MARKER_VERSION,
            "job_type": job_queue.job_type,
            "path": path,
            "queue": queue,
            "dead_letter_queue": dead_letter_queue,
            "fifo": job_queue.fifo,
            "fair": job_queue.fair,
            "visibility_timeout_s": job_queue.visibility_timeout_seconds,
            "lease_extension": job_queue.lease_extension,
            "processing_p99_s": job_queue.processing_p99_seconds,
            "max_processing_time_s": job_queue.max_processing_time_seconds,
            "lambda_timeout_s": job_queue.lambda_timeout_seconds,
            "max_batching_window_s": job_queue.max_batching_window_seconds,
            **bucket,
        }
    )


def reference(construct: IConstruct, literal: str, kind: str, stack: Stack) -> dict[str, str] | None:
    """How a marker of ``stack`` names ``construct``: ``{"logical_id": ...}`` for a resource of ``stack``, else
    ``{kind: literal}`` when ``literal`` (its ARN or name) is no token; ``None`` if neither."""
    resource = construct.node.default_child
    if isinstance(resource, CfnResource) and Stack.of(resource) is stack:
        return {"logical_id": stack.get_logical_id(resource)}
    if not Token.is_unresolved(literal):
        return {kind: literal}
    return None


def _queue(queue: sqs.IQueue, stack: Stack) -> dict[str, str] | None:
    return reference(queue, queue.queue_arn, "arn", stack)


def _local(marker: dict[str, Any]) -> dict[str, Any]:
    """Numbers that are tokens (a CloudFormation parameter, say) become ``None``: a marker holds what synth knew."""
    # is_token asks the CDK's Node kernel only about a number that can be a token (each ask is a round-trip)
    return {k: None if isinstance(v, float | int) and is_token(v) else v for k, v in marker.items()}
