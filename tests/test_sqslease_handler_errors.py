"""Handlers that misbehave: an ``async def`` handler, and handlers that raise ``SystemExit`` or
``KeyboardInterrupt``. Each is that message's failure, with a log line and the failure policy, in the worker and
in the Lambda adapter alike (both run handlers through ``sqslease.processor``); no handler slot or lease is lost.
Here end to end in the Lambda adapter, against moto_server; the worker's cases are in
``test_sqslease_worker_unit.py``, on a scripted client.
"""

from __future__ import annotations

import gc
import io
import json
import sys
import time
import warnings

import pytest
from support.fakes import FakeContext
from support.lambda_events import lambda_event
from support.moto_queues import make_queue, receive_all, send

from local_emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

ran: list[str] = []


async def async_job(body: str, message: Message) -> None:
    ran.append(body)


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
