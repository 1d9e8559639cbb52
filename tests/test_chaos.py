"""``--chaos`` end to end: real ``python -m sqslease.worker`` processes talk to moto_server through the chaos
proxy (20 % of SQS requests faulted) while the killer sends kill -9 and SIGTERM; the report, built from the
workers' own EMF lines, what the proxy saw and the queues' end state, finds 0 lost and 0 run on two live handlers.

The fleet's shape and worker settings are test_fault_injection's (its invariants are checked there from the
handlers' own records; here the subject is the report the user sees). Also: the proxy passes non-SQS requests
untouched.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.moto_queues import counts, make_queue
from support.worker_processes import ROOT, SQSLEASE_SRC
from test_fault_injection import FleetConfig

from jobqueues.emulator.chaos import Chaos, Fault, FaultProxy, MessageLedger, queue_ids, read_queue_state
from jobqueues.emulator.server import LocalServer

CONFIG = FleetConfig(jobs=80, workers=3, concurrency=3, fault_rate=0.2, kill_every_s=3.0, deadline_s=60)


def send_jobs(server: LocalServer, url: str, config: FleetConfig) -> dict[str, str]:
    """``fleet_job`` bodies (a quarter longer than the lease); returns message id -> job id."""
    rng = random.Random(config.random_state)
    sqs = server.client("sqs")
    ids: dict[str, str] = {}
    for start in range(0, config.jobs, 10):
        entries = []
        for i in range(start, min(start + 10, config.jobs)):
            seconds = rng.uniform(*config.long_s) if rng.random() < config.long_share else rng.uniform(*config.short_s)
            entries.append({"Id": str(i), "MessageBody": json.dumps({"id": f"j{i}", "seconds": round(seconds, 3)})})
        response = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not response.get("Failed"), response
        ids.update({entry["MessageId"]: f"j{entry['Id']}" for entry in response["Successful"]})
    return ids


def start_worker(server: LocalServer, url: str, endpoint: str, tmp: Path, config: FleetConfig) -> subprocess.Popen:
    """A worker whose stdout (its EMF lines) goes to ``tmp/<n>.emf``, as the runner ships one stream a process."""
    n = len(list(tmp.glob("*.emf")))
    environment = {
        **os.environ,
        **server.env(),
        "AWS_ENDPOINT_URL": endpoint,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(SQSLEASE_SRC)]),
        "TEST_EVENTS_FILE": str(tmp / "events"),
        "SQSLEASE_HEARTBEAT_INTERVAL": str(config.heartbeat_interval),
    }
    command = [sys.executable, "-m", "sqslease.worker", "--queue-url", url, "--handler", "sqs_handlers:fleet_job"]
    command += ["--concurrency", str(config.concurrency), *config.worker_args()]
    with (tmp / f"{n}.emf").open("ab") as stdout, (tmp / f"{n}.log").open("ab") as stderr:
        return subprocess.Popen(command, env=environment, stdout=stdout, stderr=stderr)


def test_chaos_reports_no_message_lost_and_none_on_two_live_handlers(local_aws: LocalServer, tmp_path: Path) -> None:
    queues = make_queue(local_aws, vt=30, max_receive_count=CONFIG.max_receive_count)
    jobs = send_jobs(local_aws, queues.url, CONFIG)
    started = time.monotonic()
    fleet: list[subprocess.Popen] = []
    chaos = Chaos(local_aws.endpoint, CONFIG.fault_rate, seed=1, kill_interval_s=CONFIG.kill_every_s, hold_s=1.5)
    with chaos.start(lambda: list(fleet)):
        assert chaos.killer is not None
        # The runner's part: keep `workers` workers that were not signalled (a SIGTERMed one drains meanwhile).
        while time.monotonic() - started < CONFIG.deadline_s:
            signalled = {kill.pid for kill in chaos.killer.kills}
            active = [p for p in fleet if p.poll() is None and p.pid not in signalled]
            for _ in range(CONFIG.workers - len(active)):
                fleet.append(start_worker(local_aws, queues.url, chaos.endpoint, tmp_path, CONFIG))
            if chaos.ledger.snapshot().deleted >= set(jobs) and counts(local_aws, queues.url) == (0, 0):
                break
            time.sleep(0.2)
        chaos.killer.stop()
        for process in fleet:
            process.terminate()
        for process in fleet:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    sqs = local_aws.client("sqs")
    final = [read_queue_state(sqs, "default", queues.url, queues.dlq_url, timeout_s=2)]
    streams = {path.stem: path.read_text().splitlines() for path in tmp_path.glob("*.emf")}
    report = chaos.report(streams, final)
    text = report.format()
    print(f"{text}\n{time.monotonic() - started:.0f} s, {len(streams)} worker processes")

    (row,) = report.job_types
    assert row.name == "default"  # the name read_queue_state gave the queue's deployment
    assert (report.lost, row.received, row.completed, row.still_queued, row.dead_lettered) == (
        0,
        len(jobs),
        len(jobs),
        0,
        0,
    ), text
    assert report.two_live_handlers == 0, text
    budget = (report.kills + report.sigterms) * CONFIG.concurrency  # README: duplicates <= kills x concurrency
    assert report.ran_twice <= budget, text
    assert report.kills + report.sigterms >= 3, text  # the kills really happened
    assert sum(report.faults.values()) / report.sqs_requests > 0.1, text  # 20 % asked; > 4 sigma below it
    assert {"throttle", "error500", "hold"} <= set(report.faults), text


def test_the_proxy_passes_other_services_untouched_and_observes_sqs(local_aws: LocalServer) -> None:
    ledger = MessageLedger()
    with FaultProxy(local_aws.endpoint, lambda operation, body: Fault("error500"), [ledger]) as proxy:
        through = type(local_aws)(proxy.endpoint, local_aws.process)
        logs = through.client("logs")  # JSON protocol, POST
        group = f"/chaos/{time.time_ns()}"
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName="w1")
        logs.put_log_events(
            logGroupName=group, logStreamName="w1", logEvents=[{"timestamp": int(time.time() * 1000), "message": "x"}]
        )
        assert [e["message"] for e in logs.get_log_events(logGroupName=group, logStreamName="w1")["events"]] == ["x"]
        s3 = through.client("s3")  # REST: PUT, GET, HEAD, DELETE
        bucket = f"chaos-{time.time_ns()}"
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="k", Body=b"payload")
        assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"payload"
        assert s3.head_object(Bucket=bucket, Key="k")["ContentLength"] == 7
        s3.delete_object(Bucket=bucket, Key="k")
        sqs = through.client("sqs")
        with pytest.raises(sqs.exceptions.ClientError, match="InternalError"):
            sqs.list_queues()
        assert proxy.requests() == proxy.faults() >= 1  # botocore retries 500s
        assert proxy.fault_kinds() == {"error500": proxy.faults()}
        assert proxy.passed["Logs_20140328"] == 4 and proxy.passed["PUT /" + bucket] >= 2, proxy.passed

        proxy.rule = lambda operation, body: None
        queues = make_queue(local_aws)
        local_aws.client("sqs").send_message(QueueUrl=queues.url, MessageBody="m")
        (message,) = sqs.receive_message(QueueUrl=queues.url, VisibilityTimeout=30)["Messages"]
        sqs.delete_message(QueueUrl=queues.url, ReceiptHandle=message["ReceiptHandle"])
    seen = ledger.snapshot()
    assert seen.received == {message["MessageId"]: queues.url.rsplit("/", 1)[-1]}
    assert seen.deleted == {message["MessageId"]}


def test_queue_ids_lists_visible_in_flight_and_dead_lettered_copies(local_aws: LocalServer) -> None:
    sqs = local_aws.client("sqs")
    queues = make_queue(local_aws, vt=30, max_receive_count=5)
    sent = {sqs.send_message(QueueUrl=queues.url, MessageBody=str(i))["MessageId"] for i in range(15)}
    held = sqs.receive_message(QueueUrl=queues.url, MaxNumberOfMessages=3, VisibilityTimeout=1)["Messages"]
    assert queue_ids(sqs, queues.url) == sent - {m["MessageId"] for m in held}  # one pass: what is visible
    assert queue_ids(sqs, queues.url, timeout_s=4) >= {m["MessageId"] for m in held}  # in flight, then visible
    attributes = {"sqslease.source_message_id": {"DataType": "String", "StringValue": "original-id"}}
    sqs.send_message(QueueUrl=queues.dlq_url, MessageBody="x", MessageAttributes=attributes)
    state = read_queue_state(sqs, "Jobs", queues.url, queues.dlq_url)
    assert state.dead_lettered == {"original-id"} and state.name == "Jobs"

    fifo = make_queue(local_aws, fifo=True)  # one group: a consuming read lists past its head
    group = [
        sqs.send_message(QueueUrl=fifo.url, MessageBody=str(i), MessageGroupId="g", MessageDeduplicationId=str(i))
        for i in range(12)
    ]
    assert queue_ids(sqs, fifo.url, consume=True) == {m["MessageId"] for m in group}
    assert counts(local_aws, fifo.url) == (0, 0)
