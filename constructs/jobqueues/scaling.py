"""Scaling an ECS consumer on outstanding work, never on visible messages alone.

Visible messages drop to zero while every message is being worked on, so a policy on them alone (what
``QueueProcessingFargateService`` does) scales in tasks that are busy. Here:

- target tracking on **backlog per task**, ``(visible + in flight) / running tasks``, through a
  ``CfnScalingPolicy`` (the high-level target-tracking API rejects metric math);
- a step policy that starts the first task: target tracking cannot scale out from 0 tasks;
- ``sqslease`` protects a task from scale-in while it holds leases (ECS task scale-in protection).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues.registry import one_minute, registry_of

SCALE_IN_COOLDOWN_S = 300
SCALE_OUT_COOLDOWN_S = 60


@dataclass(frozen=True)
class ServiceNames:
    """What the scaling of a service names it by, read once.

    :param cluster_name: its cluster's name (a token).
    :param service_name: its name (a token).
    :param path: its construct path (the target-tracking policy's name).
    """

    cluster_name: str
    service_name: str
    path: str


def running_tasks(cluster_name: str, service_name: str, period: Duration) -> cloudwatch.Metric:
    """Running tasks of a service (Container Insights' ``RunningTaskCount``, Average)."""
    return cloudwatch.Metric(
        namespace="ECS/ContainerInsights",
        metric_name="RunningTaskCount",
        dimensions_map={"ClusterName": cluster_name, "ServiceName": service_name},
        statistic="Average",
        period=period,
    )


def _stat(
    query_id: str, namespace: str, metric_name: str, dimensions: dict[str, str], stat: str
) -> appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty:
    return appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
        id=query_id,
        return_data=False,
        metric_stat=appscaling.CfnScalingPolicy.TargetTrackingMetricStatProperty(
            metric=appscaling.CfnScalingPolicy.TargetTrackingMetricProperty(
                namespace=namespace,
                metric_name=metric_name,
                dimensions=[
                    appscaling.CfnScalingPolicy.TargetTrackingMetricDimensionProperty(name=k, value=v)
                    for k, v in dimensions.items()
                ],
            ),
            stat=stat,
        ),
    )


def scale_on_backlog(
    scope: Construct,
    service: ecs.BaseService,
    names: ServiceNames,
    queue: sqs.IQueue,
    *,
    min_tasks: int,
    max_tasks: int,
    target_backlog_per_task: float,
) -> tuple[ecs.ScalableTaskCount, appscaling.CfnScalingPolicy]:
    """Scalable target and backlog-per-task target tracking; plus the step policy that scales out from 0."""
    task_count = service.auto_scale_task_count(min_capacity=min_tasks, max_capacity=max_tasks)
    queue_dims = {"QueueName": queue.queue_name}
    service_dims = {"ClusterName": names.cluster_name, "ServiceName": names.service_name}
    target_tracking = appscaling.CfnScalingPolicy(
        scope,
        "BacklogPerTaskScaling",
        policy_name=f"{names.path.replace('/', '-')}-backlog-per-task"[-256:],
        policy_type="TargetTrackingScaling",
        scaling_target_id=task_count.node.find_child("Target").scalable_target_id,  # type: ignore[attr-defined]
        target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
            target_value=target_backlog_per_task,
            scale_in_cooldown=SCALE_IN_COOLDOWN_S,
            scale_out_cooldown=SCALE_OUT_COOLDOWN_S,
            customized_metric_specification=appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
                metrics=[
                    _stat("visible", "AWS/SQS", "ApproximateNumberOfMessagesVisible", queue_dims, "Maximum"),
                    _stat("inflight", "AWS/SQS", "ApproximateNumberOfMessagesNotVisible", queue_dims, "Maximum"),
                    _stat("tasks", "ECS/ContainerInsights", "RunningTaskCount", service_dims, "Average"),
                    appscaling.CfnScalingPolicy.TargetTrackingMetricDataQueryProperty(
                        id="backlog_per_task",
                        expression="(visible + inflight) / tasks",
                        label="backlog per task",
                        return_data=True,
                    ),
                ]
            ),
        ),
    )
    _scale_out_from_zero(scope, task_count, names, queue)
    return task_count, target_tracking


def _scale_out_from_zero(
    scope: Construct, task_count: ecs.ScalableTaskCount, names: ServiceNames, queue: sqs.IQueue
) -> None:
    """The step policy that starts the first task when a message waits and none runs."""
    minute = one_minute(scope)
    task_count.scale_on_metric(
        "ScaleOutFromZero",
        metric=cloudwatch.MathExpression(
            expression="IF(visible >= 1 AND FILL(tasks, 0) < 1, 1, 0)",
            using_metrics={
                "visible": queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=minute),
                "tasks": running_tasks(names.cluster_name, names.service_name, minute),
            },
            label="messages waiting, no task running",
            period=minute,
        ),
        scaling_steps=[
            appscaling.ScalingInterval(upper=0, change=0),
            appscaling.ScalingInterval(lower=1, change=1),
        ],
        adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        cooldown=registry_of(scope).seconds(SCALE_OUT_COOLDOWN_S),
        evaluation_periods=1,
    )
