#!/usr/bin/env python3
"""A hand-written CDK app with one of each resource a jobqueues consumer emits (plain aws-cdk-lib).

``tests/test_emulator_consumers.py`` deploys it with the real ``cdk`` CLI to the local emulator, so
the emulator is proved to deploy each consumer resource independently of the jobqueues constructs that emit them.
Nothing here needs Docker: the function's code is inline and the layer is a plain directory asset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

STACK_NAME = "EmulatorConsumers"
HERE = Path(__file__).resolve().parent

HANDLER_CODE = """
def handler(event, context):
    return {"batchItemFailures": []}
"""


class ConsumersStack(Stack):
    """A Lambda consumer and a Fargate consumer, each on its own queue + DLQ pair."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self._lambda_consumer()
        self._fargate_consumer()

    @property
    def availability_zones(self) -> list[str]:
        """The region's first two zones as CloudFormation resolves them (no zone name in the template, cfn-lint
        W3010), and no lookup of the account's zones at synth."""
        return [Fn.select(i, Fn.get_azs()) for i in range(2)]

    def _queue_pair(self, name: str, visibility: Duration) -> sqs.Queue:
        dlq = sqs.Queue(self, f"{name}Dlq", queue_name=f"{STACK_NAME}-{name}-dlq", retention_period=Duration.days(14))
        return sqs.Queue(
            self,
            f"{name}Queue",
            queue_name=f"{STACK_NAME}-{name}",
            visibility_timeout=visibility,
            dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3),
        )

    def _lambda_consumer(self) -> None:
        queue = self._queue_pair("Thumbnails", Duration.seconds(180))
        layer = lambda_.LayerVersion(
            self,
            "SqsLeaseLayer",
            code=lambda_.Code.from_asset(str(HERE / "layer")),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
            description="stands in for the shared sqslease layer",
        )
        log_group = logs.LogGroup(
            self, "ThumbnailsLogs", retention=logs.RetentionDays.TWO_WEEKS, removal_policy=RemovalPolicy.DESTROY
        )
        function = lambda_.Function(
            self,
            "ThumbnailsFunction",
            function_name=f"{STACK_NAME}-Thumbnails",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_inline(HANDLER_CODE),
            timeout=Duration.seconds(30),
            memory_size=256,
            layers=[layer],
            log_group=log_group,
            environment={"JOB_TYPE": "Thumbnails", "LEASE_SECONDS": "30"},
        )
        function.add_event_source(
            event_sources.SqsEventSource(
                queue, batch_size=7, max_batching_window=Duration.seconds(4), report_batch_item_failures=True
            )
        )
        # The Role GetAtt already orders the function after its role (cfn-lint W3005); keep only the policy.
        assert function.role is not None
        policy = function.role.node.find_child("DefaultPolicy").node.default_child
        function.node.default_child.add_override("DependsOn", [self.get_logical_id(policy)])  # type: ignore[union-attr]

    def _fargate_consumer(self) -> None:
        queue = self._queue_pair("VideoTranscode", Duration.seconds(480))
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1,
            restrict_default_security_group=False,
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs())},
        )
        cluster = ecs.Cluster(
            self,
            "Cluster",
            cluster_name=f"{STACK_NAME}-cluster",
            vpc=vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
        )
        task = ecs.FargateTaskDefinition(self, "VideoTranscodeTask", cpu=512, memory_limit_mib=1024)
        worker_logs = logs.LogGroup(
            self, "VideoTranscodeLogs", retention=logs.RetentionDays.TWO_WEEKS, removal_policy=RemovalPolicy.DESTROY
        )
        task.add_container(
            "worker",
            image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.14-slim"),
            command=["python", "-m", "sqslease.worker"],
            environment={"QUEUE_URL": queue.queue_url},
            logging=ecs.LogDrivers.aws_logs(stream_prefix="worker", log_group=worker_logs),
        )
        queue.grant_consume_messages(task.task_role)
        service = ecs.FargateService(
            self,
            "VideoTranscodeService",
            service_name=f"{STACK_NAME}-VideoTranscode",
            cluster=cluster,
            task_definition=task,
            desired_count=0,
            min_healthy_percent=100,
        )

        target = appscaling.ScalableTarget(
            self,
            "VideoTranscodeScaling",
            service_namespace=appscaling.ServiceNamespace.ECS,
            resource_id=f"service/{cluster.cluster_name}/{service.service_name}",
            scalable_dimension="ecs:service:DesiredCount",
            min_capacity=0,
            max_capacity=8,
        )
        dimensions = {"QueueName": queue.queue_name}
        running = {"ClusterName": cluster.cluster_name, "ServiceName": service.service_name}
        # Backlog per task = (visible + not visible) / running tasks, as a target-tracking metric.
        appscaling.CfnScalingPolicy(
            self,
            "BacklogPerTask",
            policy_name=f"{STACK_NAME}-VideoTranscode-backlog-per-task",
            policy_type="TargetTrackingScaling",
            scaling_target_id=target.scalable_target_id,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=4.0,
                scale_in_cooldown=120,
                scale_out_cooldown=30,
                customized_metric_specification=appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
                    metrics=[
                        _query("visible", "AWS/SQS", "ApproximateNumberOfMessagesVisible", dimensions),
                        _query("inflight", "AWS/SQS", "ApproximateNumberOfMessagesNotVisible", dimensions),
                        _query("running", "ECS/ContainerInsights", "RunningTaskCount", running),
                        appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
                            id="backlog_per_task",
                            expression="(visible + inflight) / MAX([running, 1])",
                            label="backlog per task",
                            return_data=True,
                        ),
                    ]
                ),
            ),
        )
        backlog = cloudwatch.MathExpression(
            expression="visible + inflight",
            using_metrics={
                "visible": queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1)),
                "inflight": queue.metric_approximate_number_of_messages_not_visible(period=Duration.minutes(1)),
            },
            period=Duration.minutes(1),
            label="backlog",
        )
        # Step scaling from zero: CDK emits a StepScaling policy and a metric-math alarm per direction.
        target.scale_on_metric(
            "ScaleFromZero",
            metric=backlog,
            scaling_steps=[
                appscaling.ScalingInterval(upper=0, change=0),
                appscaling.ScalingInterval(lower=1, change=1),
            ],
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        )
        cloudwatch.Alarm(
            self,
            "BacklogAlarm",
            alarm_name=f"{STACK_NAME}-VideoTranscode-backlog",
            metric=backlog,
            threshold=100,
            evaluation_periods=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=f"{STACK_NAME}-VideoTranscode")
        dashboard.add_widgets(cloudwatch.GraphWidget(title="backlog", left=[backlog]))


def _query(
    query_id: str, namespace: str, metric_name: str, dimensions: dict[str, str]
) -> appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty:
    """One metric of a target-tracking metric-math expression, not returned on its own."""
    return appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
        id=query_id,
        return_data=False,
        metric_stat=appscaling.CfnScalingPolicy.TargetTrackingMetricStatProperty(
            stat="Sum" if namespace == "AWS/SQS" else "Average",
            metric=appscaling.CfnScalingPolicy.TargetTrackingMetricProperty(
                namespace=namespace,
                metric_name=metric_name,
                dimensions=[
                    appscaling.CfnScalingPolicy.TargetTrackingMetricDimensionProperty(name=k, value=v)
                    for k, v in dimensions.items()
                ],
            ),
        ),
    )


def build_app(app: cdk.App | None = None) -> cdk.App:
    """The test app: one stack in the emulator's account and region."""
    app = app or cdk.App()
    ConsumersStack(app, STACK_NAME, env=cdk.Environment(account="123456789012", region="us-east-1"))
    return app


if __name__ == "__main__":
    build_app().synth()
