"""A consumer told an emulator's queue URL sends its requests there, not to AWS (docs/sqslease.md).

Without ``AWS_ENDPOINT_URL``, botocore sends every request to SQS's regional endpoint whatever the ``QueueUrl``
says: a worker or a Lambda function given ``http://localhost:PORT/ACCOUNT/NAME`` reached AWS instead (and with
credentials, a real account). The unit rules first, then a worker process and the Lambda adapter, each in a process
of its own with no endpoint configured, against moto_server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.moto_queues import counts, make_queue, receive_all, send
from support.waiting import wait_for

from jobqueues.emulator.server import LOCAL_AWS_ENV, LocalServer
from sqslease.clients import queue_endpoint

ROOT = Path(__file__).resolve().parent.parent
SOURCES = os.pathsep.join([str(ROOT / "tests"), str(ROOT / "lambda_src")])


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("http://localhost:4566/123456789012/jobs", {}, {"endpoint_url": "http://localhost:4566"}),
        ("https://proxy.internal/123456789012/jobs", {}, {"endpoint_url": "https://proxy.internal"}),
        (
            "https://vpce-0a1b-2c3d.sqs.eu-west-1.vpce.amazonaws.com/123456789012/jobs",
            {},
            {"endpoint_url": "https://vpce-0a1b-2c3d.sqs.eu-west-1.vpce.amazonaws.com"},
        ),
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", {}, {}),  # botocore's own endpoint
        ("https://eu-west-1.queue.amazonaws.com/123456789012/jobs", {}, {}),
        ("http://localhost:4566/123456789012/jobs", {"AWS_ENDPOINT_URL": "http://proxy:1"}, {}),  # configured wins
        ("http://localhost:4566/123456789012/jobs", {"AWS_ENDPOINT_URL_SQS": "http://proxy:1"}, {}),
        ("jobs", {}, {}),
    ],
)
def test_the_endpoint_is_the_queue_url_s_host_unless_aws_s_or_configured(
    url: str, environ: dict[str, str], expected: dict[str, str]
) -> None:
    assert queue_endpoint(url, environ) == expected


def no_endpoint_env() -> dict[str, str]:
    """This process's environment, the emulator's credentials and region, and no endpoint configured."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**environ, **LOCAL_AWS_ENV, "PYTHONPATH": SOURCES}


def test_a_worker_given_an_emulator_s_queue_url_consumes_it(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN 3 jobs on the emulator, and a worker told only its queue URL (no AWS_ENDPOINT_URL)
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a", "b", "c"])
    events = tmp_path / "events"
    worker = subprocess.Popen(
        [sys.executable, "-m", "sqslease.worker", "--queue-url", queues.url, "--handler", "sqs_handlers:recorded_job"],
        env={**no_endpoint_env(), "TEST_EVENTS_FILE": str(events), "SQSLEASE_WAIT_TIME": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # WHEN it runs THEN it receives and deletes them there
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0), timeout_s=60)
    finally:
        worker.terminate()
        _, stderr = worker.communicate(timeout=60)
    assert "amazonaws.com" not in stderr.decode(), stderr.decode()[-2000:]


ADAPTER = """
import json, sys
from sqslease.lambda_adapter import sqs_batch_handler

def handle(body, message):
    if body == "bad":
        raise RuntimeError("bad job")

print(json.dumps(sqs_batch_handler(handle)(json.loads(sys.stdin.read()), None)))
"""


def test_the_lambda_adapter_given_an_emulator_s_queue_url_renews_and_settles_there(local_aws: LocalServer) -> None:
    # GIVEN an event built from 3 messages really received from the emulator, one of which fails
    queues = make_queue(local_aws, vt=30)
    send(local_aws, queues.url, ["a", "bad", "c"])
    received = receive_all(local_aws, queues.url)
    arn = f"arn:aws:sqs:us-east-1:123456789012:{queues.url.rsplit('/', 1)[1]}"
    records = [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": {**m.get("Attributes", {}), "ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": "us-east-1",
        }
        for m in received
    ]
    # WHEN the adapter runs it, told the queue's URL only (no AWS_ENDPOINT_URL), lease extension on
    environ = {**no_endpoint_env(), "SQSLEASE_QUEUE_URL": queues.url, "SQSLEASE_VISIBILITY_TIMEOUT": "40"}
    done = subprocess.run(
        [sys.executable, "-c", ADAPTER],
        input=json.dumps({"Records": records}),
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN its lease requests reached the emulator: only the failed record is reported, none lost its lease
    assert done.returncode == 0, done.stderr[-3000:]
    bad = next(m["MessageId"] for m in received if m["Body"] == "bad")
    assert json.loads(done.stdout.splitlines()[-1]) == {"batchItemFailures": [{"itemIdentifier": bad}]}
    assert "amazonaws.com" not in done.stderr and "could not be renewed" not in done.stderr, done.stderr[-3000:]
