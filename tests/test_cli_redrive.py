"""``jobqueues dlq redrive`` on ``tests/ops_app``: the standard job type (Receipts) and the move task's stops.

(FIFO groups, deduplication ids and order, a loop killed between send and delete, a stop between loop batches and
``--dry-run`` are in test_cli_dlq.)

- The console script redrives Receipts' DLQ by an SQS move task: every message back with its body and message
  attributes, the DLQ empty.
- Ctrl-C during a move task cancels it and exits 130 saying how many moved; the rest stays in the DLQ and a rerun
  moves it. A ``KeyboardInterrupt`` while following a task cancels the task too.
- ``auto`` falls back on the loop where the endpoint has no move tasks.
- A FIFO message dead-lettered a moment ago (inside the 5-minute deduplication interval) is redriven, not dropped
  as a duplicate, by either method.

Tests on the shared deployment fill the DLQs directly (or dead-letter their own messages) and leave every queue
empty.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from emulator_fixtures import NEEDS_CDK, Deployment
from support.moto_queues import take_all
from support.waiting import until

from jobqueues.cli import main
from jobqueues.cli.context import Aws
from jobqueues.ops import redrive as redrive_module
from jobqueues.ops.discovery import JobType, discover
from jobqueues.ops.redrive import redrive

JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def fill(sqs: Any, url: str, count: int) -> list[str]:
    """``count`` standard messages sent to ``url``, each with a ``tenant`` message attribute; their bodies."""
    bodies = [json.dumps({"id": f"r-{n}-{uuid.uuid4().hex[:6]}"}) for n in range(count)]
    for first in range(0, count, 10):
        entries = [
            {
                "Id": str(i),
                "MessageBody": body,
                "MessageAttributes": {"tenant": {"DataType": "String", "StringValue": f"t{first + i}"}},
            }
            for i, body in enumerate(bodies[first : first + 10])
        ]
        assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
    return bodies


def depth(sqs: Any, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(found[n]) for n in names)


@pytest.fixture
def receipts(ops_deployment: Deployment) -> Iterator[JobType]:
    """Receipts, its queues left empty afterwards, once no move task runs on its DLQ."""
    job = discover(ops_deployment.server.client("cloudformation")).find("Receipts")
    yield job
    sqs = ops_deployment.server.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=job.dead_letter_queue_url, AttributeNames=["QueueArn"])
    tasks = {"SourceArn": arn["Attributes"]["QueueArn"]}
    until(
        lambda: all(
            t["Status"] not in ("RUNNING", "CANCELLING") for t in sqs.list_message_move_tasks(**tasks)["Results"]
        )
    )
    for url in (job.queue_url, job.dead_letter_queue_url):
        take_all(sqs, url or "")


@pytest.fixture
def invoices(ops_deployment: Deployment) -> JobType:
    return discover(ops_deployment.server.client("cloudformation")).find("Invoices")


@NEEDS_CDK
def test_the_console_script_redrives_a_standard_dlq_by_move_task(ops_deployment: Deployment, receipts: JobType) -> None:
    sqs = ops_deployment.server.client("sqs")
    bodies = fill(sqs, receipts.dead_letter_queue_url or "", 25)
    command = [str(JOBQUEUES), "--endpoint-url", ops_deployment.server.endpoint, "dlq", "redrive", "Receipts"]
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done
    result = json.loads(done.stdout)
    assert (result["method"], result["moved"], result["failed"], result["stopped"]) == ("move-task", 25, [], False)
    moved = take_all(sqs, receipts.queue_url or "")
    assert sorted(m["Body"] for m in moved) == sorted(bodies)
    tenants = {m["Body"]: m["MessageAttributes"]["tenant"]["StringValue"] for m in moved}
    assert tenants == {body: f"t{n}" for n, body in enumerate(bodies)}
    assert depth(sqs, receipts.dead_letter_queue_url or "") == 0


@NEEDS_CDK
def test_ctrl_c_cancels_the_move_task_and_a_rerun_finishes(
    ops_deployment: Deployment, receipts: JobType, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs = ops_deployment.server.client("sqs")
    dlq, source = receipts.dead_letter_queue_url or "", receipts.queue_url or ""
    bodies = fill(sqs, dlq, 40)
    url = ops_deployment.server.endpoint
    # Ctrl-C once the command follows its move task (not merely once SQS moved some: under load the command can
    # still be between SQS's answer to the start and following the task, whose Ctrl-C says something else)
    following = threading.Event()
    follow = redrive_module._follow

    def followed(*args: Any, **kwargs: Any) -> None:
        following.set()
        follow(*args, **kwargs)

    monkeypatch.setattr(redrive_module, "_follow", followed)

    def press_ctrl_c_once_some_moved() -> None:
        until(lambda: following.is_set() and depth(sqs, source) >= 5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c_once_some_moved, daemon=True).start()
    status = main(["--endpoint-url", url, "dlq", "redrive", "Receipts", "--max-per-second", "5"])
    out, err = capsys.readouterr()
    assert status == 130, (out, err)
    moved_first = int(out.split("stopped: ")[1].split(" message")[0])
    assert 5 <= moved_first < 40, out
    assert "the rest is still in the DLQ: run the same command again to go on" in err
    # what Ctrl-C said is what a move task does (the loop's "batch in hand" is not)
    assert (
        "stopping: cancelling the SQS move task (CancelMessageMoveTask): what it moved stays in the queue, the rest "
        "in the DLQ (Ctrl-C again to stop waiting for the cancel)"
    ) in err
    assert "batch in hand" not in err
    assert depth(sqs, source) == moved_first and depth(sqs, dlq) == 40 - moved_first
    assert main(["--endpoint-url", url, "dlq", "redrive", "Receipts", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["moved"] == 40 - moved_first
    assert sorted(m["Body"] for m in take_all(sqs, source)) == sorted(bodies)
    assert depth(sqs, dlq) == 0


class InterruptedOnSecondPoll:
    """An SQS client whose caller is interrupted (KeyboardInterrupt, as a second Ctrl-C raises it) on its second
    progress poll of a move task."""

    def __init__(self, sqs: Any) -> None:
        self.sqs, self.polls = sqs, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sqs, name)

    def list_message_move_tasks(self, **kwargs: Any) -> Any:
        self.polls += 1
        if self.polls == 2:
            raise KeyboardInterrupt
        return self.sqs.list_message_move_tasks(**kwargs)


@NEEDS_CDK
def test_a_second_ctrl_c_says_what_the_move_task_is_doing(
    ops_deployment: Deployment, receipts: JobType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sqs = ops_deployment.server.client("sqs")
    dlq, source = receipts.dead_letter_queue_url or "", receipts.queue_url or ""
    fill(sqs, dlq, 40)
    # GIVEN the command's SQS client interrupted while it follows the move task
    client = Aws.client
    monkeypatch.setattr(
        Aws,
        "client",
        lambda aws, service: InterruptedOnSecondPoll(client(aws, "sqs")) if service == "sqs" else client(aws, service),
    )
    url = ops_deployment.server.endpoint
    status = main(["--endpoint-url", url, "dlq", "redrive", "Receipts", "--max-per-second", "5"])
    err = capsys.readouterr().err
    # THEN it ends at once (130), saying what SQS says the task is doing: cancelled, not left running
    assert status == 130, err
    [line] = err.strip().splitlines()
    assert re.fullmatch(
        r"interrupted: the SQS move task is (cancelled|being cancelled) after \d+ of 40 messages: what it moved is "
        r"in the queue, the rest stays in the DLQ: run the same command again to go on",
        line,
    ), line
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    until(lambda: sqs.list_message_move_tasks(SourceArn=arn)["Results"][0]["Status"] == "CANCELLED")
    assert depth(sqs, source) < 40 and depth(sqs, source) + depth(sqs, dlq) == 40


@NEEDS_CDK
def test_an_interrupt_while_following_a_task_cancels_it(ops_deployment: Deployment, receipts: JobType) -> None:
    sqs = ops_deployment.server.client("sqs")
    dlq, source = receipts.dead_letter_queue_url or "", receipts.queue_url or ""
    bodies = fill(sqs, dlq, 30)

    class InterruptedOnSecondPoll:
        """A client whose caller is interrupted (KeyboardInterrupt) on its second progress poll."""

        polls = 0

        def __getattr__(self, name: str) -> Any:
            return getattr(sqs, name)

        def list_message_move_tasks(self, **kwargs: Any) -> Any:
            self.polls += 1
            if self.polls == 2:
                raise KeyboardInterrupt
            return sqs.list_message_move_tasks(**kwargs)

    with pytest.raises(KeyboardInterrupt):
        redrive(InterruptedOnSecondPoll(), dlq, source, False, "move-task", rate=5)
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    until(lambda: sqs.list_message_move_tasks(SourceArn=arn)["Results"][0]["Status"] == "CANCELLED")
    assert 0 < depth(sqs, dlq) < 30
    rest = redrive(sqs, dlq, source, False, "move-task")
    assert not rest.stopped
    assert sorted(m["Body"] for m in take_all(sqs, source)) == sorted(bodies)
    assert depth(sqs, dlq) == 0


@NEEDS_CDK
def test_auto_falls_back_on_the_loop_without_move_tasks(ops_deployment: Deployment, receipts: JobType) -> None:
    sqs = ops_deployment.server.client("sqs")
    dlq, source = receipts.dead_letter_queue_url or "", receipts.queue_url or ""
    bodies = fill(sqs, dlq, 23)

    class NoMoveTasks:
        """An endpoint without StartMessageMoveTask (as ElasticMQ or an older LocalStack)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(sqs, name)

        def start_message_move_task(self, **kwargs: Any) -> Any:
            error = {"Error": {"Code": "InvalidAction", "Message": "not supported"}}
            raise ClientError(error, "StartMessageMoveTask")  # type: ignore[arg-type]

    result = redrive(NoMoveTasks(), dlq, source, False, "auto")
    assert (result.method, result.moved, result.failed) == ("loop", 23, [])
    moved = take_all(sqs, source)
    assert sorted(m["Body"] for m in moved) == sorted(bodies)
    assert all(m["MessageAttributes"]["tenant"]["DataType"] == "String" for m in moved)
    assert depth(sqs, dlq) == 0


def dead_letter_now(sqs: Any, job: JobType, count: int) -> list[tuple[str, str, str]]:
    """``count`` messages of one group sent to ``job``'s FIFO queue and dead-lettered at once (received until
    SQS moves them); their (body, group, dedup id)."""
    group = f"g-{uuid.uuid4().hex[:6]}"
    sent = [(json.dumps({"id": n}), group, f"d-{n}-{uuid.uuid4().hex[:6]}") for n in range(count)]
    for body, group_id, dedup in sent:
        sqs.send_message(
            QueueUrl=job.queue_url, MessageBody=body, MessageGroupId=group_id, MessageDeduplicationId=dedup
        )
    until(
        lambda: (
            not sqs.receive_message(QueueUrl=job.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages")
            and depth(sqs, job.dead_letter_queue_url or "") == count
        )
    )
    return sent


@NEEDS_CDK
@pytest.mark.parametrize("method", ["move-task", "loop"])
def test_a_fifo_message_dead_lettered_a_moment_ago_is_redriven(
    ops_deployment: Deployment, invoices: JobType, method: str
) -> None:
    sqs = ops_deployment.server.client("sqs")
    dlq, source = invoices.dead_letter_queue_url or "", invoices.queue_url or ""
    try:
        sent = dead_letter_now(sqs, invoices, 4)
        result = redrive(sqs, dlq, source, True, method)
        assert (result.moved, result.failed) == (4, [])
        moved = take_all(sqs, source)
        found = [
            (m["Body"], m["Attributes"]["MessageGroupId"], m["Attributes"]["MessageDeduplicationId"]) for m in moved
        ]
        assert found == sent  # none dropped as a duplicate of its original send, in order
    finally:
        take_all(sqs, source)
        take_all(sqs, dlq)


def test_ctrl_c_while_the_move_task_starts_says_it_will_be_cancelled() -> None:
    # GIVEN a redrive whose StartMessageMoveTask request is in flight when Ctrl-C comes
    from jobqueues.cli.redrive import stopping

    stop, running, said = threading.Event(), {}, []
    tasks = [{"TaskHandle": "h", "Status": "RUNNING", "ApproximateNumberOfMessagesMoved": 0}]

    class Sqs:
        def __init__(self) -> None:
            self.cancelled: list[str] = []

        def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> Any:
            return {"Attributes": {"QueueArn": f"arn:aws:sqs:us-east-1:123456789012:{QueueUrl}"}}

        def start_message_move_task(self, **request: Any) -> Any:
            said.append(stopping(running)())  # what Ctrl-C prints now
            stop.set()
            return {"TaskHandle": "h"}

        def list_message_move_tasks(self, **request: Any) -> Any:
            return {"Results": tasks}

        def cancel_message_move_task(self, TaskHandle: str) -> Any:
            self.cancelled.append(TaskHandle)
            tasks[0] = {**tasks[0], "Status": "CANCELLED"}

    sqs = Sqs()
    # WHEN the task starts after all THEN the line said it would be cancelled, and it is
    result = redrive(sqs, "dlq", "queue", False, "move-task", stop=stop, on_method=lambda m: running.update(name=m))
    assert sqs.cancelled == ["h"] and result.stopped
    assert said == [
        "stopping: the redrive stops once SQS answers its start, and a move task it started is cancelled: what it "
        "moved stays in the queue, the rest in the DLQ (Ctrl-C again to interrupt at once)"
    ]


@pytest.mark.parametrize("method", ["move-task", "auto"])
def test_ctrl_c_before_the_move_task_starts_starts_none(method: str) -> None:
    # GIVEN a redrive interrupted (Ctrl-C) while it looks up its queues, before it asks SQS for a move task
    from jobqueues.cli.redrive import stopping

    stop, running, said, started = threading.Event(), {}, [], []

    class Sqs:
        def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> Any:
            said.append(stopping(running)())  # what Ctrl-C prints now
            stop.set()
            return {"Attributes": {"QueueArn": f"arn:aws:sqs:us-east-1:123456789012:{QueueUrl}"}}

        def start_message_move_task(self, **request: Any) -> Any:
            started.append(request)
            return {"TaskHandle": "h"}

    # WHEN the redrive goes on THEN it starts no task and moves nothing, as the line said
    result = redrive(Sqs(), "dlq", "queue", False, method, stop=stop, on_method=lambda m: running.update(name=m))
    assert said[0] == "stopping before the redrive starts (Ctrl-C again to interrupt at once)"
    assert started == [] and result.stopped and result.moved == 0
