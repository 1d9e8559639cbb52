"""Hooks before and after each message (``sqslease.hooks``), in the worker and the Lambda adapter: what they are
called with, and that a hook that raises changes nothing about the message."""

from __future__ import annotations

import io
import subprocess
import sys
import threading

import pytest
from sqs_handlers import RecordedHooks
from support.emf import outcomes
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event, lambda_event
from support.moto_queues import counts, make_queue, send
from support.waiting import wait_for
from support.worker_processes import ROOT
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.hooks import Hooks, load_hooks
from sqslease.lambda_adapter import process_event
from sqslease.lambda_entry import EntryConfigurationError, build_handler
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
WORKER = [sys.executable, "-m", "sqslease.worker"]
SETTINGS = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)


class Recorder(Hooks):
    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.lock = threading.Lock()

    def before(self, message: Message) -> None:
        with self.lock:
            self.calls.append(("before", message.body, threading.current_thread().name))

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        with self.lock:
            self.calls.append(("after", message.body, outcome, duration_s >= 0, type(error).__name__))


class Broken(Hooks):
    def before(self, message: Message) -> None:
        raise RuntimeError("before broke")

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        raise RuntimeError("after broke")


def handler(body: str, message: Message) -> None:
    if body == "bad":
        raise ValueError("bad input")


def test_the_worker_calls_before_and_after_each_message_with_its_outcome() -> None:
    # GIVEN a worker with a recording hook, one message that succeeds and one that fails
    sqs = FakeSQS(FakeClock())
    sqs.add("good", "bad")
    recorder = Recorder()
    with running_worker(sqs, URL, handler, clock=sqs.clock, hook_objects=(recorder,), **UNIT):
        assert wait_for(lambda: len(recorder.calls) == 4, timeout_s=10)
    # THEN each message had before (on a handler thread) then after, with its outcome and error
    for body, outcome, error in (("good", "success", "NoneType"), ("bad", "failure", "ValueError")):
        (before,) = [c for c in recorder.calls if c[:2] == ("before", body)]
        (after,) = [c for c in recorder.calls if c[:2] == ("after", body)]
        assert before[2].startswith("sqslease-handler-")
        assert after == ("after", body, outcome, True, error)
        assert recorder.calls.index(before) < recorder.calls.index(after)


def test_hooks_that_raise_are_logged_and_change_no_settle(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a worker whose first hook raises before and after every message
    sqs, emf = FakeSQS(FakeClock()), io.StringIO()
    sqs.add("good")
    recorder = Recorder()
    from sqslease.worker import Worker

    worker = Worker(
        sqs, URL, handler, LeaseSettings(**UNIT), emf=EmfLogger(emf), clock=sqs.clock, hooks=[Broken(), recorder]
    )
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    thread.start()
    # THEN the message still runs and is deleted, the next hook is still called, and both failures are logged
    assert wait_for(lambda: sqs.entries("DeleteMessageBatch") and len(recorder.calls) == 2, timeout_s=10)
    worker.shutdown()
    thread.join(30)
    assert outcomes(emf) == {"m-good": "success"}
    assert "failed before message m-good; ignored" in caplog.text and "failed after message m-good" in caplog.text
    assert "before broke" in caplog.text and "after broke" in caplog.text


def test_the_lambda_adapter_calls_the_hooks_of_each_record_and_ignores_a_broken_one() -> None:
    sqs, recorder = FakeSQS(), Recorder()
    response = process_event(
        fake_event(["good", "bad"]), FakeContext(60), handler, SETTINGS, sqs, hooks=[Broken(), recorder]
    )
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [c[:3] for c in recorder.calls if c[0] == "after"] == [
        ("after", "good", "success"),
        ("after", "bad", "failure"),
    ]
    assert ("rh-1", 0) in [
        (e["ReceiptHandle"], e["VisibilityTimeout"]) for e in sqs.entries("ChangeMessageVisibilityBatch")
    ]


def test_hooks_named_in_the_settings_run_in_the_lambda_adapter_against_moto(local_aws: LocalServer) -> None:
    # GIVEN SQSLEASE_HOOKS naming a hook class, as a construct's environment would
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["one", "bad"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = ConsumerConfig.from_env(
        {"SQSLEASE_HOOKS": "sqs_handlers:RecordedHooks", "SQSLEASE_FAILURE_POLICY": "visible_now"}
    ).lease
    RecordedHooks.CALLS.clear()
    # WHEN the adapter runs the batch
    response = process_event(event, FakeContext(60), handler, settings, local_aws.client("sqs"), queues.url)
    # THEN the hook saw each record before and after, with its outcome
    ids = {r["body"]: r["messageId"] for r in event["Records"]}
    assert response == {"batchItemFailures": [{"itemIdentifier": ids["bad"]}]}
    assert sorted(c for c in RecordedHooks.CALLS if c[0] == "after") == sorted(
        [("after", ids["one"], "success"), ("after", ids["bad"], "failure")]
    )
    assert len([c for c in RecordedHooks.CALLS if c[0] == "before"]) == 2
    assert counts(local_aws, queues.url) == (1, 1)  # the failure released; the success waits for Lambda's delete


def test_hooks_named_in_the_settings_run_in_the_worker_against_moto(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["one", "two"])
    RecordedHooks.CALLS.clear()
    with running_worker(local_aws, queues.url, handler, hooks=("sqs_handlers:RecordedHooks",)):
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(RecordedHooks.CALLS) == 4, timeout_s=20)
    assert sorted(c[2] for c in RecordedHooks.CALLS if c[0] == "after") == ["success", "success"]
    for message_id in {c[1] for c in RecordedHooks.CALLS}:
        assert [c[0] for c in RecordedHooks.CALLS if c[1] == message_id] == ["before", "after"]


def test_a_bad_hooks_path_is_refused_up_front() -> None:
    with pytest.raises(EntryConfigurationError, match=r"SQSLEASE_HOOKS='sqs_handlers:slow_job'.*no before"):
        build_handler({"SQSLEASE_HANDLER": "sqs_handlers:slow_job", "SQSLEASE_HOOKS": "sqs_handlers:slow_job"})
    with pytest.raises(ValueError, match="cannot import 'nowhere'"):
        load_hooks(["nowhere:hooks"])
    result = subprocess.run(
        [*WORKER, "--queue-url", URL, "--handler", "sqs_handlers:slow_job", "--hooks", "sqs_handlers:nothing"],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests",
        timeout=60,
    )
    assert result.returncode == 2
    assert "--hooks (SQSLEASE_HOOKS): 'sqs_handlers' has no attribute 'nothing'" in result.stderr
