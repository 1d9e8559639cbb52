"""Large payloads end to end, as a team would use them: ``tests/payload_app`` (a ``LambdaJob``, a KMS ``EcsJob`` and a
queue-only job type, each with ``payload_bucket``) deployed to the emulator with the real ``cdk`` CLI and checked,
its consumers run as ``jobqueues local up`` runs them (the deployed worker command as a process, the deployed function
through the event-source driver), the official AWS SQS Extended Client as the producer and the reader."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment, deployment
from support.extended_client import payload, run_extended_client
from support.waiting import wait_for

from jobqueues.cli import main
from jobqueues.emulator.consumers.runner import ConsumerRunner
from jobqueues.emulator.deploy import DeployError, verify
from jobqueues.ops.discovery import Discovery, JobType, discover
from sqslease.payload_pointer import offload, parse_pointer

pytestmark = [NEEDS_CDK, pytest.mark.heavy]

APP_DIR = Path(__file__).resolve().parent / "payload_app"
STACK = "Payloads"
FIVE_MIB = 5 * 2**20
THREE_MIB = 3 * 2**20


@dataclass
class Running:
    """The deployed app, its job types, and the file its handlers write what they were handed to."""

    deployed: Deployment
    found: Discovery
    events: Path

    def job(self, name: str) -> JobType:
        return self.found.find(name)

    def lines(self) -> list[list[str]]:
        return [line.split() for line in self.events.read_text().splitlines()] if self.events.exists() else []

    def objects(self, job: JobType) -> list[str]:
        assert job.payload_bucket is not None
        s3 = self.deployed.server.client("s3")
        return [o["Key"] for o in s3.list_objects_v2(Bucket=job.payload_bucket).get("Contents", [])]

    def jq(self, *args: str) -> int:
        return int(main(["--endpoint-url", self.deployed.server.endpoint, *args]))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """``tests/payload_app`` deployed (and checked: every bucket's encryption, lifecycle and public access block),
    its consumers running locally, ticked as ``jobqueues local up`` ticks them."""
    events = tmp_path_factory.mktemp("payload-events") / "events"
    with deployment(tmp_path_factory, app=APP_DIR / "app.py", app_dir=APP_DIR) as deployed:
        found = discover(deployed.server.client("cloudformation"))
        local_env = {"PAYLOAD_EVENTS": str(events)}
        runner = ConsumerRunner(
            deployed.server,
            found.job_types,
            app_dir=APP_DIR,
            logs_dir=tmp_path_factory.mktemp("payload-logs"),
            scale_in_after_s=2,
            out=lambda line: None,
            environment={job.name: local_env for job in found.job_types},
        )
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(0.5):
                runner.tick()

        ticker = threading.Thread(target=tick, daemon=True)
        runner.start()
        ticker.start()
        try:
            yield Running(deployed, found, events)
        finally:
            stop.set()
            ticker.join(timeout=30)
            runner.stop()


def test_every_payload_bucket_is_deployed_and_checked(running: Running) -> None:
    # THEN each job type found its bucket in its stack, and the deploy compared each bucket's properties
    buckets = {name: running.job(name).payload_bucket for name in ("Renders", "Transcode", "Archive")}
    assert all(buckets.values()) and len(set(buckets.values())) == 3
    assert "AWS::S3::Bucket" in running.deployed.report.not_verifiable
    s3 = running.deployed.server.client("s3")
    transcode = buckets["Transcode"]
    rules = s3.get_bucket_lifecycle_configuration(Bucket=transcode)["Rules"]
    assert [(r["Status"], r["Expiration"]["Days"]) for r in rules] == [("Enabled", 19)]
    block = s3.get_public_access_block(Bucket=transcode)["PublicAccessBlockConfiguration"]
    assert all(block.values()) and len(block) == 4
    encryption = s3.get_bucket_encryption(Bucket=transcode)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert encryption["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    renders = s3.get_bucket_encryption(Bucket=buckets["Renders"])["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert renders["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"


def test_a_changed_lifecycle_fails_the_post_deploy_check(running: Running) -> None:
    # GIVEN a payload bucket whose objects would live 40 days instead of the template's 19
    bucket = running.job("Archive").payload_bucket
    s3 = running.deployed.server.client("s3")
    kept = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    changed = [{**rule, "Expiration": {"Days": 40}} for rule in kept]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": changed})
    try:
        # WHEN the deploy is checked THEN the check names the property and both values
        with pytest.raises(DeployError, match=r"LifecycleConfiguration.Rules\[0\].ExpirationInDays: template 19"):
            verify(running.deployed.server, running.deployed.assembly)
    finally:
        s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": kept})


@pytest.mark.parametrize("job_type", ["Transcode", "Renders"])
def test_the_deployed_consumer_reads_5_mib_the_official_client_sent_and_deletes_its_object(
    running: Running, job_type: str
) -> None:
    # GIVEN 5 MiB sent by the official client to the job type's queue, through its bucket
    job = running.job(job_type)
    assert job.queue_url is not None and job.payload_bucket is not None
    sent = run_extended_client(running.deployed.server.env(), "send", job.queue_url, job.payload_bucket, str(FIVE_MIB))
    # WHEN its deployed consumer (a worker process; the function through the event-source driver) runs it
    handed = ["payload", sent["message_id"], sent["sha256"], str(FIVE_MIB), str(FIVE_MIB)]
    assert wait_for(lambda: handed in running.lines(), timeout_s=120), running.lines()
    # THEN the handler had the payload byte for byte, and once the message was deleted its object went too
    assert wait_for(lambda: running.objects(job) == [], timeout_s=60)


def test_a_payload_jobqueues_send_offloaded_is_read_back_by_the_official_client(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a 3 MiB job, one line of a file
    job = running.job("Archive")
    text = payload(THREE_MIB)
    (tmp_path / "job.json").write_text(text + "\n")
    # WHEN jobqueues send sends it to a job type with a payload bucket
    assert running.jq("send", "Archive", "--file", str(tmp_path / "job.json")) == 0
    printed = capsys.readouterr().out
    assert "sent 1 message to Payloads/Archive" in printed
    # and says its body went through the job type's payload bucket
    assert printed == f"sent 1 message to Payloads/Archive, 1 body through payload bucket {job.payload_bucket}\n"
    assert len(running.objects(job)) == 1
    # THEN the official client reads it back byte for byte (and, deleting it, removes the object)
    assert job.queue_url is not None
    received = run_extended_client(running.deployed.server.env(), "receive", job.queue_url)
    assert received["bytes"] == THREE_MIB and received["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert running.objects(job) == []


def test_dlq_list_shows_a_dead_lettered_payloads_size_and_object(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a pointer in the Archive job type's DLQ
    job = running.job("Archive")
    assert job.dead_letter_queue_url is not None and job.payload_bucket is not None
    body, attributes = offload(running.deployed.server.client("s3"), job.payload_bucket, payload(THREE_MIB))
    sqs = running.deployed.server.client("sqs")
    sqs.send_message(QueueUrl=job.dead_letter_queue_url, MessageBody=body, MessageAttributes=attributes)
    pointer = parse_pointer(body, attributes)
    try:
        # WHEN its DLQ is listed THEN the row shows the payload's size and object, not the pointer's JSON
        assert running.jq("dlq", "list", "Archive", "--json") == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert (row["payload_bytes"], row["payload_pointer"]) == (THREE_MIB, pointer.url)
        assert running.jq("dlq", "list", "Archive") == 0
        table = capsys.readouterr().out  # the body column folds a long cell over lines: compare without blanks
        cells = "".join(line.split("│")[5] for line in table.splitlines() if line.count("│") == 7)
        assert "".join(cells.split()) == "".join(f"payload of {THREE_MIB:,} bytes in {pointer.url}".split())
    finally:
        sqs.purge_queue(QueueUrl=job.dead_letter_queue_url)


def test_send_json_counts_the_bodies_that_went_through_the_payload_bucket(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a file of three jobs, the second over the queue's maximum size
    job = running.job("Archive")
    assert job.queue_url is not None and job.payload_bucket is not None
    (tmp_path / "jobs.jsonl").write_text(f'{{"small": 1}}\n{payload(THREE_MIB)}\n{{"small": 2}}\n')
    before = set(running.objects(job))  # objects earlier tests left
    try:
        # WHEN jobqueues send sends it, as JSON
        assert running.jq("send", "Archive", "--file", str(tmp_path / "jobs.jsonl"), "--json") == 0
        result = json.loads(capsys.readouterr().out)
        # THEN three were sent, one of them through the bucket, which is named
        assert (result["sent"], result["offloaded"], result["payload_bucket"]) == (3, 1, job.payload_bucket)
        assert len(set(running.objects(job)) - before) == 1
        # and bodies the queue takes name no bucket
        assert running.jq("send", "Archive", "--body", '{"small": 3}', "--json") == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["sent"], result["offloaded"], result["payload_bucket"]) == (1, 0, None)
        assert running.jq("send", "Archive", "--body", '{"small": 4}') == 0
        assert capsys.readouterr().out == "sent 1 message to Payloads/Archive\n"
    finally:
        running.deployed.server.client("sqs").purge_queue(QueueUrl=job.queue_url)
        s3 = running.deployed.server.client("s3")
        for key in set(running.objects(job)) - before:
            s3.delete_object(Bucket=job.payload_bucket, Key=key)
