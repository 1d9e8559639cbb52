"""GIVEN a Lambda job, an ECS job, FIFO jobs on a KMS key and consumers brought to declared and imported job queues
WHEN synthesized THEN each stack's template equals, as JSON (``Template.to_json()``), the one pinned in
``tests/consumer_templates/``.

The consumers' synth is made cheaper by computing in Python what the CDK's Node kernel was asked (logical ids,
tokens, metric objects): a change of that kind must leave every template as it was, and this says so. Asset hashes
are masked (the layer's hash follows ``lambda_src/``, not the constructs). A template changed on purpose is pinned
again with :data:`PIN` set to 1 (``JOBQUEUES_PIN_TEMPLATES=1 .venv/bin/python -m pytest
tests/test_consumer_templates.py``); review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_helpers import ENV, lint_template
from test_brought_consumer_options import worker_service
from test_idempotency_constructs import HANDLERS, REGISTRY_IMAGE, JobsStack, inline_function

from jobqueues import EcsJob, JobQueue, JobQueueAlarmProps, LambdaJob

PINNED = Path(__file__).resolve().parent / "consumer_templates"
#: The variable that, set to 1, writes the templates as pinned instead of comparing them.
PIN = "JOBQUEUES_PIN_TEMPLATES"
STACKS = ("LambdaJobs", "EcsJobs", "FifoKmsJobs", "BroughtConsumers")
#: An asset's content hash (64 hex digits), wherever it appears: an S3 key, an image tag, a metadata path.
_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def _lambda_jobs(stack: cdk.Stack) -> None:
    code = lambda_.Code.from_asset(HANDLERS)
    LambdaJob(
        stack,
        "Thumbnails",
        code=code,
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        batch_size=10,
        max_batching_window=Duration.seconds(5),
        max_concurrency=50,
    )
    topic = sns.Topic(stack, "Pager", enforce_ssl=True)
    LambdaJob(
        stack,
        "Resize",
        code=code,
        handler="thumbs.handle",
        timeout=Duration.seconds(10),
        lease_extension=True,
        max_queue_time=Duration.seconds(30),
        max_time_to_drain=Duration.minutes(10),
        alarms=JobQueueAlarmProps(topic=topic),
    )


def _ecs_jobs(stack: cdk.Stack) -> None:
    EcsJob(
        stack,
        "VideoTranscode",
        handler="media.transcode:handle",
        processing_p99=Duration.minutes(4),
        max_processing_time=Duration.hours(3),
        concurrency=4,
        max_tasks=20,
    )
    EcsJob(
        stack,
        "Render",
        handler="render:handle",
        processing_p99=Duration.seconds(30),
        max_queue_time=Duration.minutes(2),
        fair=True,
    )


def _fifo_kms_jobs(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    LambdaJob(
        stack,
        "Ledger",
        code=lambda_.Code.from_asset(HANDLERS),
        handler="thumbs.handle",
        timeout=Duration.seconds(30),
        fifo=True,
        encryption_key=key,
    )
    EcsJob(stack, "Settle", handler="settle:handle", processing_p99=Duration.seconds(20), fifo=True, encryption_key=key)


def _brought_consumers(stack: cdk.Stack) -> None:
    emails = JobQueue(stack, "Emails", lambda_timeout=Duration.seconds(30))
    emails.add_lambda_consumer(inline_function(stack, "EmailsFn"), batch_size=5)
    invoices = JobQueue(stack, "Invoices", processing_p99=Duration.seconds(20), lease_extension=True)
    invoices.add_ecs_consumer(worker_service(stack, invoices, "Invoices"), max_tasks=3)
    arn = "arn:aws:sqs:us-east-1:123456789012:{}"
    adopted = JobQueue.from_queue_attributes(
        stack,
        "Adopted",
        job_type="Adopted",
        queue=sqs.Queue.from_queue_arn(stack, "AdoptedQueue", arn.format("adopted")),
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, "AdoptedDlq", arn.format("adopted-dlq")),
        visibility_timeout=Duration.minutes(3),
    )
    adopted.add_lambda_consumer(inline_function(stack, "AdoptedFn"))


def masked(template: dict[str, Any]) -> str:
    """The template's JSON, keys sorted, asset hashes masked."""
    return _ASSET_HASH.sub("<asset hash>", json.dumps(template, indent=1, sort_keys=True)) + "\n"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE}, outdir=str(tmp_path_factory.mktemp("cdk.out")))
    builds = (_lambda_jobs, _ecs_jobs, _fifo_kms_jobs, _brought_consumers)
    stacks = {name: JobsStack(app, name, env=ENV) for name in STACKS}
    for name, build in zip(STACKS, builds, strict=True):
        build(stacks[name])
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {
        "dir": Path(assembly.directory),
        "templates": {n: Template.from_stack(s).to_json() for n, s in stacks.items()},
    }


@pytest.mark.parametrize("stack", STACKS)
def test_the_template_is_the_pinned_one(synthesized: dict[str, Any], stack: str) -> None:
    text = masked(synthesized["templates"][stack])
    pinned = PINNED / f"{stack}.json"
    if os.environ.get(PIN) == "1":
        pinned.parent.mkdir(exist_ok=True)
        pinned.write_text(text)
    differs = f"{stack}'s template differs from {pinned} ({PIN}=1 pins it again)"
    assert json.loads(text) == json.loads(pinned.read_text()), differs


@pytest.mark.parametrize("stack", STACKS)
def test_the_templates_are_cfn_lint_clean(synthesized: dict[str, Any], stack: str) -> None:
    findings = lint_template(synthesized["dir"] / f"{stack}.template.json")
    assert [f"{m.rule.id} {m.message}" for m in findings] == []
