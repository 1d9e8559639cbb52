"""SQS message move tasks (dead-letter queue redrive), which moto 5.2.5 lacks: ``StartMessageMoveTask``,
``ListMessageMoveTasks`` and ``CancelMessageMoveTask``, as the SQS API reference describes them.

- The source must be another queue's dead-letter queue (``InvalidParameterValue`` otherwise); the destination is
  ``DestinationArn``, or else the source queue whose redrive policy names it. SQS sends each message back to the
  queue it came from; moto does not record that, so a DLQ shared by several queues needs a ``DestinationArn``
  here. Source and destination are the same kind (standard or FIFO).
- One active task per source (``UnsupportedOperation``). ``MaxNumberOfMessagesPerSecond`` is 1..500; without
  it, messages move as fast as the emulator takes them.
- A task moves the messages that were in the source when it started, oldest first, on a thread: each is received
  from the source through moto's own (atomic) receive, sent to the destination as a new message with its body,
  message attributes and, on FIFO, its group and deduplication ids, then deleted from the source.
- Statuses RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED; ``ListMessageMoveTasks`` lists the newest first
  (``MaxResults`` 1..10, default 1), with a ``TaskHandle`` for a running task only; ``CancelMessageMoveTask`` of
  a task that is not running is ``ResourceNotFoundException``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from moto.core.responses import ActionResult
from moto.sqs.exceptions import SQSException
from moto.sqs.models import SQSBackend
from moto.sqs.responses import SQSResponse

#: Messages taken from the source per receive.
MOVE_BATCH = 10
MAX_RATE = 500


class MoveTaskError(SQSException):
    """An SQS error of the move-task operations (``code`` as the API reference names it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


@dataclass
class MoveTask:
    """One task's state; the counters are written by its thread only."""

    task_id: str
    source_arn: str
    destination_arn: str | None
    rate: int | None
    to_move: int
    started_ms: int
    status: str = "RUNNING"
    moved: int = 0
    failure_reason: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def handle(self) -> str:
        return base64.b64encode(json.dumps({"taskId": self.task_id, "sourceArn": self.source_arn}).encode()).decode()

    def entry(self) -> dict[str, Any]:
        """The task as a ``ListMessageMoveTasks`` result entry."""
        result: dict[str, Any] = {
            "Status": self.status,
            "SourceArn": self.source_arn,
            "ApproximateNumberOfMessagesMoved": self.moved,
            "ApproximateNumberOfMessagesToMove": self.to_move,
            "StartedTimestamp": self.started_ms,
        }
        if self.status == "RUNNING":
            result["TaskHandle"] = self.handle
        if self.destination_arn:
            result["DestinationArn"] = self.destination_arn
        if self.rate is not None:
            result["MaxNumberOfMessagesPerSecond"] = self.rate
        if self.failure_reason:
            result["FailureReason"] = self.failure_reason
        return result


def _tasks(backend: SQSBackend) -> list[MoveTask]:
    tasks: list[MoveTask] | None = getattr(backend, "_jobqueues_move_tasks", None)
    if tasks is None:
        tasks = []
        backend._jobqueues_move_tasks = tasks  # type: ignore[attr-defined]
    return tasks


def _queue_name(arn: str) -> str:
    parts = arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise MoveTaskError("InvalidParameterValue", f"{arn} is not an SQS queue ARN")
    return parts[5]


def start_task(backend: SQSBackend, source_arn: str, destination_arn: str | None, rate: int | None) -> MoveTask:
    """Check the request as SQS does, then start the task's thread."""
    source = backend.get_queue(_queue_name(source_arn))
    origins = backend.list_dead_letter_source_queues(source.name)
    if not origins:
        raise MoveTaskError("InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue.")
    if destination_arn:
        destination = backend.get_queue(_queue_name(destination_arn))
    elif len(origins) == 1:
        destination = origins[0]
    else:
        names = ", ".join(sorted(q.name for q in origins))
        raise MoveTaskError(
            "InvalidParameterValue",
            f"the emulator cannot tell which of {names} each message came from: pass DestinationArn",
        )
    if bool(destination.fifo_queue) != bool(source.fifo_queue):
        raise MoveTaskError("InvalidParameterValue", "Source and destination queues must be of the same type.")
    if rate is not None and not 1 <= rate <= MAX_RATE:
        raise MoveTaskError("InvalidParameterValue", f"MaxNumberOfMessagesPerSecond must be 1..{MAX_RATE}: {rate}")
    tasks = _tasks(backend)
    if any(t.source_arn == source_arn and t.status in ("RUNNING", "CANCELLING") for t in tasks):
        raise MoveTaskError(
            "UnsupportedOperation",
            "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
        )
    to_move = len([m for m in source._messages if m.visible])
    task = MoveTask(uuid.uuid4().hex, source_arn, destination_arn, rate, to_move, int(time.time() * 1000))
    tasks.append(task)
    threading.Thread(
        target=_run, args=(backend, task, source.name, destination.name), name=f"move-{task.task_id}", daemon=True
    ).start()
    return task


def _run(backend: SQSBackend, task: MoveTask, source: str, destination: str) -> None:
    started = time.monotonic()
    try:
        while task.moved < task.to_move and not task.cancel.is_set():
            count = min(MOVE_BATCH, task.to_move - task.moved)
            if task.rate is not None:
                count = min(count, task.rate)
            messages = backend.receive_message(source, count, 0, 30, message_attribute_names=["All"])
            if not messages:
                break  # fewer left than at the start (consumed or purged meanwhile)
            for message in messages:
                attributes = message.message_attributes or None
                backend.send_message(
                    destination,
                    message.body,
                    message_attributes=attributes,
                    deduplication_id=message.deduplication_id,
                    group_id=message.group_id,
                )
                backend.delete_message(source, str(message.receipt_handle))
                task.moved += 1
            if task.rate is not None:
                # Hold the rate: the next batch waits until the moved messages' share of time has passed.
                time.sleep(max(0.0, started + task.moved / task.rate - time.monotonic()))
    except Exception as error:  # the task fails as SQS reports it: FAILED with a reason, never a silent stop
        task.status, task.failure_reason = "FAILED", f"{type(error).__name__}: {error}"
        return
    task.status = "CANCELLED" if task.cancel.is_set() else "COMPLETED"


def cancel_task(backend: SQSBackend, handle: str) -> MoveTask:
    """Ask a running task to stop after the message it is moving."""
    try:
        task_id = json.loads(base64.b64decode(handle))["taskId"]
    except (ValueError, KeyError, TypeError):
        raise MoveTaskError("ResourceNotFoundException", "Task does not exist.") from None
    for task in _tasks(backend):
        if task.task_id == task_id and task.status == "RUNNING":
            task.status = "CANCELLING"
            task.cancel.set()
            return task
    raise MoveTaskError("ResourceNotFoundException", "Task does not exist.")


def add_message_move_tasks(response: type[SQSResponse] = SQSResponse) -> None:
    """Serve the three operations (moto dispatches an action to the response method of its snake_case name)."""

    def start_message_move_task(self: SQSResponse) -> ActionResult:
        rate = self._get_param("MaxNumberOfMessagesPerSecond")
        task = start_task(
            self.sqs_backend,
            self._get_param("SourceArn"),
            self._get_param("DestinationArn"),
            None if rate is None else int(rate),
        )
        return ActionResult({"TaskHandle": task.handle})

    def list_message_move_tasks(self: SQSResponse) -> ActionResult:
        source_arn = self._get_param("SourceArn")
        self.sqs_backend.get_queue(_queue_name(source_arn))  # QueueDoesNotExist, as SQS
        limit = int(self._get_param("MaxResults") or 1)
        if not 1 <= limit <= 10:
            raise MoveTaskError("InvalidParameterValue", f"MaxResults must be 1..10: {limit}")
        tasks = [t for t in reversed(_tasks(self.sqs_backend)) if t.source_arn == source_arn][:limit]
        return ActionResult({"Results": [t.entry() for t in tasks]})

    def cancel_message_move_task(self: SQSResponse) -> ActionResult:
        task = cancel_task(self.sqs_backend, self._get_param("TaskHandle"))
        return ActionResult({"ApproximateNumberOfMessagesMoved": task.moved})

    response.start_message_move_task = start_message_move_task  # type: ignore[attr-defined]
    response.list_message_move_tasks = list_message_move_tasks  # type: ignore[attr-defined]
    response.cancel_message_move_task = cancel_message_move_task  # type: ignore[attr-defined]
