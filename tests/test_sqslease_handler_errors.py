"""Handlers that misbehave: an ``async def`` handler, and handlers that raise ``SystemExit`` or
``KeyboardInterrupt``. Each is that message's failure, with a log line and the failure policy, in the worker and
in the Lambda adapter alike (both run handlers through ``sqslease.processor``); no handler slot or lease is lost.
"""

from __future__ import annotations

import gc
import io
import json
import sys
import threading
import time
import warnings

import pytest
from sqs_helpers import counts, make_queue, receive_all, send, wait_for
from test_sqslease_lambda import FakeContext, lambda_event
from test_sqslease_worker import emf_records, running_worker

from local_emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

ran: list[str] = []


async def async_job(body: str, message: Message) -> None:
    ran.append(body)


def test_an_async_handler_fails_its_message_loudly_in_the_worker(
    local_aws: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["async"])
    ran.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with running_worker(
            local_aws, queues.url, async_job, concurrency=1, failure_policy=FailurePolicy.LAPSE
        ) as worker:
            assert wait_for(lambda: emf_records(worker), timeout_s=10)
        gc.collect()
    assert ran == []
    assert {r["Outcome"] for r in emf_records(worker)} == {"failure"}
    assert "async_job returned a coroutine" in caplog.text and "async handlers are not supported" in caplog.text
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert wait_for(lambda: counts(local_aws, queues.url) == (1, 0), timeout_s=5)  # kept: lapsed, not deleted


def test_an_async_handler_fails_its_record_in_the_lambda_adapter(
    local_aws: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["async"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    ran.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        response = process_event(
            event,
            FakeContext(60),
            async_job,
            settings,
            local_aws.client("sqs"),
            queues.url,
            raise_on_entire_batch_failure=False,
        )
        gc.collect()
    assert ran == []
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert "async handlers are not supported" in caplog.text
    assert not [w for w in caught if "never awaited" in str(w.message)]
    (again,) = receive_all(local_aws, queues.url)  # visible_now: back at once
    assert again["Body"] == "async"


def test_sys_exit_in_a_handler_fails_only_its_message_and_keeps_every_handler(
    local_aws: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    queues = make_queue(local_aws, vt=30)
    together = threading.Barrier(2, timeout=10)
    runs: list[tuple[str, int]] = []

    def handler(body: str, message: Message) -> None:
        runs.append((body, message.receive_count))
        if message.receive_count == 1 and body == "exit":
            sys.exit(3)  # e.g. a library call that ends in sys.exit()
        if message.receive_count == 1 and body == "interrupt":
            raise KeyboardInterrupt
        if body.startswith("pair"):
            together.wait()  # both handlers are alive, at once

    send(local_aws, queues.url, ["exit", "interrupt"])
    with running_worker(
        local_aws, queues.url, handler, concurrency=2, visibility_timeout=30, failure_policy=FailurePolicy.VISIBLE_NOW
    ) as worker:
        # visible_now: both back at once, not after the heartbeat-extended 30 s lease
        assert wait_for(lambda: {("exit", 2), ("interrupt", 2)} <= set(runs), timeout_s=10), runs
        send(local_aws, queues.url, ["pair-a", "pair-b"])
        assert wait_for(lambda: len(emf_records(worker)) == 6, timeout_s=15), runs
    outcomes = {(r["ReceiveCount"], r["Outcome"]) for r in emf_records(worker)}
    assert outcomes == {(1, "failure"), (2, "success"), (1, "success")}
    assert not together.broken
    assert "SystemExit(3)" in caplog.text and "KeyboardInterrupt()" in caplog.text
    assert counts(local_aws, queues.url) == (0, 0)


def test_sys_exit_in_a_handler_fails_its_record_in_the_lambda_adapter(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["exit", "ok"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    emf = io.StringIO()

    def handler(body: str, message: Message) -> None:
        if body == "exit":
            sys.exit(1)

    started = time.monotonic()
    response = process_event(
        event, FakeContext(60), handler, settings, local_aws.client("sqs"), queues.url, EmfLogger(emf)
    )
    exit_id = next(r["messageId"] for r in event["Records"] if r["body"] == "exit")
    assert response == {"batchItemFailures": [{"itemIdentifier": exit_id}]}
    assert sorted(json.loads(line)["Outcome"] for line in emf.getvalue().splitlines()) == ["failure", "success"]
    (again,) = receive_all(local_aws, queues.url)  # released by visible_now, within the invocation
    assert again["Body"] == "exit" and time.monotonic() - started < 10
