"""Handlers that misbehave (raise ``SystemExit`` or ``KeyboardInterrupt``), and an ``async def`` handler. Each
failure is that message's only, with a log line and the failure policy, in the worker and in the Lambda adapter
alike (both run handlers through ``sqslease.processor``); no handler slot or lease is lost. Here end to end in the
Lambda adapter, against moto_server; the worker's cases are in ``test_sqslease_worker_unit.py``, on a scripted
client."""

from __future__ import annotations

import io
import json
import sys
import time

from support.fakes import FakeContext
from support.lambda_events import lambda_event
from support.moto_queues import make_queue, receive_all, send

from jobqueues.emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings

ran: list[str] = []


async def async_job(body: str, message: Message) -> None:
    ran.append(body)


def test_an_async_handler_runs_its_record_in_the_lambda_adapter(local_aws: LocalServer) -> None:
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["async"])
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    ran.clear()
    emf = io.StringIO()
    response = process_event(
        event, FakeContext(60), async_job, settings, local_aws.client("sqs"), queues.url, EmfLogger(emf)
    )
    assert ran == ["async"] and response == {"batchItemFailures": []}
    assert [json.loads(line)["Outcome"] for line in emf.getvalue().splitlines()] == ["success"]
    assert receive_all(local_aws, queues.url) == []  # still hidden until Lambda deletes it


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
