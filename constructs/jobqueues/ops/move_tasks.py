"""SQS's move tasks as they are after a redrive asked for one: the latest task's state, and the cancel asked on
the way out of an interrupt (:mod:`jobqueues.ops.redrive` starts and follows them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobqueues.ops.errors import error_code


class Interrupted(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` while following a move task, after its cancel was asked; ``cancel_error``: why the
    cancel failed (``None``: it was accepted, or the task had ended)."""

    def __init__(self, cancel_error: str | None) -> None:
        super().__init__(cancel_error)
        self.cancel_error = cancel_error


@dataclass(frozen=True)
class MoveTaskState:
    """The latest move task on a DLQ as SQS lists it: its status (RUNNING, CANCELLING, CANCELLED, COMPLETED,
    FAILED) and its approximate progress."""

    status: str
    moved: int
    to_move: int


def queue_arn(sqs: Any, url: str) -> str:
    """The ARN of the queue at ``url``."""
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def _running_handle(sqs: Any, source_arn: str) -> str | None:
    """The handle of the newest task on ``source_arn``, if it has one."""
    tasks = sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=1)["Results"]
    return str(tasks[0]["TaskHandle"]) if tasks and tasks[0].get("TaskHandle") else None


def cancel_on_interrupt(sqs: Any, source_arn: str, handle: str | None) -> str | None:
    """Cancel the task (``handle``, else the newest on ``source_arn``) on the way out of an interrupt: what went
    wrong, or ``None``. A task that ended meanwhile needs no cancel; what is left stays in the DLQ."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        handle = handle or _running_handle(sqs, source_arn)
        if handle:
            sqs.cancel_message_move_task(TaskHandle=handle)
    except ClientError as error:
        if "ResourceNotFound" in error_code(error) or "not RUNNING" in str(error):
            return None  # it ended, or a first Ctrl-C's cancel is under way
        return str(error)
    except BotoCoreError as error:
        return str(error)
    return None


def move_task_state(sqs: Any, dlq_url: str) -> MoveTaskState | None:
    """The newest move task on the DLQ at ``dlq_url`` (``None``: there is none)."""
    tasks = sqs.list_message_move_tasks(SourceArn=queue_arn(sqs, dlq_url), MaxResults=1)["Results"]
    if not tasks:
        return None
    task = tasks[0]
    moved, to_move = (int(task.get(f"ApproximateNumberOfMessages{n}", 0)) for n in ("Moved", "ToMove"))
    return MoveTaskState(str(task["Status"]), moved, to_move)
