"""A job type's payload bucket (``payload_bucket``, ``delete_payloads``): its expiry derived from the queues'
retention, the declarations refused at synth, the bucket and the grants in the template, cdk-nag and cfn-lint clean."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import aws_cdk.assertions
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from cdk_helpers import ENV, lint_template
from test_idempotency_constructs import REGISTRY_IMAGE, JobsStack, inline_function, lambda_job

from jobqueues import EcsJob, JobQueue, JobQueueError
from jobqueues.marker_format import QUEUE_MARKER, resource_metadata
from jobqueues.payload_rules import payload_expiration_days, payload_problems
from sqslease.config import ConsumerConfig

DAY = 86_400


@pytest.mark.parametrize(
    ("retention_s", "dlq_retention_s", "days"),
    [
        (4 * DAY, 14 * DAY, 19),  # the defaults: a pointer dead-lettered on its last day lives 18 days
        (60, 60, 2),  # a minute each: a day, plus the margin
        (DAY + 1, DAY, 4),  # whole days, rounded up
        (None, 4 * DAY, 19),  # a token counts as SQS's longest, 14 days
        (None, None, 29),
    ],
)
def test_objects_expire_a_day_after_the_longest_a_pointer_can_live_in_the_queues(
    retention_s: float | None, dlq_retention_s: float | None, days: int
) -> None:
    assert payload_expiration_days(retention_s, dlq_retention_s) == days


def test_delete_payloads_without_a_bucket_does_nothing_and_is_refused() -> None:
    (problem,) = payload_problems(bucket=False, delete_payloads=False, fifo=False, content_based_deduplication=False)
    assert problem.startswith("delete_payloads=False does nothing without payload_bucket: pass payload_bucket=True")


def test_a_bucket_on_a_content_deduplicated_fifo_queue_is_refused() -> None:
    (problem,) = payload_problems(bucket=True, delete_payloads=None, fifo=True, content_based_deduplication=True)
    assert "payload_bucket with content_based_deduplication=True" in problem
    assert "drop content_based_deduplication" in problem


@pytest.mark.parametrize("delete_payloads", [None, True, False])
def test_a_bucket_with_or_without_deletion_is_fine(delete_payloads: bool | None) -> None:
    assert (
        payload_problems(bucket=True, delete_payloads=delete_payloads, fifo=True, content_based_deduplication=False)
        == []
    )


# --- the constructs ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A LambdaJob with a bucket of its own (SQS-managed queue), a KMS EcsJob with one, a queue-only job type with a
    bucket of the user's and deletion off, a producer granted on it, and a job queue without a bucket. cdk-nag on."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    stack = JobsStack(app, "Jobs", env=ENV)
    lambda_job(stack, "Renders", payload_bucket=True, retention_period=Duration.days(1))
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    EcsJob(
        stack,
        "Transcode",
        handler="media.transcode:handle",
        processing_p99=Duration.minutes(4),
        image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
        encryption_key=key,
        payload_bucket=True,
    )
    own = s3.Bucket.from_bucket_name(stack, "Own", "team-archive")  # made elsewhere: its settings are the team's
    archive = JobQueue(stack, "Archive", lambda_timeout=Duration.seconds(30), payload_bucket=own, delete_payloads=False)
    archive.add_lambda_consumer(inline_function(stack, "ArchiveFn"))
    producer = iam.Role(stack, "Producer", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    archive.grant_send_messages(producer)
    JobQueue(stack, "Plain", processing_p99=Duration.seconds(5))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "dir": Path(assembly.directory), "json": assembly.get_stack_by_name("Jobs").template}


def resources(synthesized: dict, kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in synthesized["json"]["Resources"].items() if v["Type"] == kind}


def statements(synthesized: dict, policy_prefix: str) -> list[dict[str, Any]]:
    found = [
        statement
        for logical_id, policy in resources(synthesized, "AWS::IAM::Policy").items()
        if logical_id.startswith(policy_prefix)
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert found, f"no policy {policy_prefix}*"
    return found


def s3_actions(synthesized: dict, policy_prefix: str) -> dict[str, Any]:
    """S3 action -> the resource granted, in the policy whose logical id starts with ``policy_prefix``."""
    granted = {}
    for statement in statements(synthesized, policy_prefix):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        granted.update({a: statement["Resource"] for a in actions if a.startswith("s3:")})
    return granted


def objects_of(logical_id: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [{"Fn::GetAtt": [logical_id, "Arn"]}, "/*"]]}


def test_true_makes_a_bucket_encrypted_as_the_queues_tls_only_private_and_expiring(synthesized: dict) -> None:
    buckets = resources(synthesized, "AWS::S3::Bucket")
    renders = next(v["Properties"] for k, v in buckets.items() if k.startswith("RendersQueuePayloadBucket"))
    transcode = next(v["Properties"] for k, v in buckets.items() if k.startswith("TranscodeQueuePayloadBucket"))
    # SQS-managed queue: S3-managed keys; KMS queue: the queue's key, with a bucket key (fewer KMS requests)
    (sse,) = renders["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert sse["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    (kms_sse,) = transcode["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    key_id = next(k for k in synthesized["json"]["Resources"] if k.startswith("Key"))
    assert kms_sse["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": [key_id, "Arn"]},
    }
    assert kms_sse["BucketKeyEnabled"] is True
    # retention 1 day + the DLQ's 14 + a day; the defaults 4 + 14 + 1
    for properties, days in ((renders, 16), (transcode, 19)):
        (rule,) = properties["LifecycleConfiguration"]["Rules"]
        assert rule["ExpirationInDays"] == days and rule["Status"] == "Enabled"
        assert properties["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
    # TLS only: a deny on aws:SecureTransport false, for every bucket made
    policies = resources(synthesized, "AWS::S3::BucketPolicy")
    assert sum(
        any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        )
        for p in policies.values()
    ) == len(buckets)
    # kept when the stack goes (CloudFormation cannot delete a bucket that holds objects)
    assert {v["DeletionPolicy"] for k, v in buckets.items() if "PayloadBucket" in k} == {"Retain"}
    assert len(buckets) == 2  # none made for the user's bucket, none for Plain


def test_the_consumer_reads_and_deletes_only_its_buckets_objects(synthesized: dict) -> None:
    buckets = resources(synthesized, "AWS::S3::Bucket")
    renders = next(k for k in buckets if k.startswith("RendersQueuePayloadBucket"))
    transcode = next(k for k in buckets if k.startswith("TranscodeQueuePayloadBucket"))
    own = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::team-archive/*"]]}
    assert s3_actions(synthesized, "RendersRole") == {
        "s3:GetObject": objects_of(renders),
        "s3:DeleteObject": objects_of(renders),
    }
    assert s3_actions(synthesized, "TranscodeTaskTaskRole") == {
        "s3:GetObject": objects_of(transcode),
        "s3:DeleteObject": objects_of(transcode),
    }
    # deletion off: read only; a producer: put only
    assert s3_actions(synthesized, "ArchiveFnRole") == {"s3:GetObject": own}
    assert s3_actions(synthesized, "Producer") == {"s3:PutObject": own}


def test_the_bucket_is_on_the_queues_marker_where_the_command_finds_it(synthesized: dict) -> None:
    queues = resources(synthesized, "AWS::SQS::Queue")
    markers = {
        m[QUEUE_MARKER]["job_type"]: m[QUEUE_MARKER]
        for logical_id, m in resource_metadata(synthesized["json"]).items()
        if QUEUE_MARKER in m and logical_id in queues
    }
    assert markers["Archive"]["payload_bucket"] == {"name": "team-archive"}
    assert markers["Renders"]["payload_bucket"]["logical_id"].startswith("RendersQueuePayloadBucket")
    assert "payload_bucket" not in markers["Plain"]


def test_the_template_is_cfn_lint_clean(synthesized: dict) -> None:
    findings = lint_template(synthesized["dir"] / "Jobs.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "delete_payloads without a bucket": (
        {"delete_payloads": False},
        "delete_payloads=False does nothing without payload_bucket: pass payload_bucket=True",
    ),
    "a bucket on a content-deduplicated FIFO queue": (
        {"payload_bucket": True, "fifo": True, "content_based_deduplication": True},
        "payload_bucket with content_based_deduplication=True",
    ),
    "a bucket that is no bucket": (
        {"payload_bucket": "my-bucket"},
        "payload_bucket='my-bucket' is a str, not a bool or an s3.IBucket: pass True",
    ),
    "delete_payloads not a bool": (
        {"payload_bucket": True, "delete_payloads": "no"},
        "delete_payloads='no' is a str, not a bool",
    ),
}


@pytest.mark.parametrize("case", BAD)
@pytest.mark.parametrize("kind", ["JobQueue", "LambdaJob", "EcsJob"])
def test_a_declaration_the_bucket_cannot_serve_is_refused_naming_prop_value_and_fix(kind: str, case: str) -> None:
    props, message = BAD[case]
    stack = JobsStack(cdk.App(), "Bad", env=ENV)
    with pytest.raises(JobQueueError, match=re.escape(message)):
        if kind == "JobQueue":
            JobQueue(stack, "Job", processing_p99=Duration.seconds(5), **props)
        elif kind == "LambdaJob":
            lambda_job(stack, "Job", **props)
        else:
            EcsJob(
                stack,
                "Job",
                handler="media.transcode:handle",
                processing_p99=Duration.seconds(5),
                image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
                **props,
            )


def test_delete_payloads_false_is_told_to_the_consumer_and_read_back_by_sqslease(synthesized: dict) -> None:
    functions = resources(synthesized, "AWS::Lambda::Function")
    variables = {
        name: next(v for k, v in functions.items() if k.startswith(name))["Properties"]["Environment"]["Variables"]
        for name in ("ArchiveFn", "Renders")
    }
    # deletion off: told (and sqslease reads it back); on, the default: not written
    told = {k: v for k, v in variables["ArchiveFn"].items() if isinstance(v, str)}
    assert told["SQSLEASE_DELETE_PAYLOADS"] == "false"
    assert ConsumerConfig.from_env(told).lease.delete_payloads is False
    assert "SQSLEASE_DELETE_PAYLOADS" not in variables["Renders"]


def test_an_ecs_worker_is_told_delete_payloads_false_in_its_command() -> None:
    stack = JobsStack(cdk.App(), "Workers", env=ENV)
    job = EcsJob(
        stack,
        "Scans",
        handler="media.transcode:handle",
        processing_p99=Duration.seconds(5),
        image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
        payload_bucket=True,
        delete_payloads=False,
    )
    template = cdk.assertions.Template.from_stack(stack).to_json()
    (task,) = [v for v in template["Resources"].values() if v["Type"] == "AWS::ECS::TaskDefinition"]
    command = task["Properties"]["ContainerDefinitions"][0]["Command"]
    assert command[command.index("--delete-payloads") + 1] == "false"
    assert job.job_queue.delete_payloads is False
