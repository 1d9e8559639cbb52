"""The example job types: one queue + DLQ pair each, alarms wired to one encrypted SNS topic."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from jobqueues import JobQueue, JobQueueAlarmProps


class JobQueuesStack(Stack):
    """A realistic set of job types, one per way of deriving the visibility timeout."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)

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
            # A container worker; seed guidance: p99 4 min -> VT 8 min.
            "VideoTranscode": JobQueue(
                self, "VideoTranscode", processing_p99=Duration.minutes(4), max_receive_count=3, alarms=alarms
            ),
            # Short job; seed guidance: p99 3 s -> VT 10 s (the floor).
            "EmailSend": JobQueue(self, "EmailSend", processing_p99=Duration.seconds(3), alarms=alarms),
            # Lambda consumer: VT = 6 x 30 s + 5 s = 185 s.
            "Thumbnails": JobQueue(
                self,
                "Thumbnails",
                lambda_timeout=Duration.seconds(30),
                max_batching_window=Duration.seconds(5),
                alarms=alarms,
            ),
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
