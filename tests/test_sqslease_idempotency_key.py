"""The idempotency key named by a setting (``SQSLEASE_IDEMPOTENCY_KEY`` / ``--idempotency-key``, the constructs'
``idempotency_key`` prop): a producer's retry (a new MessageId, the same body) is a duplicate in the worker and
through ``sqslease.lambda_entry``, against moto_server; a bad path stops the worker and the entry point at start."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import sqs_handlers
from support.emf import read_emf
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import lambda_event
from support.moto_queues import counts, make_queue
from support.waiting import wait_for
from support.worker_processes import ROOT
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from sqslease import lambda_adapter
from sqslease.config import ConsumerConfig
from sqslease.idempotency import create_table_request
from sqslease.idempotency_gate import configured_key
from sqslease.lambda_entry import EntryConfigurationError, build_handler
from sqslease.settings import LeaseSettings
from sqslease.worker import Worker

WORKER = [sys.executable, "-m", "sqslease.worker"]
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
_job_types = itertools.count()


@pytest.fixture(scope="module")
def table(local_aws: LocalServer) -> Iterator[str]:
    name = f"idem-key-{int(time.time() * 1000) % 10_000_000}"
    dynamodb = local_aws.client("dynamodb")
    dynamodb.create_table(**create_table_request(name))
    yield name
    dynamodb.delete_table(TableName=name)


@pytest.fixture
def job_type() -> str:
    return f"Keyed{next(_job_types)}"


@pytest.fixture
def idempotency_env(local_aws: LocalServer, table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SQSLEASE_IDEMPOTENCY_TABLE`` and the moto_server endpoint, as a deployed consumer's environment; the
    Lambda adapter's per-process clients and store rebuilt from it."""
    for name, value in {**LOCAL_AWS_ENV, "AWS_ENDPOINT_URL": local_aws.endpoint}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SQSLEASE_IDEMPOTENCY_TABLE", table)
    monkeypatch.setenv("SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD", "3600")
    monkeypatch.setattr(lambda_adapter, "_env_store", lambda_adapter._UNSET)
    monkeypatch.setattr(lambda_adapter, "_client", None)


def send(local_aws: LocalServer, url: str, *bodies: str) -> list[str]:
    sqs = local_aws.client("sqs")
    return [sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"] for body in bodies]


def retried_order() -> str:
    """A body whose second send (a producer's retry) differs only in its timestamp: the same order."""
    return json.dumps({"order_id": 7, "sent_at": time.time()})


def test_the_worker_runs_a_producers_retry_of_the_same_order_once(
    local_aws: LocalServer, job_type: str, idempotency_env: None
) -> None:
    # GIVEN an order sent twice (two MessageIds) and a worker whose settings name the body's key function
    queues = make_queue(local_aws, vt=2)
    ids = send(local_aws, queues.url, retried_order(), retried_order())
    assert ids[0] != ids[1]
    sqs_handlers.RECORDED_RUNS.clear()
    # WHEN the worker consumes both
    with running_worker(
        local_aws,
        queues.url,
        sqs_handlers.recorded_job,
        concurrency=1,
        job_type=job_type,
        idempotency_key="sqs_handlers:order_key",
    ) as worker:
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and len(emf_records(worker)) == 2, timeout_s=20)
    # THEN the order ran once: the first message succeeded, the second was deleted unrun as a duplicate
    assert len(sqs_handlers.RECORDED_RUNS) == 1
    assert sorted(r["Outcome"] for r in emf_records(worker)) == ["duplicate", "success"]
    assert {r["MessageId"] for r in emf_records(worker)} == set(ids)


def test_lambda_entry_runs_a_producers_retry_of_the_same_order_once(
    local_aws: LocalServer,
    job_type: str,
    idempotency_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN sqslease.lambda_entry configured as LambdaJob configures it, with SQSLEASE_IDEMPOTENCY_KEY
    queues = make_queue(local_aws, vt=30)
    environ = {
        "SQSLEASE_HANDLER": "sqs_handlers:recorded_job",
        "SQSLEASE_IDEMPOTENCY_KEY": "sqs_handlers:order_key",
        "SQSLEASE_JOB_TYPE": job_type,
        "SQSLEASE_QUEUE_URL": queues.url,
        "SQSLEASE_VISIBILITY_TIMEOUT": "30",
        "SQSLEASE_EXTENSION_THRESHOLD": "5",
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    handler = build_handler()
    sqs_handlers.RECORDED_RUNS.clear()
    # WHEN the order arrives in one invocation and the producer's retry (a new MessageId) in the next
    responses, ids = [], []
    for _ in range(2):
        ids += send(local_aws, queues.url, retried_order())
        responses.append(handler(lambda_event(local_aws, queues.url, vt=30), FakeContext(60)))
    # THEN the second is reported done (Lambda deletes it) without running: a duplicate
    assert responses == [{"batchItemFailures": []}, {"batchItemFailures": []}]
    assert len(sqs_handlers.RECORDED_RUNS) == 1
    outcomes = {r["MessageId"]: r["Outcome"] for r in read_emf(io.StringIO(capsys.readouterr().out))}
    assert outcomes == {ids[0]: "success", ids[1]: "duplicate"}


def test_a_key_path_that_cannot_be_imported_stops_the_consumer_at_start() -> None:
    # GIVEN a key path naming nothing, or something not callable
    with pytest.raises(ValueError, match="'sqs_handlers' has no attribute 'no_key'"):
        configured_key("sqs_handlers:no_key")
    with pytest.raises(ValueError, match="'sqs_handlers:RECORDED_RUNS' is not callable"):
        configured_key("sqs_handlers:RECORDED_RUNS")
    # WHEN the Lambda entry point is built: THEN an init error naming the variable
    with pytest.raises(EntryConfigurationError, match=r"SQSLEASE_IDEMPOTENCY_KEY='nowhere:key': cannot import"):
        build_handler({"SQSLEASE_HANDLER": "sqs_handlers:recorded_job", "SQSLEASE_IDEMPOTENCY_KEY": "nowhere:key"})
    # WHEN the worker starts: THEN exit status 2 with the option named, as for a bad --handler
    result = subprocess.run(
        [*WORKER, "--queue-url", URL, "--handler", "sqs_handlers:recorded_job", "--idempotency-key", "sqs_handlers:no"],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests",
        timeout=60,
    )
    assert result.returncode == 2
    assert "--idempotency-key (SQSLEASE_IDEMPOTENCY_KEY): 'sqs_handlers' has no attribute 'no'" in result.stderr


def test_the_setting_round_trips_and_defaults_to_the_message_id() -> None:
    assert (
        ConsumerConfig.from_env({"SQSLEASE_IDEMPOTENCY_KEY": "app.keys:order"}).lease.idempotency_key
        == "app.keys:order"
    )
    assert ConsumerConfig.from_args(["--idempotency-key", "app.keys:order"]).lease.idempotency_key == "app.keys:order"
    assert ConsumerConfig.from_env({}).lease.idempotency_key is None
    assert configured_key(None).__name__ == "message_id_key"


def test_a_key_without_the_table_is_logged_as_ignored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a key named in the settings but no SQSLEASE_IDEMPOTENCY_TABLE (idempotency off)
    monkeypatch.delenv("SQSLEASE_IDEMPOTENCY_TABLE", raising=False)
    # WHEN a worker is made
    worker = Worker(FakeSQS(), URL, sqs_handlers.recorded_job, LeaseSettings(idempotency_key="sqs_handlers:order_key"))
    # THEN it builds no gate and says the key does nothing
    assert worker.processor.idempotency is None
    assert "the idempotency key is ignored: idempotency is off (set SQSLEASE_IDEMPOTENCY_TABLE)" in caplog.text
