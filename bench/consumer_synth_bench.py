"""Synth time of consumers: N Lambda jobs + N ECS jobs through `jobqueues` vs the same resources hand-written.

Run: `.venv/bin/python bench/consumer_synth_bench.py [--jobs 50] [--repeat 3]` (or `make bench`).

Both variants build, per Lambda job: queue + DLQ with TLS-only policies and three queue alarms, a role with its
policy, a log group, the function with the consumer environment and the sqslease layer (one per stack), the
SQS event source, five consumer alarms and a dashboard; per ECS job: the queues and queue alarms, a Fargate task
definition running the worker, its roles and policies, a log group, the service, a scalable target with the
backlog-per-task and scale-from-zero policies, four consumer alarms and a dashboard; one VPC and cluster per
stack. 10 jobs per stack. The hand-written side sets what the consumers need to behave alike: the runtime's
settings (the function's environment, the worker's options), the deployment circuit breaker, the scaling policies'
cooldowns, the backlog per running task, the alarms' missing-data handling, the dashboards' graphs. It leaves out
what only jobqueues writes: its markers, and its alarms' longer descriptions. Also prints the sqslease layer's
size. A warm-up round of both at the measured size, then pairs that alternate which runs first. Prints the median
construct + synth time of each variant and the median of the paired runs' ratios (goal <= 1.0x), then the same for
the CPU seconds of this process and the Node kernel (load moves them much less than the wall time); the resource
types of both must match exactly. The kernel round trips per job are counted, not timed,
by ``tests/test_synth_cost.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from synth_bench import cpu_s, hand_written_fleet
from synth_bench import hand_written_queues as queues

from jobqueues import EcsJob, LambdaJob
from jobqueues.lease_layer import sqslease_source

ROOT = Path(__file__).resolve().parent.parent
ENV = cdk.Environment(account="123456789012", region="us-east-1")
HANDLERS = str(ROOT / "lambda_src" / "handlers")
IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
PER_STACK = 10
GE = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
GT = cw.ComparisonOperator.GREATER_THAN_THRESHOLD
MISSING = cw.TreatMissingData.NOT_BREACHING


def stacks_for(app: cdk.App, n: int, kind: str) -> list[cdk.Stack]:
    return [cdk.Stack(app, f"{kind}{s + 1}", env=ENV) for s in range(-(-n // PER_STACK))]


def with_jobqueues(n: int, outdir: str) -> cdk.App:
    app = cdk.App(outdir=outdir, context={"jobqueues:image": IMAGE})
    for i, stack in enumerate(stacks_for(app, n, "Lambda")):
        code = lambda_.Code.from_asset(HANDLERS)  # an asset belongs to one stack
        for j in range(i * PER_STACK, min(n, (i + 1) * PER_STACK)):
            LambdaJob(stack, f"L{j}", code=code, handler="thumbs.handle", timeout=Duration.seconds(10 + j % 50))
    for i, stack in enumerate(stacks_for(app, n, "Ecs")):
        for j in range(i * PER_STACK, min(n, (i + 1) * PER_STACK)):
            EcsJob(stack, f"E{j}", handler="media.transcode:handle", processing_p99=Duration.seconds(5 + j % 100))
    return app


# --- the same resources, hand-written -----------------------------------------------------------------------
def consumer_alarms(scope: cdk.Resource, queue: sqs.Queue, job: str, drift_ms: float) -> list[cw.Alarm]:
    five = Duration.minutes(5)
    emf = {"namespace": "jobqueues", "dimensions_map": {"JobType": job}, "period": five}
    leak = cw.MathExpression(
        expression="IF(inflight >= 1 AND FILL(deleted, 0) < 1, 1, 0)",
        label="in flight, none deleted",
        using_metrics={
            "inflight": queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=five),
            "deleted": queue.metric_number_of_messages_deleted(statistic="Sum", period=five),
        },
        period=five,
    ).create_alarm(
        scope,
        "Leak",
        threshold=1,
        evaluation_periods=3,
        comparison_operator=GE,
        treat_missing_data=MISSING,
        alarm_description=f"{job}: messages have been in flight for 15 min with none deleted: consumers receive but "
        "never finish (stuck handlers, or deletes failing). Their leases keep the messages from anyone else.",
    )
    lost = cw.Metric(metric_name="LeaseLost", statistic="Sum", **emf).create_alarm(
        scope,
        "Lost",
        threshold=1,
        evaluation_periods=1,
        comparison_operator=GE,
        treat_missing_data=MISSING,
        alarm_description=f"{job}: a consumer lost the lease of a message it was still handling; it may run twice. "
        "Look for throttled or failing ChangeMessageVisibility calls, or a stalled process.",
    )
    drift = cw.Metric(metric_name="ProcessingTime", statistic="p99", **emf).create_alarm(
        scope,
        "Drift",
        threshold=drift_ms,
        evaluation_periods=3,
        comparison_operator=GT,
        treat_missing_data=MISSING,
        alarm_description=f"{job}: the measured p99 processing time is above half the visibility timeout: the "
        "declared p99 no longer holds. Re-measure with jobstats and redeploy with the new profile.",
    )
    stalled = cw.MathExpression(
        expression="IF(FILL(age, 0) > 60 AND FILL(deleted, 0) < 1, 1, 0)",
        label="waiting, none deleted",
        using_metrics={
            "age": queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=five),
            "deleted": queue.metric_number_of_messages_deleted(statistic="Sum", period=five),
        },
        period=five,
    ).create_alarm(
        scope,
        "Stalled",
        threshold=1,
        evaluation_periods=3,
        comparison_operator=GE,
        treat_missing_data=MISSING,
        alarm_description=f"{job}: messages have waited over 1 min and none was deleted for 15 min: the consumer is "
        "not draining the queue. Look at its logs and the lease alarms.",
    )
    return [leak, lost, drift, stalled]


def dashboard(scope: cdk.Resource, name: str, queue: sqs.Queue, dlq: sqs.Queue, job: str, extra: list) -> None:
    emf = {"namespace": "jobqueues", "dimensions_map": {"JobType": job}}
    board = cw.Dashboard(scope, "Dashboard", dashboard_name=name)
    board.add_widgets(
        cw.GraphWidget(
            title="Backlog (visible + in flight)",
            width=8,
            left=[
                cw.MathExpression(
                    expression="visible + inflight",
                    using_metrics={
                        "visible": queue.metric_approximate_number_of_messages_visible(),
                        "inflight": queue.metric_approximate_number_of_messages_not_visible(),
                    },
                )
            ],
        ),
        cw.GraphWidget(
            title="In flight vs the quota",
            width=8,
            left=[queue.metric_approximate_number_of_messages_not_visible()],
            left_annotations=[cw.HorizontalAnnotation(value=120_000, label="SQS in-flight quota")],
        ),
        cw.GraphWidget(
            title="Age of the oldest message (s)", width=8, left=[queue.metric_approximate_age_of_oldest_message()]
        ),
    )
    board.add_widgets(
        cw.GraphWidget(
            title="Processing time p50 / p99 (ms) vs the VT",
            width=8,
            left=[cw.Metric(metric_name="ProcessingTime", statistic=s, **emf) for s in ("p50", "p99")],
            left_annotations=[cw.HorizontalAnnotation(value=1000, label="visibility timeout")],
        ),
        cw.GraphWidget(
            title="Dead-letter queue depth", width=8, left=[dlq.metric_approximate_number_of_messages_visible()]
        ),
        cw.GraphWidget(
            title="Lease extensions / leases lost",
            width=8,
            left=[cw.Metric(metric_name="Extensions", statistic="Sum", **emf)],
            right=[cw.Metric(metric_name="LeaseLost", statistic="Sum", **emf)],
        ),
    )
    drain = cw.MathExpression(
        expression="(visible + inflight) * 300 / (FILL(deleted, 0) + 1)",
        using_metrics={
            "visible": queue.metric_approximate_number_of_messages_visible(),
            "inflight": queue.metric_approximate_number_of_messages_not_visible(),
            "deleted": queue.metric_number_of_messages_deleted(),
        },
    )
    queue_time = cw.GraphWidget(
        title="Queue time p50 / p99 (ms), sent to started",
        width=8,
        left=[cw.Metric(metric_name="QueueTime", statistic=s, **emf) for s in ("p50", "p99")],
    )
    board.add_widgets(queue_time, cw.GraphWidget(title="Time to drain (s)", width=8, left=[drain]), *extra)


def backlog_per_task(
    scope: cdk.Resource,
    stack: cdk.Stack,
    job: str,
    count: ecs.ScalableTaskCount,
    queue: sqs.Queue,
    by_service: dict[str, str],
) -> None:
    """Target tracking on the backlog per running task (visible + in flight, over the running tasks of the service
    ``by_service`` names: its cluster's and its own name)."""
    policy = appscaling.CfnScalingPolicy

    def stat(id: str, namespace: str, name: str, stat: str, dims: dict) -> policy.TargetTrackingMetricDataQueryProperty:
        dimensions = [policy.TargetTrackingMetricDimensionProperty(name=k, value=v) for k, v in dims.items()]
        metric = policy.TargetTrackingMetricProperty(namespace=namespace, metric_name=name, dimensions=dimensions)
        return policy.TargetTrackingMetricDataQueryProperty(
            id=id, return_data=False, metric_stat=policy.TargetTrackingMetricStatProperty(metric=metric, stat=stat)
        )

    by_queue = {"QueueName": queue.queue_name}
    metrics = [
        stat("visible", "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", by_queue),
        stat("inflight", "AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "Maximum", by_queue),
        stat("tasks", "ECS/ContainerInsights", "RunningTaskCount", "Average", by_service),
        policy.TargetTrackingMetricDataQueryProperty(
            id="backlog_per_task", expression="(visible + inflight) / tasks", label="backlog per task", return_data=True
        ),
    ]
    policy(
        scope,
        "Backlog",
        policy_name=f"{stack.stack_name}-{job}-Service-backlog-per-task",
        policy_type="TargetTrackingScaling",
        scaling_target_id=count.node.find_child("Target").scalable_target_id,  # type: ignore[attr-defined]
        target_tracking_scaling_policy_configuration=policy.TargetTrackingScalingPolicyConfigurationProperty(
            target_value=4,
            customized_metric_specification=policy.CustomizedMetricSpecificationProperty(metrics=metrics),
            scale_in_cooldown=300,
            scale_out_cooldown=60,
        ),
    )


def hand_written(n: int, outdir: str) -> cdk.App:
    app = cdk.App(outdir=outdir)
    for i, stack in enumerate(stacks_for(app, n, "Lambda")):
        code = lambda_.Code.from_asset(HANDLERS)
        layer = lambda_.LayerVersion(
            stack,
            "Layer",
            code=lambda_.Code.from_asset(str(sqslease_source()), exclude=["__pycache__"]),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
        )
        jobs = range(i * PER_STACK, min(n, (i + 1) * PER_STACK))
        hand_written_fleet(stack, [lambda_job(stack, j, code, layer) for j in jobs])  # the stack's fleet view
    for i, stack in enumerate(stacks_for(app, n, "Ecs")):
        cluster = ecs_cluster(stack)
        jobs = range(i * PER_STACK, min(n, (i + 1) * PER_STACK))
        hand_written_fleet(stack, [ecs_job(stack, j, cluster) for j in jobs])
    return app


FleetEntry = tuple[str, sqs.Queue, sqs.Queue, int, int]


def lambda_job(stack: cdk.Stack, j: int, code: lambda_.Code, layer: lambda_.LayerVersion) -> FleetEntry:
    """Lambda job ``L{j}``: its queues, role, log group, function, event source, alarms and dashboard; its fleet
    view line."""
    scope = cdk.Resource(stack, f"L{j}")
    timeout = 10 + j % 50
    queue, dlq = queues(scope, stack, f"{stack.stack_name}-L{j}", 6 * timeout, 5)
    role = iam.Role(
        scope,
        "Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"L{j}: consumes L{j}'s job queue",
    )
    log_group = logs.LogGroup(scope, "Logs", retention=logs.RetentionDays.ONE_MONTH)
    function = lambda_.Function(
        scope,
        "Function",
        runtime=lambda_.Runtime.PYTHON_3_14,
        code=code,
        handler="sqslease.lambda_entry.handler",
        description=f"L{j} consumer (sqslease)",
        timeout=Duration.seconds(timeout),
        memory_size=512,
        role=role,
        log_group=log_group,
        layers=[layer],
        environment={
            "SQSLEASE_HANDLER": "thumbs.handle",
            "SQSLEASE_QUEUE_URL": queue.queue_url,
            "SQSLEASE_DEAD_LETTER_QUEUE_URL": dlq.queue_url,
            "SQSLEASE_JOB_TYPE": f"L{j}",
            "SQSLEASE_HEARTBEAT": "false",
            "SQSLEASE_VISIBILITY_TIMEOUT": str(6 * timeout),
            "SQSLEASE_EXTENSION_THRESHOLD": "5",
            "SQSLEASE_MAX_RECEIVE_COUNT": "5",
            "SQSLEASE_STACK": stack.stack_name,
        },
    )
    log_group.grant_write(role)
    function.add_event_source(sources.SqsEventSource(queue, batch_size=10, report_batch_item_failures=True))
    dlq.grant_send_messages(function)
    consumer_alarms(scope, queue, f"L{j}", 3 * timeout * 1000)
    minute = Duration.minutes(1)
    for name, metric in (("Errors", function.metric_errors), ("Throttles", function.metric_throttles)):
        metric(period=minute).create_alarm(scope, name, threshold=1, evaluation_periods=3, treat_missing_data=MISSING)
    graphs = [
        cw.GraphWidget(
            title="Function errors / throttles", left=[function.metric_errors()], right=[function.metric_throttles()]
        ),
        cw.GraphWidget(title="Function duration p99 (ms)", left=[function.metric_duration()]),
    ]
    dashboard(scope, f"{stack.stack_name}-L{j}", queue, dlq, f"L{j}", graphs)
    return (f"L{j}", queue, dlq, 30 * timeout, timeout * 500)


def ecs_cluster(stack: cdk.Stack) -> ecs.Cluster:
    """The stack's VPC (two AZs, one NAT gateway, flow logs) and its cluster with Container Insights."""
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        availability_zones=["us-east-1a", "us-east-1b"],
        nat_gateways=1,
        restrict_default_security_group=False,
        flow_logs={
            "All": ec2.FlowLogOptions(
                destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                    logs.LogGroup(stack, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH)
                )
            )
        },
    )
    return ecs.Cluster(stack, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)


def ecs_job(stack: cdk.Stack, j: int, cluster: ecs.Cluster) -> FleetEntry:
    """ECS job ``E{j}``: its queues, worker task and service, scaling, alarms and dashboard; its fleet view line."""
    scope = cdk.Resource(stack, f"E{j}")
    vt = max(2 * (5 + j % 100), 10)
    queue, dlq = queues(scope, stack, f"{stack.stack_name}-E{j}", vt, 5)
    task = worker_task(scope, stack, j, queue, dlq, vt)
    service = ecs.FargateService(
        scope,
        "Service",
        cluster=cluster,
        task_definition=task,
        desired_count=0,
        min_healthy_percent=100,
        circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
    )
    queue.grant_consume_messages(task.task_role)
    dlq.grant_send_messages(task.task_role)
    task.task_role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["ecs:UpdateTaskProtection", "ecs:GetTaskProtection"],
            resources=[f"arn:aws:ecs:us-east-1:123456789012:task/{cluster.cluster_name}/*"],
        )
    )
    count = service.auto_scale_task_count(min_capacity=0, max_capacity=10)
    by_service = {"ClusterName": cluster.cluster_name, "ServiceName": service.service_name}
    backlog_per_task(scope, stack, f"E{j}", count, queue, by_service)
    tasks = cw.Metric(namespace="ECS/ContainerInsights", metric_name="RunningTaskCount", dimensions_map=by_service)
    from_zero = cw.MathExpression(
        expression="IF(visible >= 1 AND FILL(tasks, 0) < 1, 1, 0)",
        using_metrics={"visible": queue.metric_approximate_number_of_messages_visible(), "tasks": tasks},
    )
    count.scale_on_metric(
        "FromZero",
        metric=from_zero,
        scaling_steps=[appscaling.ScalingInterval(upper=0, change=0), appscaling.ScalingInterval(lower=1, change=1)],
        adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        cooldown=Duration.seconds(60),
    )
    consumer_alarms(scope, queue, f"E{j}", vt * 500)
    cw.MathExpression(
        expression="IF(visible >= 1 AND FILL(tasks, 0) < 1, 1, 0)",
        using_metrics={"visible": queue.metric_approximate_number_of_messages_visible(), "tasks": tasks},
    ).create_alarm(scope, "NoTask", threshold=1, evaluation_periods=3)
    graphs = [cw.GraphWidget(title="Running tasks", left=[tasks])]
    dashboard(scope, f"{stack.stack_name}-E{j}", queue, dlq, f"E{j}", graphs)
    return (f"E{j}", queue, dlq, 5 * vt, (5 + j % 100) * 1000)


def worker_task(
    scope: cdk.Resource, stack: cdk.Stack, j: int, queue: sqs.Queue, dlq: sqs.Queue, vt: int
) -> ecs.FargateTaskDefinition:
    """The Fargate task definition running the worker of ECS job ``E{j}``, with the worker's options."""
    task = ecs.FargateTaskDefinition(scope, "Task", cpu=256, memory_limit_mib=512)
    options = {
        "--handler": "media.transcode:handle",
        "--concurrency": "4",
        "--queue-url": queue.queue_url,
        "--visibility-timeout": str(vt),
        "--extension-threshold": "5",
        "--heartbeat": "true",
        "--dead-letter-queue-url": dlq.queue_url,
        "--max-receive-count": "5",
        "--shutdown-grace": "25",
        "--job-type": f"E{j}",
        "--stack": stack.stack_name,
    }
    task.add_container(
        "Worker",
        image=ecs.ContainerImage.from_registry(IMAGE),
        command=["python", "-m", "sqslease.worker", *(part for pair in options.items() for part in pair)],
        logging=ecs.LogDrivers.aws_logs(
            stream_prefix=f"E{j}", log_group=logs.LogGroup(scope, "Logs", retention=logs.RetentionDays.ONE_MONTH)
        ),
        stop_timeout=Duration.seconds(30),
    )
    return task


def timed_synth(build, n: int) -> tuple[float, Counter, float]:
    """Wall seconds of construct + synth, the resource types, and the CPU seconds of this process and the kernel:
    on a loaded machine the CPU time moves much less than the wall time."""
    with tempfile.TemporaryDirectory() as outdir:
        cpu = cpu_s()
        started = time.perf_counter()
        app = build(n, outdir)
        assembly = app.synth()
        elapsed = time.perf_counter() - started
        cpu = cpu_s() - cpu
        types: Counter = Counter()
        for stack in assembly.stacks:
            types.update(r["Type"] for r in stack.template["Resources"].values())
    return elapsed, types, cpu


def layer_size() -> tuple[int, int]:
    """Bytes of the sqslease layer zipped, and unzipped."""
    with tempfile.TemporaryDirectory() as out:
        app = cdk.App(outdir=out, context={"aws:cdk:enable-asset-metadata": True})
        stack = cdk.Stack(app, "Layer", env=ENV)
        LambdaJob(stack, "J", code=lambda_.Code.from_asset(HANDLERS), handler="h.h", timeout=Duration.seconds(5))
        assembly = app.synth()
        template = assembly.get_stack_by_name("Layer").template
        layer = next(r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion")
        asset = Path(assembly.directory) / layer["Metadata"]["aws:asset:path"]
        zipped = Path(out) / "layer.zip"
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(asset.rglob("*")):
                archive.write(path, path.relative_to(asset))
        return zipped.stat().st_size, sum(p.stat().st_size for p in asset.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=50, help="Lambda jobs and ECS jobs each. Default 50.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=1, help="unmeasured rounds of both before the pairs (default 1)")
    args = parser.parse_args()

    zipped, unzipped = layer_size()
    print(f"sqslease layer: {zipped / 1024:.1f} KiB zipped, {unzipped / 1024:.1f} KiB unzipped")
    # A warm-up round of both at the measured size: the kernel's JIT and heap grow with it, and after a warm-up at a
    # smaller size the first run at this one costs more (bench/synth_bench.py measured it). Then the pairs alternate
    # which runs first, so that what is left of that falls on both alike.
    for _ in range(args.warm_up):
        timed_synth(with_jobqueues, args.jobs)
        timed_synth(hand_written, args.jobs)
    ours, theirs, our_cpu, their_cpu = [], [], [], []
    for pair in range(args.repeat):
        for ours_now in (True, False) if pair % 2 == 0 else (False, True):
            t, types, cpu = timed_synth(with_jobqueues if ours_now else hand_written, args.jobs)
            if ours_now:
                our_types = types
                ours.append(t)
                our_cpu.append(cpu)
            else:
                their_types = types
                theirs.append(t)
                their_cpu.append(cpu)
    assert our_types == their_types, sorted((our_types - their_types).items()) + sorted(
        (their_types - our_types).items()
    )
    # The median of the pairs' ratios: each pair ran back to back, so load on a shared machine hits both alike.
    ratios = sorted(o / t for o, t in zip(ours, theirs, strict=True))
    print(
        f"{args.jobs} Lambda jobs + {args.jobs} ECS jobs, {sum(our_types.values())} resources: jobqueues "
        f"{statistics.median(ours):.2f} s, hand-written {statistics.median(theirs):.2f} s, ratio "
        f"{statistics.median(ratios):.2f}x (pairs {ratios[0]:.2f}-{ratios[-1]:.2f}x; goal <= 1.0x)"
    )
    cpu_ratios = sorted(o / t for o, t in zip(our_cpu, their_cpu, strict=True))
    print(
        f"CPU (Python + the Node kernel): jobqueues {statistics.median(our_cpu):.2f} s, hand-written "
        f"{statistics.median(their_cpu):.2f} s, ratio {statistics.median(cpu_ratios):.2f}x "
        f"(pairs {cpu_ratios[0]:.2f}-{cpu_ratios[-1]:.2f}x)"
    )


if __name__ == "__main__":
    main()
