"""FIFO order on a moto FIFO queue: the worker runs one message per group at a time, in order, and a failure
holds back the rest of its group; the Lambda adapter stops a group (or the batch) at its first failure. A drain's
hold-back of a failed group's later messages is pinned in ``test_sqslease_drain.py`` on a scripted client."""

from __future__ import annotations

import io
import itertools
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest
from support.fakes import FakeContext
from support.lambda_events import lambda_event
from support.moto_queues import counts, make_queue, receive_all
from support.waiting import wait_for

from jobqueues.emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker import Worker

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)


def send_groups(server: LocalServer, url: str, groups: str, per_group: int) -> list[str]:
    """Interleaved sends: A0, B0, C0, A1, ..."""
    sqs = server.client("sqs")
    bodies = [f"{group}{i}" for i in range(per_group) for group in groups]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=body[0], MessageDeduplicationId=body)
    return bodies


def start_fifo_worker(
    server: LocalServer, url: str, handler: Callable[[str, Message], None], concurrency: int, wait_time: float
) -> tuple[Worker, threading.Thread]:
    """An in-process worker on a 5 s lease (extended 2 s before expiry) that makes a failure visible at once."""
    settings = LeaseSettings(
        visibility_timeout=5,
        extension_threshold=2,
        heartbeat_interval=0.2,
        wait_time=wait_time,
        failure_policy=FailurePolicy.VISIBLE_NOW,
    )
    worker = Worker(server.client("sqs"), url, handler, settings, concurrency, EmfLogger(io.StringIO()))
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    thread.start()
    return worker, thread


def test_worker_runs_one_message_per_group_in_order_and_a_failure_holds_the_group(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30, fifo=True)
    bodies = send_groups(local_aws, queues.url, "ABC", 5)
    runs: list[tuple[str, float, float, bool]] = []  # body, start, end, succeeded
    lock = threading.Lock()

    def handler(body: str, message: Message) -> None:
        started = time.monotonic()
        time.sleep(0.15)
        failed = body == "A1" and message.receive_count == 1
        with lock:
            runs.append((body, started, time.monotonic(), not failed))
        if failed:
            raise RuntimeError("A1 fails on its first delivery")

    worker, thread = start_fifo_worker(local_aws, queues.url, handler, concurrency=4, wait_time=1)
    try:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(runs) >= len(bodies), timeout_s=40)
    finally:
        worker.shutdown()
        thread.join(timeout=30)
    by_group: dict[str, list[tuple[str, float, float, bool]]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: r[1]):
        by_group[run[0][0]].append(run)
    for group, group_runs in by_group.items():
        for earlier, later in itertools.pairwise(group_runs):
            assert later[1] >= earlier[2], f"group {group}: {earlier[0]} and {later[0]} ran at once"
        assert [r[0] for r in group_runs if r[3]] == [f"{group}{i}" for i in range(5)]  # successes in order
    # After A1 failed, A1 was the group's next run: nothing of A overtook it.
    a_runs = [r[0] for r in by_group["A"]]
    assert a_runs[: a_runs.index("A1") + 2] == ["A0", "A1", "A1"], a_runs
    assert sum(len(r) for r in by_group.values()) == len(bodies) + 1  # A1 twice, everything else once


@pytest.mark.parametrize("skip_group_on_error", [False, True])
def test_lambda_adapter_stops_at_the_first_failure_of_a_fifo_batch(
    local_aws: LocalServer, skip_group_on_error: bool
) -> None:
    queues = make_queue(local_aws, vt=30, fifo=True)
    send_groups(local_aws, queues.url, "AB", 3)
    event = lambda_event(local_aws, queues.url, vt=30)
    order = [r["body"] for r in event["Records"]]
    ran: list[str] = []

    def handler(body: str, message: Message) -> None:
        ran.append(body)
        if body == "A1":
            raise RuntimeError("A1 fails")

    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    response = process_event(
        event,
        FakeContext(60),
        handler,
        settings,
        local_aws.client("sqs"),
        queues.url,
        EmfLogger(io.StringIO()),
        **({"skip_group_on_error": True} if skip_group_on_error else {}),  # False is the default
    )
    ids = {r["body"]: r["messageId"] for r in event["Records"]}
    after = order[order.index("A1") :]
    failed = [b for b in after if b[0] == "A"] if skip_group_on_error else after
    assert response["batchItemFailures"] == [{"itemIdentifier": ids[b]} for b in failed]
    assert ran == [b for b in order if b not in failed or b == "A1"]
    # As Lambda does after the invocation: delete the records not reported. The failed group's records are
    # back in the queue (released at once), still in order.
    sqs = local_aws.client("sqs")
    for record in event["Records"]:
        if record["body"] not in failed:
            sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=record["receiptHandle"])
    again = [m["Body"] for m in receive_all(local_aws, queues.url)]
    assert [b for b in again if b[0] == "A"] == ["A1", "A2"]


def test_a_failing_head_spends_a_receive_of_each_later_message_received_with_it(local_aws: LocalServer) -> None:
    # A worker not told max_receive_count (and the DLQ) cannot retry in process: SQS hands out none of a group's
    # messages while one is in flight, so for the failed head to be retried the later messages received with it
    # are released unrun, each having spent that receive, and a head that fails until the DLQ takes them there with
    # it, never run. Told both, it holds them instead: test_sqslease_fifo_poison.py.
    max_receives = 3
    queues = make_queue(local_aws, vt=30, max_receive_count=max_receives, fifo=True)
    send_groups(local_aws, queues.url, "A", 3)  # A0 fails every time; A1, A2 wait behind it
    ran: list[tuple[str, int]] = []

    def handler(body: str, message: Message) -> None:
        ran.append((body, message.receive_count))
        if body == "A0":
            raise RuntimeError("A0 fails every time")

    worker, thread = start_fifo_worker(local_aws, queues.url, handler, concurrency=4, wait_time=1)
    try:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(ran) >= max_receives, timeout_s=30)
    finally:
        worker.shutdown()
        thread.join(timeout=30)
    assert ran == [("A0", k) for k in range(1, max_receives + 1)]  # A1, A2 never ran
    assert queues.dlq_url is not None
    dead = {m["Body"]: int(m["Attributes"]["ApproximateReceiveCount"]) for m in receive_all(local_aws, queues.dlq_url)}
    assert sorted(dead) == ["A0", "A1", "A2"] and dead["A1"] == dead["A2"] == dead["A0"], dead  # spent alike
    emf = [json.loads(line) for line in worker.processor.emf.stream.getvalue().splitlines()]  # type: ignore[attr-defined]
    released = [(r["MessageId"], r["ReceiveCount"]) for r in emf if r["Outcome"] == "released"]
    ids = {r["MessageId"] for r in emf if r["Outcome"] == "released"}
    assert len(ids) == 2  # A1 and A2: one released line per failure of A0, receive counts 1..max_receives
    for message_id in ids:
        assert [c for i, c in released if i == message_id] == list(range(1, max_receives + 1)), released
