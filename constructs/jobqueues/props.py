"""The props of a job type, as typed declarations a type checker can hold user code to.

``JobQueue(self, "Job", **props: Unpack[JobQueueProps])`` and ``JobQueueStacks.add(name, **props)`` take the
same ``JobQueueProps``, so ``processing_p99=5`` is a type error in both. Every prop is also checked where it
enters at run time (:mod:`jobqueues.inputs`), for users without a type checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from jobqueues.queue_props import JobQueueProps, LeaseOptions, QueueOptions

__all__ = ["EcsJobProps", "JobQueueProps", "LambdaJobProps", "LeaseOptions", "QueueOptions"]


class LambdaJobProps(QueueOptions, total=False):
    """Props of :class:`jobqueues.LambdaJob`: the queue options plus the function and its event source.

    code:
        The handler's code (required), e.g. ``lambda_.Code.from_asset("lambda_src/handlers")``. The ``sqslease``
        runtime comes in a layer; the code needs only the handler.
    handler:
        The per-message function, ``module.function`` (required), called as ``handler(body, message)``; raising
        fails that record only. The function's Lambda handler is ``sqslease.lambda_entry.handler``. An import path
        (``module:function`` too), not a file path.
    timeout:
        The function timeout, 2 s - 15 min in whole seconds (required), above ``processing_p99``. The visibility
        timeout is derived from it: ``6 x timeout + max_batching_window``, or ``timeout + max_batching_window +
        10 s`` with ``lease_extension``.
    batch_size:
        Records per invocation: 1-10,000 (above 10 only with a batching window), at most 10 for FIFO.
    max_batching_window:
        How long the event source gathers records, 0 s - 5 min in whole seconds; not for FIFO.
    max_concurrency:
        Cap on concurrent invocations by the event source, 2-1000.
    memory_size:
        Function memory in MiB.
    processing_p99:
        Measured p99 of one message, below ``timeout``; with it, the VT is at least ``max(2 x p99, 10 s)`` too, and the
        p99-drift alarm fires above it (above half the timeout without it).
    lease_extension:
        The function renews every record's lease as the invocation starts and heartbeats it, so the VT can be the
        shorter ``timeout + max_batching_window + 10 s``: faster retries after a crash, but a batch the event source
        holds longer (retrying throttled invocations, see :class:`jobqueues.LambdaJob`) becomes visible again before it
        runs.
    max_processing_time:
        The longest one message may take.
    environment:
        More environment variables for the function; none named ``SQSLEASE_*`` (sqslease's settings, which the construct
        sets from the declaration).
    log_retention:
        Retention of the function's log group.
    architecture:
        The function's instruction set; the ``sqslease`` layer is pure Python and declares both.
    vpc:
        The VPC the function runs in. Its subnets need a route to SQS (a NAT gateway or an SQS interface endpoint):
        ``sqslease`` calls SQS from the function.
    vpc_subnets:
        Private subnets of ``vpc`` for the function (not public: Lambda gives it no public IP). Only with ``vpc``.
    security_groups:
        Security groups of the function, only with ``vpc``.
    reserved_concurrent_executions:
        Concurrency reserved for the function, at least 2, with ``max_concurrency`` at or below it: the event source's
        invocations above it are throttled, and without ``max_concurrency`` it makes up to 1,250 at once.
    tracing:
        X-Ray tracing, e.g. ``lambda_.Tracing.ACTIVE``.
    layers:
        Layers of your own, at most 4: a function takes 5, the ``sqslease`` layer comes last so that none of yours
        replaces it.
    filters:
        Filter criteria of the event source, each ``lambda_.FilterCriteria.filter({"body": {...}})`` (an SQS event
        source filters on the body only), at most 10 (5 without a quota increase). A record that matches none is deleted
        from the queue unprocessed: it never reaches the function or the DLQ.
    metrics_config:
        Event source mapping metrics, ``lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])`` (the only kind
        an SQS event source has).
    provisioned_poller_config:
        Provisioned mode: ``minimum_pollers`` 2-200, ``maximum_pollers`` 2-2,000, minimum <= maximum; not with
        ``max_concurrency``.
    hooks:
        ``sqslease`` hooks called before and after each message (docs/sqslease.md, "Hooks"): import paths,
        ``package.module:name`` or ``package.module.name``, of ``sqslease.hooks.Hooks`` objects or classes in the
        function's code or a layer, given to the function as ``SQSLEASE_HOOKS``; a path that cannot be imported
        fails every invocation.
    idempotency_key:
        What makes two messages the same job, with ``idempotency`` on (docs/sqslease.md, "Idempotency"): the
        import path, ``package.module:function`` or ``package.module.function``, of ``key(body, message) -> str``
        in the function's code or a layer, given to the function as ``SQSLEASE_IDEMPOTENCY_KEY``; a producer's
        retry (a new MessageId, the same key) then completes once. A path that cannot be imported fails every
        invocation (an init error).
    """

    code: lambda_.Code
    handler: str
    timeout: Duration
    batch_size: int
    max_batching_window: Duration
    max_concurrency: int
    memory_size: int
    processing_p99: Duration
    lease_extension: bool
    max_processing_time: Duration
    environment: Mapping[str, str]
    log_retention: logs.RetentionDays
    architecture: lambda_.Architecture
    vpc: ec2.IVpc
    vpc_subnets: ec2.SubnetSelection
    security_groups: Sequence[ec2.ISecurityGroup]
    reserved_concurrent_executions: int
    tracing: lambda_.Tracing
    layers: Sequence[lambda_.ILayerVersion]
    filters: Sequence[Mapping[str, Any]]
    metrics_config: lambda_.MetricsConfig
    provisioned_poller_config: lambda_.ProvisionedPollerConfig
    hooks: Sequence[str]
    idempotency_key: str


class EcsJobProps(QueueOptions, LeaseOptions, total=False):
    """Props of :class:`jobqueues.EcsJob`: the queue and lease options plus the Fargate service.

    ``processing_p99`` (or ``visibility_timeout``) is required; ``lease_extension`` defaults to True here: the
    worker heartbeats its leases while their handlers may run (up to ``max_processing_time`` from the start).

    handler:
        The per-message function, ``package.module:function`` (required), called as ``handler(body, message)``. An
        import path (the dotted ``package.module.function`` too).
    cluster:
        The ECS cluster.
    image:
        The container image, with ``sqslease`` and the handler installed.
    image_directory:
        The directory whose ``Dockerfile`` builds the default image (sqslease and the handlers installed), relative to
        the current directory; missing, or without a ``Dockerfile``, is a synth error. Not with ``image``.
    concurrency:
        Handlers running at once in one task, 1-1000. Jobs of a few milliseconds want 10: with jobs shorter than a
        receive, each receive brings about ``concurrency`` messages, at most 10 (docs/sqslease.md, "Jobs shorter than a
        receive").
    min_tasks:
        Tasks when idle.
    max_tasks:
        Tasks at most. For jobs shorter than a receive, at least the peak rate over a task's ceiling, about 10
        messages a receive round trip (docs/sqslease.md, "Jobs shorter than a receive").
    target_backlog_per_task:
        Target of the scaling policy: outstanding messages (visible + in flight) per running task.
    cpu:
        Task CPU units.
    memory_limit_mib:
        Task memory in MiB.
    shutdown_grace:
        After SIGTERM, how long running handlers may finish before their messages are released; the container's
        stopTimeout is this + 5 s, at most 120 s.
    log_retention:
        Retention of the worker's log group.
    environment:
        More variables for the worker container; none named ``SQSLEASE_*`` (the lease settings are the worker's options)
        or ``ECS_AGENT_URI``. cdk-nag's ECS2 is acknowledged for them: put secret values in ``secrets``.
    secrets:
        Variables from Secrets Manager or SSM Parameter Store (``ecs.Secret``), read when a task starts; the task
        execution role may read exactly these, plus ``kms:Decrypt`` on a secret's own key.
    capacity_provider_strategies:
        Where tasks run: ``FARGATE`` and ``FARGATE_SPOT`` items, each once, weight 0-1000 (some above 0), base 0-100,000
        (on one item only); Spot runs X86_64 and ARM64 tasks. An ``ecs.Cluster`` gets both providers enabled; an
        imported cluster must have them.
    platform_version:
        The Fargate platform version the service pins, e.g. ``ecs.FargatePlatformVersion.VERSION1_4``; on
        ``FARGATE_SPOT``, X86_64 tasks need 1.3.0 or later and ARM64 tasks 1.4.0 or later.
    cpu_architecture:
        ``ecs.CpuArchitecture.ARM64`` (Graviton) or ``X86_64``; the default image is built for it, an ``image`` of yours
        must match it.
    vpc:
        The VPC the tasks run in: without ``cluster``, the job gets a cluster in it (Container Insights on), shared by
        the stack's ECS jobs in this VPC; with ``cluster``, it must be the cluster's.
    vpc_subnets:
        The tasks' subnets, a selection in ``vpc`` (which it needs).
    security_groups:
        The tasks' security groups.
    assign_public_ip:
        Tasks get a public IP: only in public subnets, for a VPC without NAT gateway.
    enable_execute_command:
        ECS Exec (``aws ecs execute-command``) into the worker container: the task role gets the four ``ssmmessages``
        channel actions and ``logs:DescribeLogGroups`` (cdk-nag IAM5 acknowledged: they take no resource), and writes
        session logs to the worker's log group only.
    propagate_tags:
        Copy the service's or the task definition's tags to its tasks (``ecs.PropagatedTagSource``), e.g. for cost
        allocation.
    hooks:
        ``sqslease`` hooks called before and after each message (docs/sqslease.md, "Hooks"): import paths,
        ``package.module:name`` or ``package.module.name``, of ``sqslease.hooks.Hooks`` objects or classes in the
        image, given to the worker as ``--hooks``; a path that cannot be imported stops the worker at start (exit
        status 2).
    idempotency_key:
        What makes two messages the same job, with ``idempotency`` on (docs/sqslease.md, "Idempotency"): the
        import path, ``package.module:function`` or ``package.module.function``, of ``key(body, message) -> str``
        in the image, given to the worker as ``--idempotency-key``; a producer's retry (a new MessageId, the same
        key) then completes once. A path that cannot be imported stops the worker at start (exit status 2).
    """

    handler: str
    cluster: ecs.ICluster
    image: ecs.ContainerImage
    image_directory: str
    concurrency: int
    min_tasks: int
    max_tasks: int
    target_backlog_per_task: int
    cpu: int
    memory_limit_mib: int
    shutdown_grace: Duration
    log_retention: logs.RetentionDays
    environment: Mapping[str, str]
    secrets: Mapping[str, ecs.Secret]
    capacity_provider_strategies: Sequence[ecs.CapacityProviderStrategy]
    platform_version: ecs.FargatePlatformVersion
    cpu_architecture: ecs.CpuArchitecture
    vpc: ec2.IVpc
    vpc_subnets: ec2.SubnetSelection
    security_groups: Sequence[ec2.ISecurityGroup]
    assign_public_ip: bool
    enable_execute_command: bool
    propagate_tags: ecs.PropagatedTagSource
    hooks: Sequence[str]
    idempotency_key: str
