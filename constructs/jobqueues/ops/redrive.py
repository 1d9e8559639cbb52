"""``jobqueues dlq redrive``: a job type's dead-letter queue back into its source queue, losing nothing.

Two methods:

- **move task** (``auto``'s choice): SQS's own redrive, ``StartMessageMoveTask``, standard and FIFO queues alike
  (a FIFO DLQ keeps each message's group; SQS replaced its deduplication id with its original message id when it
  dead-lettered it). Progress from ``ListMessageMoveTasks``; a stop request cancels the task
  (``CancelMessageMoveTask``), and what is left stays in the DLQ for the next run. A task already running on the
  DLQ is followed, not started twice. A ``KeyboardInterrupt`` while following it (a second Ctrl-C) cancels the
  task too, then goes on up as :class:`Interrupted` (with the cancel's failure, if it failed: the task then goes on
  server-side); :func:`move_task_state` says what SQS is doing with it.
- **loop** (``--method loop``, and ``auto`` where the endpoint has no move tasks): receive up to 10 messages,
  send them to the source with ``SendMessageBatch``, keeping body, message attributes, ``MessageGroupId`` and
  ``MessageDeduplicationId``, then delete from the DLQ only the entries whose send succeeded. A refused entry is
  made visible again and reported; on FIFO the loop then stops, so that no later message of a group overtakes it.
  A stop request takes effect between batches. Killed between a send and its delete, a batch is sent again by the
  next run: on FIFO its deduplication ids make SQS drop the copies (within 5 minutes); on a standard queue the
  batch's messages (10 at most) may run twice, which at-least-once handlers already allow.

FIFO and the 5-minute deduplication interval: a send that reuses a deduplication id the source saw in the last 5
minutes is accepted but dropped. Keeping the DLQ copy's id is safe on SQS, which gave a dead-lettered FIFO message
its own message id as deduplication id (never the id of the original send); the emulator (moto) deduplicates only
against messages still in the queue, and a dead-lettered message has left it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jobqueues.ops.errors import OpsError, error_code
from jobqueues.ops.move_tasks import Interrupted, cancel_on_interrupt, queue_arn

#: Seconds between two looks at a move task's progress.
POLL_S = 1.0
#: Seconds a loop batch stays invisible in the DLQ while it is being sent (a killed run's batch comes back then).
LOOP_VISIBILITY_S = 60
#: The error codes of an endpoint without the move-task operations.
_NO_MOVE_TASKS = {
    "InvalidAction",
    "UnknownOperationException",
    "NotImplemented",
    "AWS.SimpleQueueService.InvalidAction",
}

Progress = Callable[[int, int], None]


@dataclass
class RedriveResult:
    """What a redrive did: messages moved, refused entries (``"id: code: text"``), and how it ended."""

    method: str  # "move-task" or "loop"
    moved: int = 0
    to_move: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stopped: bool = False
    #: Messages in flight in the DLQ when the loop ended (an earlier, killed run's batch): they come back when
    #: their visibility timeout ends; run again then.
    in_flight_left: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "method": self.method,
            "moved": self.moved,
            "to_move": self.to_move,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "in_flight_left": self.in_flight_left,
        }


#: The method named while a move task's start is asked for: what SQS answers decides whether one runs.
STARTING_MOVE_TASK = "move-task-starting"


def move_task(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    rate: int | None,
    progress: Progress,
    stop: threading.Event,
    poll_s: float = POLL_S,
    on_started: Callable[[str], None] = lambda method: None,
) -> RedriveResult:
    """Redrive with SQS's move task (see the module docstring); ``LookupError`` if the endpoint has none.
    ``on_started(STARTING_MOVE_TASK)`` as the task's start is asked for (a stop then cancels the task once it runs),
    ``on_started("move-task")`` once a task runs (started, or one already running followed)."""
    from botocore.exceptions import ClientError

    started = time.monotonic()
    source_arn = queue_arn(sqs, dlq_url)
    result = RedriveResult("move-task")
    request: dict[str, Any] = {"SourceArn": source_arn, "DestinationArn": queue_arn(sqs, source_url)}
    if rate is not None:
        request["MaxNumberOfMessagesPerSecond"] = rate
    if stop.is_set():  # stopped while the queues were looked up: no task is started
        result.stopped, result.seconds = True, time.monotonic() - started
        return result
    on_started(STARTING_MOVE_TASK)
    try:
        handle = sqs.start_message_move_task(**request)["TaskHandle"]
    except ClientError as error:
        if error_code(error) in _NO_MOVE_TASKS:
            raise LookupError(error_code(error)) from error
        if "UnsupportedOperation" not in error_code(error) or "already a task running" not in str(error):
            raise
        handle = None  # one is running already: follow it
    on_started("move-task")
    try:
        _follow(sqs, source_arn, handle, result, progress, stop, poll_s)
    except KeyboardInterrupt:
        # Interrupted at once (a second Ctrl-C): the task must not go on moving unwatched.
        raise Interrupted(cancel_on_interrupt(sqs, source_arn, handle)) from None
    result.seconds = time.monotonic() - started
    return result


def _follow(
    sqs: Any,
    source_arn: str,
    handle: str | None,
    result: RedriveResult,
    progress: Progress,
    stop: threading.Event,
    poll_s: float,
) -> None:
    """Poll the newest task on ``source_arn`` until it ends; cancel it once ``stop`` is set."""
    from botocore.exceptions import ClientError

    while True:
        tasks = sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=1)["Results"]
        if not tasks:
            raise OpsError(f"the move task on {source_arn} is not listed: check it in the SQS console")
        task = tasks[0]
        handle = handle or task.get("TaskHandle")
        result.moved = int(task.get("ApproximateNumberOfMessagesMoved", 0))
        result.to_move = int(task.get("ApproximateNumberOfMessagesToMove", 0))
        progress(result.moved, result.to_move)
        status = task["Status"]
        if status == "FAILED":
            raise OpsError(f"the move task failed after {result.moved} messages: {task.get('FailureReason')}")
        if status in ("COMPLETED", "CANCELLED"):
            result.stopped = status == "CANCELLED"
            break
        if stop.is_set() and status == "RUNNING" and handle:
            try:
                sqs.cancel_message_move_task(TaskHandle=handle)
            except ClientError as error:
                if "ResourceNotFound" not in error_code(error):  # it finished meanwhile
                    raise
            handle = None
        if stop.is_set():
            time.sleep(poll_s / 4)  # cancelling: the task ends after the message it is moving
        else:
            stop.wait(poll_s)


def _attributes(message: dict[str, Any]) -> dict[str, Any]:
    """A received message's attributes as ``SendMessage`` takes them (no empty list values)."""
    kept = {}
    for name, value in message.get("MessageAttributes", {}).items():
        kept[name] = {k: v for k, v in value.items() if k in ("DataType", "StringValue", "BinaryValue")}
    return kept


def _send_batch(
    sqs: Any, dlq_url: str, source_url: str, fifo: bool, messages: list[dict[str, Any]], result: RedriveResult
) -> bool:
    """Send one received batch to the source, delete from the DLQ what was sent, make the rest visible again at
    once; count both on ``result``. Whether SQS refused an entry."""
    entries = []
    for i, message in enumerate(messages):
        entry: dict[str, Any] = {"Id": str(i), "MessageBody": message["Body"]}
        if attributes := _attributes(message):
            entry["MessageAttributes"] = attributes
        if fifo:
            entry["MessageGroupId"] = message["Attributes"]["MessageGroupId"]
            entry["MessageDeduplicationId"] = message["Attributes"].get("MessageDeduplicationId", message["MessageId"])
        entries.append(entry)
    response = sqs.send_message_batch(QueueUrl=source_url, Entries=entries)
    sent = {s["Id"] for s in response.get("Successful", [])}
    # Only a confirmed send is deleted; a refused one goes back to the DLQ at once.
    done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages) if str(i) in sent]
    if done:
        sqs.delete_message_batch(QueueUrl=dlq_url, Entries=done)
    refused = list(response.get("Failed", []))
    if refused:
        handles = [
            {"Id": f["Id"], "ReceiptHandle": messages[int(f["Id"])]["ReceiptHandle"], "VisibilityTimeout": 0}
            for f in refused
        ]
        sqs.change_message_visibility_batch(QueueUrl=dlq_url, Entries=handles)
        result.failed += [
            f"{messages[int(f['Id'])]['MessageId']}: {f.get('Code')}: {f.get('Message')}" for f in refused
        ]
    result.moved += len(done)
    return bool(refused)


def loop(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    fifo: bool,
    rate: int | None,
    progress: Progress,
    stop: threading.Event,
    visibility_s: int = LOOP_VISIBILITY_S,
) -> RedriveResult:
    """Redrive by receive, send, delete (see the module docstring); ``visibility_s``: how long a batch in hand
    stays invisible in the DLQ (a killed run's batch comes back then). Default :data:`LOOP_VISIBILITY_S`."""
    started = time.monotonic()
    names = ["ApproximateNumberOfMessages"]
    to_move = int(sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=names)["Attributes"][names[0]])
    result = RedriveResult("loop", to_move=to_move)
    progress(0, to_move)
    while not stop.is_set():
        count = 10 if rate is None else max(1, min(10, rate))
        messages = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=count,
            VisibilityTimeout=visibility_s,
            WaitTimeSeconds=1,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            break
        refused = _send_batch(sqs, dlq_url, source_url, fifo, messages, result)
        progress(result.moved, max(to_move, result.moved))
        if refused and fifo:
            break  # a later message of the group must not overtake the refused one
        if rate is not None:
            time.sleep(max(0.0, started + result.moved / rate - time.monotonic()))
    result.stopped = stop.is_set()
    names = ["ApproximateNumberOfMessagesNotVisible"]
    in_flight = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=names)["Attributes"].get(names[0], 0)
    result.in_flight_left = int(in_flight)
    result.seconds = time.monotonic() - started
    return result


def redrive(
    sqs: Any,
    dlq_url: str,
    source_url: str,
    fifo: bool,
    method: str = "auto",
    rate: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    on_method: Callable[[str], None] | None = None,
) -> RedriveResult:
    """Move the DLQ at ``dlq_url`` back to ``source_url``.

    :param method: ``auto`` (a move task; the loop where the endpoint has none), ``move-task`` or ``loop``.
        Default ``auto``.
    :param rate: messages per second at most (1..500 for a move task). Default: as fast as SQS takes them.
    :param progress: called with (moved, to move) as the redrive goes. Default: nothing.
    :param stop: set it to stop (the move task is cancelled; the loop ends after its batch). Default: never.
    :param on_method: called with ``move-task`` or ``loop`` once the redrive runs by it (what a stop request
        will do depends on it). Default: nothing.
    """
    progress = progress or (lambda moved, total: None)
    stop = stop or threading.Event()
    on_method = on_method or (lambda name: None)
    if method in ("auto", "move-task"):
        try:
            return move_task(sqs, dlq_url, source_url, rate, progress, stop, on_started=on_method)
        except LookupError:
            if method == "move-task":
                raise OpsError("this endpoint has no SQS move tasks: use --method loop") from None
    on_method("loop")
    return loop(sqs, dlq_url, source_url, fifo, rate, progress, stop)
