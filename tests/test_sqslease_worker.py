"""The consumer loop against a real SQS endpoint (moto_server over HTTP); workers in threads or processes."""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqs_helpers import (
    CallRecorder,
    counts,
    make_queue,
    receive_all,
    receive_when_visible,
    send,
    start_worker_process,
    wait_for,
)

from local_emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker import Worker

ROOT = Path(__file__).resolve().parent.parent
FAST = {"visibility_timeout": 2, "extension_threshold": 1, "heartbeat_interval": 0.2, "wait_time": 1}


class PermanentError(Exception):
    """Declared non-retryable in the tests below."""


@contextlib.contextmanager
def running_worker(
    server: LocalServer,
    url: str,
    handler: Callable[[str, Message], None],
    concurrency: int = 2,
    client: object = None,
    **settings: object,
) -> Iterator[Worker]:
    emf_lines = io.StringIO()
    worker = Worker(
        client or server.client("sqs"),
        url,
        handler,
        LeaseSettings(**{**FAST, **settings}),
        concurrency=concurrency,
        emf=EmfLogger(emf_lines),
    )
    worker.emf_lines = emf_lines  # type: ignore[attr-defined]
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.shutdown()
        thread.join(timeout=30)
        assert not thread.is_alive(), "worker did not stop"


def emf_records(worker: Worker) -> list[dict]:
    return [json.loads(line) for line in worker.emf_lines.getvalue().splitlines()]  # type: ignore[attr-defined]


def test_handler_longer_than_the_vt_keeps_its_message_and_runs_exactly_once(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, ["long"])
    runs: list[str] = []

    def slow(body: str, message: Message) -> None:
        runs.append(body)
        time.sleep(5)  # 2.5 x the visibility timeout

    with running_worker(local_aws, queues.url, slow) as first, running_worker(local_aws, queues.url, slow) as second:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and runs, timeout_s=15)
        time.sleep(1)
    assert runs == ["long"]
    (record,) = emf_records(first) + emf_records(second)
    assert record["Outcome"] == "success" and record["Extensions"] >= 2


def test_without_heartbeat_the_same_job_runs_twice(local_aws: LocalServer) -> None:
    # The control for the test above: it can fail.
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, ["long"])
    runs: list[str] = []

    def slow(body: str, message: Message) -> None:
        runs.append(body)
        time.sleep(5)

    with (
        running_worker(local_aws, queues.url, slow, heartbeat=False),
        running_worker(local_aws, queues.url, slow, heartbeat=False),
    ):
        assert wait_for(lambda: len(runs) >= 2, timeout_s=15)  # delivered again while the first still runs


def test_success_deletes_in_batches_and_logs_one_emf_line_per_message(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, [f"m{i}" for i in range(30)])
    recorder = CallRecorder()
    with running_worker(
        local_aws, queues.url, lambda b, m: None, concurrency=8, client=recorder.attach(local_aws.client("sqs"))
    ) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=20)
    deletes = recorder.of("DeleteMessageBatch")
    assert sum(len(c.params["Entries"]) for c in deletes) == 30
    assert len(deletes) < 30  # batched
    records = emf_records(worker)
    assert len(records) == 30 and {r["Outcome"] for r in records} == {"success"}
    assert records[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "jobqueues"
    assert {"JobType", "Queue", "ProcessingTime", "ReceiveCount", "Extensions", "LeaseLost"} <= set(records[0])


def failing(body: str, message: Message) -> None:
    raise RuntimeError(f"cannot handle {body}")


def test_failure_policy_visible_now_retries_at_once(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["x"])
    with running_worker(
        local_aws, queues.url, failing, concurrency=1, visibility_timeout=30, failure_policy=FailurePolicy.VISIBLE_NOW
    ) as worker:
        assert wait_for(lambda: len(emf_records(worker)) >= 3, timeout_s=10)  # 3 attempts well inside one 30 s VT
    assert [r["ReceiveCount"] for r in emf_records(worker)[:3]] == [1, 2, 3]


def test_failure_policy_lapse_waits_for_the_lease_to_run_out(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["x"])
    with running_worker(local_aws, queues.url, failing, concurrency=1, failure_policy=FailurePolicy.LAPSE) as worker:
        assert wait_for(lambda: len(emf_records(worker)) >= 2, timeout_s=10)
        first, second = emf_records(worker)[:2]
    gap_s = (second["_aws"]["Timestamp"] - first["_aws"]["Timestamp"]) / 1000
    assert 1.5 <= gap_s <= 4.5  # about the 2 s lease, not at once and not the queue's 30 s


def test_failure_policy_backoff_delays_the_retry(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["x"])
    with running_worker(
        local_aws, queues.url, failing, concurrency=1, failure_policy=FailurePolicy.BACKOFF, backoff_base=6
    ) as worker:
        assert wait_for(lambda: len(emf_records(worker)) >= 2, timeout_s=15)
        first, second = emf_records(worker)[:2]
    gap_s = (second["_aws"]["Timestamp"] - first["_aws"]["Timestamp"]) / 1000
    assert 3 <= gap_s <= 8  # uniform(3, 6) s for the first retry, plus receive latency


def test_message_goes_to_the_dlq_after_max_receives(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30, max_receive_count=2)
    send(local_aws, queues.url, ["poison"])
    with running_worker(local_aws, queues.url, failing, concurrency=1, failure_policy=FailurePolicy.VISIBLE_NOW):
        assert wait_for(lambda: counts(local_aws, queues.dlq_url)[0] == 1, timeout_s=15)
    assert counts(local_aws, queues.url) == (0, 0)
    (dead,) = receive_all(local_aws, queues.dlq_url)
    assert dead["Body"] == "poison"


def test_non_retryable_error_goes_straight_to_the_dlq(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30, max_receive_count=5)

    def permanent(body: str, message: Message) -> None:
        raise PermanentError("malformed order")

    send(local_aws, queues.url, ["bad-order"])
    with running_worker(
        local_aws,
        queues.url,
        permanent,
        concurrency=1,
        non_retryable=("test_sqslease_worker:PermanentError",),
        dead_letter_queue_url=queues.dlq_url,
    ) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=10)
    (dead,) = receive_all(local_aws, queues.dlq_url)
    assert dead["Body"] == "bad-order"
    assert dead["Attributes"]["ApproximateReceiveCount"] == "1"
    (record,) = emf_records(worker)
    assert record["Outcome"] == "dead_lettered" and record["ReceiveCount"] == 1


def test_no_extension_follows_a_confirmed_delete_or_overwrites_a_backoff(local_aws: LocalServer) -> None:
    # Extensions go on while a delete is unconfirmed (the lease is held until SQS confirms it), never after.
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, [f"m{i}" for i in range(60)])
    rng = random.Random(3)

    def jittery(body: str, message: Message) -> None:
        time.sleep(rng.uniform(0, 1.6))  # ends around the heartbeat's extensions
        if int(body[1:]) % 3 == 0:
            raise RuntimeError("fail a third of them")

    recorder = CallRecorder()
    client = recorder.attach(local_aws.client("sqs"))
    confirmed: dict[str, float] = {}  # receipt handle -> when SQS confirmed its delete
    send_deletes = client.delete_message_batch

    def recording_deletes(**kwargs: object) -> dict:
        response = send_deletes(**kwargs)
        entries = kwargs["Entries"]
        for success in response.get("Successful", []):
            confirmed.setdefault(entries[int(success["Id"])]["ReceiptHandle"], time.monotonic())  # type: ignore[index]
        return response

    client.delete_message_batch = recording_deletes
    with running_worker(
        local_aws,
        queues.url,
        jittery,
        concurrency=8,
        client=client,
        extension_threshold=1.5,
        heartbeat_interval=0.1,
        pull_forward=2,
        backoff_base=60,
    ) as worker:
        assert wait_for(lambda: len(emf_records(worker)) >= 60, timeout_s=40)
    backed_off: dict[str, float] = {}  # receipt handle -> when its backoff was sent
    late = []
    for call in recorder.of("ChangeMessageVisibilityBatch"):
        for entry in call.params["Entries"]:
            handle = entry["ReceiptHandle"]
            if handle in backed_off or confirmed.get(handle, float("inf")) < call.at:
                late.append(entry)
            elif entry["VisibilityTimeout"] != 2:  # a backoff (or release): ends the lease
                backed_off[handle] = call.at
    assert len(confirmed) == 40 and len(backed_off) == 20
    assert late == []
    assert sum(
        1 for c in recorder.of("ChangeMessageVisibilityBatch") if c.params["Entries"][0]["VisibilityTimeout"] == 2
    )


# -- worker processes ------------------------------------------------------------------------------
def started(events: Path) -> list[str]:
    return [line for line in events.read_text().splitlines() if line.startswith("start")] if events.exists() else []


def test_kill_9_mid_job_the_message_reappears_within_the_lease(local_aws: LocalServer, tmp_path: Path) -> None:
    queues = make_queue(local_aws, vt=600)  # the queue's VT is irrelevant: the lease is 3 s
    send(local_aws, queues.url, ["job"])
    events = tmp_path / "events"
    process = start_worker_process(
        local_aws,
        queues.url,
        events,
        SQSLEASE_VISIBILITY_TIMEOUT="3",
        SQSLEASE_EXTENSION_THRESHOLD="1",
        SLOW_JOB_SECONDS="60",
    )
    try:
        assert wait_for(lambda: started(events), timeout_s=20)
        time.sleep(4)  # the heartbeat has extended the lease at least once
        process.kill()
        killed_at = time.monotonic()
        process.wait()
    finally:
        process.kill()
    (again,), seen_at = receive_when_visible(local_aws, queues.url, timeout_s=10)
    recovery_s = seen_at - killed_at
    assert recovery_s <= 3.5, recovery_s  # within one lease, not the queue's 10 min
    assert again["Body"] == "job" and again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_sigterm_releases_unstarted_messages_at_once_and_finishes_the_running_one(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    queues = make_queue(local_aws, vt=600)
    send(local_aws, queues.url, ["a", "b", "c"])
    events = tmp_path / "events"
    process = start_worker_process(
        local_aws, queues.url, events, SQSLEASE_VISIBILITY_TIMEOUT="30", SLOW_JOB_SECONDS="3"
    )
    try:
        assert wait_for(lambda: started(events) and counts(local_aws, queues.url)[1] >= 2, timeout_s=20)
        process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        # The prefetched, unstarted message comes back at once (the lease is 30 s, the queue VT 10 min).
        assert wait_for(lambda: counts(local_aws, queues.url)[0] == 2, timeout_s=2.5)
        released_after = time.monotonic() - signalled
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
    assert released_after < 2.5
    lines = events.read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["start", "end"]  # the running job finished
    assert counts(local_aws, queues.url) == (2, 0)  # it was deleted; the other two wait for a worker
    emf = [json.loads(line) for line in process.stdout.read().decode().splitlines() if line.startswith("{")]
    assert [r["Outcome"] for r in emf] == ["success"]


def test_grace_period_end_releases_still_running_messages(local_aws: LocalServer, tmp_path: Path) -> None:
    queues = make_queue(local_aws, vt=600)
    send(local_aws, queues.url, ["forever"])
    events = tmp_path / "events"
    process = start_worker_process(
        local_aws,
        queues.url,
        events,
        SQSLEASE_VISIBILITY_TIMEOUT="30",
        SQSLEASE_SHUTDOWN_GRACE="1",
        SLOW_JOB_SECONDS="30",
    )
    try:
        assert wait_for(lambda: started(events), timeout_s=20)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        process.kill()
    assert counts(local_aws, queues.url) == (1, 0)  # released, not stuck for the 30 s lease
    assert b"releasing 1 messages still being handled" in process.stderr.read()


def test_worker_cli_reports_bad_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sqslease.worker", "--queue-url", "http://x/q", "--handler", "no.such.module:fn"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "cannot import 'no.such.module'" in result.stderr


@pytest.mark.parametrize("value", ["abc", "-"])
def test_bad_settings_from_env_are_reported(value: str) -> None:
    with pytest.raises(ValueError, match="SQSLEASE_VISIBILITY_TIMEOUT"):
        LeaseSettings.from_env({"SQSLEASE_VISIBILITY_TIMEOUT": value})
    with pytest.raises(ValueError, match="extension_threshold"):
        LeaseSettings(visibility_timeout=5, extension_threshold=5)


def test_in_flight_governor_pauses_receiving_at_the_limit(
    local_aws: LocalServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sqslease.worker

    monkeypatch.setattr(sqslease.worker, "GOVERNOR_CHECK_INTERVAL_S", 0.5)
    queues = make_queue(local_aws, vt=60)
    send(local_aws, queues.url, ["held elsewhere"])
    (held,) = receive_all(local_aws, queues.url)  # another consumer's in-flight message
    send(local_aws, queues.url, ["waiting"])
    handled: list[str] = []
    with running_worker(local_aws, queues.url, lambda body, m: handled.append(body), queue_in_flight_limit=1):
        time.sleep(2.5)
        assert handled == [] and counts(local_aws, queues.url) == (1, 1)  # paused: the queue is at its limit
        local_aws.client("sqs").delete_message(QueueUrl=queues.url, ReceiptHandle=held["ReceiptHandle"])
        assert wait_for(lambda: handled == ["waiting"], timeout_s=5)  # resumes once below the limit
    assert "pausing receives" in caplog.text


def test_a_message_arriving_late_in_a_long_poll_is_run(local_aws: LocalServer) -> None:
    # A lease is timed from when ReceiveMessage was sent (a held response must not make it look younger), so a
    # long poll longer than the first lease used to drop every message handed over after the lease's length into
    # the poll: it came back, met the next long poll the same way, and never ran.
    queues = make_queue(local_aws, vt=6)
    ran: list[str] = []
    settings = {"visibility_timeout": 6, "extension_threshold": 2, "heartbeat_interval": 0.2, "wait_time": 20}
    with running_worker(local_aws, queues.url, lambda body, _: ran.append(body), **settings) as worker:
        assert worker.settings.poll_wait <= 6 - 2  # the first lease minus the extension threshold
        time.sleep(8)  # well into a 20 s poll
        send(local_aws, queues.url, ["late"])
        assert wait_for(lambda: ran == ["late"], timeout_s=15), ran
