"""A FIFO message that fails until the DLQ goes there alone: the worker retries it in process while it holds the
leases of its group's later messages, sends it to the DLQ itself when its attempts are spent, then runs the rest of
the group in order. Real worker processes on moto_server here; the sequencing on the fakes in
``test_sqslease_fifo_poison_unit.py``, the Lambda adapter in ``test_sqslease_fifo_poison_lambda.py``."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from support.moto_queues import counts, make_queue, receive_all
from support.waiting import wait_for
from support.worker_processes import events_of, start_worker_process

from jobqueues.emulator.server import LocalServer
from jobqueues.ops.discovery import JobType
from jobqueues.ops.dlq import list_dead_letters
from jobqueues.ops.redrive import redrive

pytestmark = pytest.mark.heavy  # worker processes and seconds of back-off: scheduled first (tests/conftest.py)

POISON_GROUP = ["poison", "m1", "m2", "m3"]
OTHER_GROUP = ["h0", "h1", "h2", "h3"]


def send_fifo(server: LocalServer, url: str, group: str, bodies: list[str]) -> None:
    sqs = server.client("sqs")
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=body)


def runs(events: Path) -> list[tuple[str, int]]:
    """(body, receive count) of every handler start, in order."""
    return [(body, int(count)) for kind, body, count, _ in events_of(events) if kind == "start"]


@pytest.mark.parametrize(
    ("max_receive_count", "told"),
    [
        (3, False),  # as reported: the worker finds maxReceiveCount and the DLQ in the queue's RedrivePolicy
        (5, True),  # the default max_receive_count, given as the constructs' consumer contract gives it
    ],
)
def test_a_poison_message_goes_to_the_dlq_alone_and_its_group_runs_in_order(
    local_aws: LocalServer, tmp_path: Path, max_receive_count: int, told: bool
) -> None:
    queues = make_queue(local_aws, vt=30, max_receive_count=max_receive_count, fifo=True)
    assert queues.dlq_url is not None
    send_fifo(local_aws, queues.url, "g", POISON_GROUP)
    send_fifo(local_aws, queues.url, "h", OTHER_GROUP)
    events = tmp_path / "events"
    args = ["--backoff-base", "1", "--backoff-max", "1"]  # back-offs of 1 s: the test's length, not its outcome
    if told:
        args += ["--max-receive-count", str(max_receive_count), "--dead-letter-queue-url", queues.dlq_url]
    process = start_worker_process(local_aws, queues.url, events, handler="sqs_handlers:poison_job", args=args)
    try:
        done = len(POISON_GROUP) - 1 + len(OTHER_GROUP)
        assert wait_for(
            lambda: (
                sum(kind == "end" for kind, *_ in events_of(events)) >= done and counts(local_aws, queues.url) == (0, 0)
            ),
            timeout_s=60,
        ), (runs(events), [m["Body"] for m in receive_all(local_aws, queues.dlq_url)])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    started = runs(events)
    # The poison ran max_receive_count times, its receive count rising as SQS's would have; then its group, once
    # each, in order, on their first receive: none was released, so none spent a receive.
    assert [r for r in started if r[0] == "poison"] == [("poison", k) for k in range(1, max_receive_count + 1)]
    assert [r for r in started if r[0] in POISON_GROUP[1:]] == [(body, 1) for body in POISON_GROUP[1:]]
    last_poison = max(i for i, r in enumerate(started) if r[0] == "poison")
    assert all(started.index((body, 1)) > last_poison for body in POISON_GROUP[1:])
    assert [r for r in started if r[0] in OTHER_GROUP] == [(body, 1) for body in OTHER_GROUP]
    emf = [json.loads(line) for line in process.stdout.read().decode().splitlines() if line.startswith("{")]
    poison_id = next(r["MessageId"] for r in emf if r["Outcome"] == "dead_lettered")
    assert [(r["Outcome"], r["ReceiveCount"]) for r in emf if r["MessageId"] == poison_id] == [
        *(("failure", k) for k in range(1, max_receive_count)),
        ("dead_lettered", max_receive_count),
    ]
    assert sorted(r["Outcome"] for r in emf if r["MessageId"] != poison_id) == ["success"] * done
    # The DLQ holds the poison alone: `jobqueues dlq list` shows the worker's copy as the poison (its id, group,
    # runs and error), and `dlq redrive` puts it back in its group, where a worker would retry it again
    job = JobType("Jobs", "S", "S/Jobs", queues.url, queues.dlq_url, fifo=True, max_receive_count=max_receive_count)
    (row,) = list_dead_letters(job, local_aws.client("sqs"), None).rows
    assert (row.body, row.group, row.source_message_id, row.receive_count) == (
        "poison",
        "g",
        poison_id,
        max_receive_count,
    )
    assert row.last_error is not None and row.last_error.error_type == "RuntimeError"
    assert counts(local_aws, queues.dlq_url) == (1, 0)
    assert redrive(local_aws.client("sqs"), queues.dlq_url, queues.url, fifo=True, method="loop").moved == 1
    (back,) = receive_all(local_aws, queues.url)
    assert back["Body"] == "poison" and back["Attributes"]["MessageGroupId"] == "g"


#: 4 s leases extended 1 s before they end: a killed worker's held group is back within 4 s. Back-offs of 1 s:
#: the test's length, not its outcome.
SHORT_LEASES = {
    "SQSLEASE_VISIBILITY_TIMEOUT": "4",
    "SQSLEASE_EXTENSION_THRESHOLD": "1",
    "SQSLEASE_BACKOFF_BASE": "1",
    "SQSLEASE_BACKOFF_MAX": "1",
}


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGTERM, 0), (signal.SIGKILL, -signal.SIGKILL)])
def test_a_worker_stopped_while_it_holds_a_group_loses_nothing_and_the_next_one_keeps_its_order(
    local_aws: LocalServer, tmp_path: Path, stop: signal.Signals, status: int
) -> None:
    # GIVEN a worker holding group g behind its failed head (3 receives at most, back-offs of 1 s)
    queues = make_queue(local_aws, vt=30, max_receive_count=3, fifo=True)
    assert queues.dlq_url is not None
    send_fifo(local_aws, queues.url, "g", POISON_GROUP)
    events = tmp_path / "events"
    first = start_worker_process(local_aws, queues.url, events, handler="sqs_handlers:poison_job", **SHORT_LEASES)
    try:
        assert wait_for(lambda: runs(events)[:1] == [("poison", 1)], timeout_s=30)
        # WHEN it drains (SIGTERM) or dies (kill -9), its head parked or being retried once more
        first.send_signal(stop)
        assert first.wait(timeout=30) == status
    finally:
        first.kill()
    drained = len(runs(events))
    # THEN nothing of g behind its head ran, and the next worker takes the group from its head (once the killed
    # worker's leases end): the poison goes to the DLQ alone and the rest runs once each, in order
    assert {body for body, _ in runs(events)} == {"poison"}
    second = start_worker_process(local_aws, queues.url, events, handler="sqs_handlers:poison_job", **SHORT_LEASES)
    try:
        assert wait_for(
            lambda: (
                sum(kind == "end" for kind, *_ in events_of(events)) == 3 and counts(local_aws, queues.url) == (0, 0)
            ),
            timeout_s=60,
        ), runs(events)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
        second.kill()
    after = runs(events)[drained:]
    assert [body for body, _ in after] == ["poison", "poison", *POISON_GROUP[1:]]
    assert [count for body, count in after if body == "poison"] == [2, 3]  # from SQS's count: it gets more runs
    # those the first worker had received spent that receive (1 handler: a receive of 2), the rest none
    assert [(body, count) for body, count in after if body != "poison"] == [("m1", 2), ("m2", 1), ("m3", 1)]
    job = JobType("Jobs", "S", "S/Jobs", queues.url, queues.dlq_url, fifo=True, max_receive_count=3)
    assert [row.body for row in list_dead_letters(job, local_aws.client("sqs"), None).rows] == ["poison"]
