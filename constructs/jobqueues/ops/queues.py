"""What SQS holds for a queue: its attributes (a queue that does not exist is an answer, not a failure), a job
type's VT and ``maxReceiveCount`` (what ``drift`` compares), and errors that name a queue that does not exist."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobqueues.ops.errors import NO_QUEUE, error_code

if TYPE_CHECKING:
    from jobqueues.ops.discovery import JobType

#: A queue's message counts, as SQS approximates them: visible, in flight, delayed.
MESSAGE_COUNTS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


def queue_attributes(sqs: Any, url: str, names: Sequence[str]) -> dict[str, str] | None:
    """The attributes ``names`` of the queue at ``url``; ``None`` when it no longer exists."""
    from botocore.exceptions import ClientError

    try:
        response = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))
    except ClientError as error:
        if error_code(error) in NO_QUEUE:
            return None
        raise
    return dict(response.get("Attributes", {}))


def message_counts(sqs: Any, url: str) -> tuple[int, int, int]:
    """The visible, in-flight and delayed messages of the queue at ``url`` (:data:`MESSAGE_COUNTS`)."""
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(MESSAGE_COUNTS))["Attributes"]
    visible, in_flight, delayed = (int(attributes.get(name, 0)) for name in MESSAGE_COUNTS)
    return visible, in_flight, delayed


def queue_name(url: str) -> str:
    """The name of the queue at ``url``: its path's last part."""
    return url.rstrip("/").rsplit("/", 1)[-1]


#: Why a stack's own queue is missing, and where its way back is: not a deploy (it finds no change in the template).
DELETED_OUTSIDE_ITS_STACK = (
    'deleted outside its stack, which a deploy does not undo: see "A queue deleted outside its stack" in docs/cli.md'
)


def missing_queue(url: str, adopted: bool | None = None) -> str:
    """What to say of the queue at ``url`` that does not exist, and how it comes back.

    :param adopted: whether its job type adopted it (``JobQueue.from_queue_attributes``: its owner creates it) or its
        stack made it. A deploy does not create a stack's queue again: CloudFormation compares templates, not
        queues, and finds no change (docs/cli.md says the ways back). Default ``None``: not known (an SDK error of
        any command), and both are said.
    """
    if adopted is None:
        why = "deleted outside its stack? An adopted queue is created by its owner"
    elif adopted:
        why = "adopted with JobQueue.from_queue_attributes: its owner creates it"
    else:
        why = DELETED_OUTSIDE_ITS_STACK
    return f"queue {queue_name(url)} does not exist ({why})"


def name_missing_queues(sqs: Any) -> Any:
    """``sqs`` (a client) whose error for a queue that does not exist names the queue, where SQS says only "The
    specified queue does not exist": a job type's queue deleted outside its stack, or an adopted one never created.
    Returns it."""

    def remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["jobqueues_queue_url"] = params.get("QueueUrl")

    def name(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        error, url = parsed.get("Error") or {}, context.get("jobqueues_queue_url")
        if error.get("Code") in NO_QUEUE and url:
            error["Message"] = missing_queue(url)

    sqs.meta.events.register("before-parameter-build.sqs", remember)
    sqs.meta.events.register("after-call.sqs", name)
    return sqs


@dataclass(frozen=True)
class Deployed:
    """What SQS holds for a queue: its VT (s) and ``maxReceiveCount``; ``None`` when unknown. ``missing``: the
    queue does not exist (deleted outside its stack, or an adopted queue not created). Default False."""

    visibility_timeout_s: int | None
    max_receive_count: int | None
    missing: bool = False


def read_deployed(sqs: Any, job_types: Sequence[JobType]) -> dict[str, Deployed]:
    """The VT and ``maxReceiveCount`` SQS holds for each deployed job type's queue (one call per queue); a queue
    deleted outside its stack reads as unknown and ``missing`` (its row says so: :func:`missing_queue`)."""
    found = {}
    for job in job_types:
        if job.queue_url is None:
            continue
        attributes = queue_attributes(sqs, job.queue_url, ["VisibilityTimeout", "RedrivePolicy"])
        if attributes is None:
            found[job.name] = Deployed(None, None, missing=True)
            continue
        redrive = json.loads(attributes["RedrivePolicy"]) if attributes.get("RedrivePolicy") else {}
        count = redrive.get("maxReceiveCount")
        found[job.name] = Deployed(int(attributes["VisibilityTimeout"]), None if count is None else int(count))
    return found
