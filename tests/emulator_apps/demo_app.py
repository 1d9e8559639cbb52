#!/usr/bin/env python3
"""A stand-in for the example app's consumers, in plain aws-cdk-lib, for the demo's end-to-end test.

It emits what the ``LambdaJob`` and ``EcsJob`` constructs are specified to emit for ``Thumbnails`` and
``Transcode`` (queue names, visibility timeouts, the sqslease layer, the function's ``SQSLEASE_*``
environment, the event source mapping, the worker's command line), so that ``local_emulator.demo`` can be
tested before those constructs land. ``tests/test_demo.py`` deploys the real example app instead once it
declares them. Nothing needs Docker: the layer is a staged copy of ``lambda_src/sqslease``.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "lambda_src"))

import aws_cdk as cdk  # noqa: E402
from aws_cdk import Duration, Stack  # noqa: E402
from aws_cdk import aws_ecs as ecs  # noqa: E402
from aws_cdk import aws_lambda as lambda_  # noqa: E402
from aws_cdk import aws_lambda_event_sources as event_sources  # noqa: E402
from aws_cdk import aws_sqs as sqs  # noqa: E402
from constructs import Construct  # noqa: E402

from sqslease.settings import LeaseSettings  # noqa: E402

STACK_NAME = "JobQueuesExample"


def staged_layer() -> str:
    """A directory laid out as a Lambda layer: ``python/sqslease/...`` (removed when the app exits)."""
    staging = Path(tempfile.mkdtemp(prefix="sqslease-layer-"))
    atexit.register(shutil.rmtree, staging, ignore_errors=True)
    shutil.copytree(
        ROOT / "lambda_src" / "sqslease",
        staging / "python" / "sqslease",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return str(staging)


class DemoConsumersStack(Stack):
    """``Thumbnails`` (Lambda job), ``Transcode`` (ECS job) and a plain ``EmailSend`` job queue."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self._queue_pair("EmailSend", 10, 5)
        self._thumbnails()
        self._transcode()

    def _queue_pair(self, name: str, vt: int, max_receive_count: int) -> tuple[sqs.Queue, sqs.Queue]:
        dlq = sqs.Queue(self, f"{name}Dlq", queue_name=f"{STACK_NAME}-{name}-dlq", retention_period=Duration.days(14))
        queue = sqs.Queue(
            self,
            f"{name}Queue",
            queue_name=f"{STACK_NAME}-{name}",
            visibility_timeout=Duration.seconds(vt),
            dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=max_receive_count),
        )
        return queue, dlq

    def _thumbnails(self) -> None:
        queue, dlq = self._queue_pair("Thumbnails", 6 * 30 + 5, 5)
        layer = lambda_.LayerVersion(
            self,
            "SqsLeaseLayer",
            code=lambda_.Code.from_asset(staged_layer()),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
        )
        settings = LeaseSettings(visibility_timeout=185, max_batching_window=5, job_type="Thumbnails")
        function = lambda_.Function(
            self,
            "ThumbnailsFunction",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="sqslease.lambda_entry.handler",
            code=lambda_.Code.from_asset(str(ROOT / "lambda_src" / "handlers"), exclude=["__pycache__"]),
            timeout=Duration.seconds(30),
            layers=[layer],
            environment={
                **settings.to_env(),
                "SQSLEASE_QUEUE_URL": queue.queue_url,
                "SQSLEASE_DEAD_LETTER_QUEUE_URL": dlq.queue_url,
                "SQSLEASE_HANDLER": "thumbs.handle",
            },
        )
        function.add_event_source(
            event_sources.SqsEventSource(
                queue, batch_size=10, max_batching_window=Duration.seconds(5), report_batch_item_failures=True
            )
        )

    def _transcode(self) -> None:
        queue, dlq = self._queue_pair("Transcode", 10, 3)
        settings = LeaseSettings(visibility_timeout=10, heartbeat=True, max_total_lease=900, job_type="Transcode")
        task = ecs.FargateTaskDefinition(self, "TranscodeTask", cpu=512, memory_limit_mib=1024)
        task.add_container(
            "worker",
            image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.12-slim"),
            command=[
                "python",
                "-m",
                "sqslease.worker",
                "--handler",
                "media.transcode:handle",
                "--concurrency",
                "4",
                "--queue-url",
                queue.queue_url,
                "--dead-letter-queue-url",
                dlq.queue_url,
                *settings.to_args(),
            ],
        )
        queue.grant_consume_messages(task.task_role)


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    DemoConsumersStack(app, STACK_NAME, env=cdk.Environment(account="123456789012", region="us-east-1"))
    return app


if __name__ == "__main__":
    build_app().synth()
