"""The consumer loop against a real SQS endpoint (moto_server over HTTP); workers in threads or processes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest
from support.moto_queues import counts, make_queue, receive_all, receive_when_visible, send
from support.recording import CallRecorder
from support.waiting import wait_for
from support.worker_processes import SQSLEASE_SRC, start_worker_process
from support.worker_threads import ROOMY, emf_records, running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.config import ConsumerConfig
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
LOCAL_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
LOCAL_CREDENTIALS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


class PermanentError(Exception):
    """Declared non-retryable in the tests below."""


def test_handler_longer_than_the_vt_keeps_its_message_and_runs_exactly_once(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=4)
    send(local_aws, queues.url, ["long"])
    runs: list[str] = []

    def slow(body: str, message: Message) -> None:
        runs.append(body)
        time.sleep(10)  # 2.5 x the visibility timeout

    with (
        running_worker(local_aws, queues.url, slow, **ROOMY) as first,
        running_worker(local_aws, queues.url, slow, **ROOMY) as second,
    ):
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and runs, timeout_s=40)  # deleted
    # both workers drained: any second delivery, received before the delete, has run by now
    assert runs == ["long"]
    (record,) = emf_records(first) + emf_records(second)
    assert record["Outcome"] == "success" and record["Extensions"] >= 2


def test_without_heartbeat_the_same_job_runs_twice(local_aws: LocalServer) -> None:
    # The control for the test above: it can fail. Each run lasts until the job is delivered again (30 s at most).
    queues = make_queue(local_aws, vt=2)
    send(local_aws, queues.url, ["long"])
    runs: list[str] = []
    again = threading.Event()

    def slow(body: str, message: Message) -> None:
        runs.append(body)
        if len(runs) >= 2:
            again.set()
        again.wait(30)

    with (
        running_worker(local_aws, queues.url, slow, heartbeat=False),
        running_worker(local_aws, queues.url, slow, heartbeat=False),
    ):
        assert wait_for(lambda: len(runs) >= 2, timeout_s=30)  # delivered again while the first still runs


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
    runs: list[tuple[int, float, float]] = []  # receive count, when its receive was sent, when it started

    def failing_run(body: str, message: Message) -> None:
        runs.append((message.receive_count, message.lease.received_at, time.monotonic()))
        failing(body, message)

    recorder = CallRecorder()
    client = recorder.attach(local_aws.client("sqs"))
    settings = {"concurrency": 1, "client": client, "failure_policy": FailurePolicy.LAPSE}
    with running_worker(local_aws, queues.url, failing_run, **settings) as worker:  # type: ignore[arg-type]
        # back for a second run well before the queue's 30 s
        assert wait_for(lambda: len(emf_records(worker)) >= 2, timeout_s=25)
    (first_count, first_received, _), (second_count, _, second_started) = runs[:2]
    # nothing made it visible before it came back (no release, no backoff: at most extensions of its 2 s lease) ...
    changes = [c for c in recorder.of("ChangeMessageVisibilityBatch") if c.at < second_started]
    assert {e["VisibilityTimeout"] for c in changes for e in c.params["Entries"]} <= {2}
    assert (first_count, second_count) == (1, 2)
    # ... so it came back once its 2 s lease had run out, not at once (moto's clock in whole milliseconds)
    assert second_started - first_received >= 2 - 0.01


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
    events, log = tmp_path / "events", tmp_path / "worker.log"
    process = start_worker_process(
        local_aws,
        queues.url,
        events,
        log=log,
        SQSLEASE_VISIBILITY_TIMEOUT="3",
        SQSLEASE_EXTENSION_THRESHOLD="1",
        SQSLEASE_LOG_LEVEL="DEBUG",
        SLOW_JOB_SECONDS="60",
    )
    try:
        assert wait_for(lambda: started(events), timeout_s=20)
        # the heartbeat has extended the lease at least once: its second extension is sent after the first landed
        assert wait_for(lambda: log.exists() and log.read_text().count("extending") >= 2, timeout_s=20)
        process.kill()
        killed_at = time.monotonic()
        process.wait()
    finally:
        process.kill()
    (again,), seen_at = receive_when_visible(local_aws, queues.url, timeout_s=30)
    recovery_s = seen_at - killed_at
    assert recovery_s <= 4 * 3, recovery_s  # within a few leases (3 s) on a loaded machine, not the queue's 10 min
    assert again["Body"] == "job" and again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_sigterm_finishes_the_running_message_and_runs_the_received_one_on_the_free_handler(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    # The received message's receive is spent: releasing it would cost it one for nothing.
    queues = make_queue(local_aws, vt=600)
    send(local_aws, queues.url, ["a", "b", "c"])
    events = tmp_path / "events"
    process = start_worker_process(
        local_aws, queues.url, events, SQSLEASE_VISIBILITY_TIMEOUT="30", SLOW_JOB_SECONDS="1.5"
    )
    try:
        assert wait_for(lambda: started(events) and counts(local_aws, queues.url)[1] >= 2, timeout_s=20)
        process.send_signal(signal.SIGTERM)  # 1 handler: one message running, one received
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
    assert [line.split()[0] for line in events.read_text().splitlines()] == ["start", "end", "start", "end"]
    assert counts(local_aws, queues.url) == (1, 0)  # both deleted; the third was never received
    emf = [json.loads(line) for line in process.stdout.read().decode().splitlines() if line.startswith("{")]
    assert [r["Outcome"] for r in emf] == ["success", "success"]


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


#: An AWS queue URL names its region; botocore alone would not take it from there.
AWS_QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/{name}"


def worker_environment(**env: str) -> dict[str, str]:
    """The test process's environment without any AWS or sqslease setting (no region anywhere), plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SQSLEASE_"))}
    return {
        **base,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(SQSLEASE_SRC)]),
        **env,
    }


WORKER_CLI = [sys.executable, "-m", "sqslease.worker"]


def run_worker_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WORKER_CLI, *args], env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--concurrency", "0"], {}, "--concurrency"),
        (["--concurrency", "two"], {}, "--concurrency"),
        ([], {"SQSLEASE_CONCURRENCY": "0"}, "SQSLEASE_CONCURRENCY"),
        (["--visibility-timeout", "abc"], {}, "--visibility-timeout"),
        (["--extension-threshold", "40"], {}, "--extension-threshold"),
        (["--wait-time", "30"], {}, "--wait-time"),
        (["--failure-policy", "sometimes"], {}, "lapse, visible_now, backoff"),
        ([], {"SQSLEASE_MAX_REQUESTS_IN_FLIGHT": "0"}, "SQSLEASE_MAX_REQUESTS_IN_FLIGHT"),
        (["--task-protection-minutes", "0"], {}, "--task-protection-minutes"),
        (["--non-retryable", "no.such.module:Error"], {}, "--non-retryable"),
        (["--log-level", "loud"], {}, "--log-level"),
        (["--handler", "sqs_handlers:no_such_handler"], {}, "--handler"),
        ([], {"AWS_PROFILE": "no-such-profile"}, "AWS_PROFILE"),
    ],
)
def test_bad_worker_settings_give_one_line_naming_the_option_and_status_2(
    args: list[str], env: dict[str, str], named: str
) -> None:
    command = ["--queue-url", AWS_QUEUE_URL.format(name="q"), "--handler", "sqs_handlers:slow_job", *args]
    result = run_worker_cli(command, worker_environment(AWS_DEFAULT_REGION="eu-west-1", **env))
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert named in result.stderr


@pytest.mark.parametrize(
    ("url", "region"),
    [
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/orders", "eu-west-1"),
        ("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders.fifo", "cn-north-1"),
        ("https://sqs-fips.us-gov-west-1.amazonaws.com/123456789012/orders", "us-gov-west-1"),
        ("https://ap-southeast-2.queue.amazonaws.com/123456789012/orders", "ap-southeast-2"),
        ("http://localhost:4566/000000000000/orders", None),
        ("https://sqs.example.com/us-east-1/orders", None),
    ],
)
def test_the_region_a_queue_url_names(url: str, region: str | None) -> None:
    from sqslease.clients import queue_region  # here: the rest of the module runs on earlier sqslease too

    assert queue_region(url) == region


def test_without_a_region_the_worker_takes_it_from_the_queue_url(local_aws: LocalServer, tmp_path: Path) -> None:
    sqs = boto3.client("sqs", region_name="eu-west-1", endpoint_url=local_aws.endpoint, **LOCAL_CREDENTIALS)
    name = f"regional-{time.time_ns() % 10**9}"
    sqs.send_message(QueueUrl=sqs.create_queue(QueueName=name)["QueueUrl"], MessageBody="hello")
    events = tmp_path / "events"
    env = worker_environment(
        AWS_ENDPOINT_URL=local_aws.endpoint, TEST_EVENTS_FILE=str(events), SLOW_JOB_SECONDS="0", **LOCAL_CREDENTIALS_ENV
    )
    command = ["--queue-url", AWS_QUEUE_URL.format(name=name), "--handler", "sqs_handlers:slow_job", "--wait-time", "1"]
    process = subprocess.Popen([*WORKER_CLI, *command], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: started(events) or process.poll() is not None, timeout_s=20)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
    assert started(events), process.stderr.read().decode()[-2000:]

    # No region configured and none in the URL: one line, status 2.
    result = run_worker_cli(["--queue-url", f"{local_aws.endpoint}/123456789012/{name}", *command[2:]], env)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "region" in result.stderr


@pytest.mark.parametrize("value", ["abc", "-"])
def test_bad_settings_from_env_are_reported(value: str) -> None:
    with pytest.raises(ValueError, match="SQSLEASE_VISIBILITY_TIMEOUT"):
        ConsumerConfig.from_env({"SQSLEASE_VISIBILITY_TIMEOUT": value})
    with pytest.raises(ValueError, match="extension_threshold"):
        LeaseSettings(visibility_timeout=5, extension_threshold=5)


def test_in_flight_governor_pauses_receiving_at_the_limit(
    local_aws: LocalServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sqslease.receiver

    monkeypatch.setattr(sqslease.receiver, "GOVERNOR_CHECK_INTERVAL_S", 0.5)
    queues = make_queue(local_aws, vt=60)
    send(local_aws, queues.url, ["held elsewhere"])
    (held,) = receive_all(local_aws, queues.url)  # another consumer's in-flight message
    send(local_aws, queues.url, ["waiting"])
    handled: list[str] = []
    with running_worker(local_aws, queues.url, lambda body, m: handled.append(body), queue_in_flight_limit=1):
        # it looked twice (every 0.5 s here), and has not received in between: paused at the queue's limit
        assert wait_for(lambda: caplog.text.count("pausing receives") >= 2, timeout_s=30)
        assert handled == [] and counts(local_aws, queues.url) == (1, 1)
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
    recorder = CallRecorder()
    client = recorder.attach(local_aws.client("sqs"))
    with running_worker(local_aws, queues.url, lambda body, _: ran.append(body), client=client, **settings) as worker:
        assert worker.settings.poll_wait <= 6 - 2  # the first lease minus the extension threshold

        def poll_age() -> float:  # seconds since the poll in flight was sent
            polls = recorder.of("ReceiveMessage")
            return time.monotonic() - polls[-1].at if polls else 0.0

        assert wait_for(lambda: poll_age() >= 3, timeout_s=30)  # late in a poll of poll_wait (4 s)
        send(local_aws, queues.url, ["late"])
        assert wait_for(lambda: ran == ["late"], timeout_s=15), ran


def test_a_worker_whose_handlers_print_writes_every_emf_line_whole(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN a worker process of 4 handlers that print a long line each (print: two writes to the stdout the EMF
    # lines go to), on a strict UTF-8 stdout (a container's), where one message in ten also prints text it cannot
    # encode (found by two docs-only trials: the held success lines written with that text were lost with it)
    queues = make_queue(local_aws, vt=60)
    bodies = [f"b{i}" for i in range(120)]
    send(local_aws, queues.url, bodies)
    process = start_worker_process(
        local_aws,
        queues.url,
        tmp_path / "events",
        handler="sqs_handlers:printing_job",
        concurrency=4,
        PYTHONIOENCODING="utf-8:strict",
    )
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()  # read as it comes: a full pipe would stop the worker
    try:
        # WHEN it runs them all, then drains
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=60)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        reader.join(timeout=30)
    finally:
        process.kill()
    # THEN each line of its stdout is a whole EMF line or a whole print, and every message has its success line
    lines = out[0].decode().splitlines()
    printed = sorted(line for line in lines if not line.startswith("{"))
    assert printed == sorted(f"handling {body} " + "x" * 300 for body in bodies)
    emf = [json.loads(line) for line in lines if line.startswith("{")]
    assert [r["Outcome"] for r in emf] == ["success"] * len(bodies)
    assert len({r["MessageId"] for r in emf}) == len(bodies)
