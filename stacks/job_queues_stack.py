"""The example job types: queues + DLQs, a Lambda job and an ECS job, alarms wired to one encrypted SNS topic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from jobqueues import EcsJob, JobQueue, JobQueueAlarmProps, LambdaJob
from jobqueues.cluster import deploy_time_availability_zones

HANDLERS = Path(__file__).resolve().parent.parent / "lambda_src" / "handlers"


class JobQueuesStack(Stack):
    """A realistic set of job types, one per way of deriving the visibility timeout."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)

        # Every job type below is on the stack's fleet dashboard (`JobQueuesExample_fleet`), with no declaration of
        # its own.
        # Alarm notifications: a customer-managed key because CloudWatch must be allowed to use it
        # (the AWS-managed aws/sns key cannot grant that).
        key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, description="Job queue alarm topic")
        key.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=["*"],
            )
        )
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        alarms = JobQueueAlarmProps(topic=topic)

        self.job_queues = {
            # A container worker; p99 4 min -> VT 8 min.
            "VideoTranscode": JobQueue(
                self, "VideoTranscode", processing_p99=Duration.minutes(4), max_receive_count=3, alarms=alarms
            ),
            # Short job: p99 3 s -> VT 10 s (the floor).
            "EmailSend": JobQueue(self, "EmailSend", processing_p99=Duration.seconds(3), alarms=alarms),
            # Lambda job: the function, its event source and the sqslease layer; VT = 6 x 30 s + 5 s = 185 s; an
            # alarm when the backlog would take over 30 min to drain at the current deletion rate.
            "Thumbnails": LambdaJob(
                self,
                "Thumbnails",
                code=lambda_.Code.from_asset(str(HANDLERS)),
                handler="thumbs.handle",
                timeout=Duration.seconds(30),
                batch_size=10,
                max_batching_window=Duration.seconds(5),
                max_time_to_drain=Duration.minutes(30),
                alarms=alarms,
            ).job_queue,
            # ECS job: a Fargate worker service; p99 5 s -> VT 10 s, leases extended up to 15 min; an alarm when
            # the p99 wait before a run exceeds the 2 min promised; idempotency records (the stack's DynamoDB
            # table), so a redelivery of a completed job is deleted unrun.
            "Transcode": EcsJob(
                self,
                "Transcode",
                handler="media.transcode:handle",
                processing_p99=Duration.seconds(5),
                max_processing_time=Duration.minutes(15),
                max_queue_time=Duration.minutes(2),
                max_receive_count=3,
                concurrency=4,
                max_tasks=10,
                alarms=alarms,
                idempotency=True,
            ).job_queue,
            # Ordered per customer: FIFO with content-based deduplication; VT = 10 s floor.
            "OrderEvents": JobQueue(
                self,
                "OrderEvents",
                processing_p99=Duration.seconds(2),
                fifo=True,
                content_based_deduplication=True,
                alarms=alarms,
            ),
            # Unpredictable duration (30 s to 3 h): a 5-min lease that sqslease keeps extending.
            "ReportExport": JobQueue(
                self,
                "ReportExport",
                processing_p99=Duration.minutes(40),
                visibility_timeout=Duration.minutes(5),
                lease_extension=True,
                max_processing_time=Duration.hours(3),
                max_receive_count=3,
                alarms=alarms,
            ),
        }

    @property
    def availability_zones(self) -> list[str]:
        """The zones CloudFormation picks at deploy time: with a concrete account (``CDK_DEFAULT_ACCOUNT``, as
        ``cdk`` sets it) the VPC would otherwise make synth look the account's zones up."""
        return deploy_time_availability_zones()
