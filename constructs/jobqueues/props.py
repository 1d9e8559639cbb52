"""The props of a job type, as typed declarations a type checker can hold user code to.

``JobQueue(self, "Job", **props: Unpack[JobQueueProps])`` and ``JobQueueStacks.add(name, **props)`` take the
same ``JobQueueProps``, so ``processing_p99=5`` is a type error in both. Every prop is also checked where it
enters at run time (:mod:`jobqueues.inputs`), for users without a type checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from aws_cdk import Duration, RemovalPolicy, Size
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs

from jobqueues.alarms import JobQueueAlarmProps
from jobqueues.idempotency_table import IdempotencyTable


class QueueOptions(TypedDict, total=False):
    """Queue settings shared by every kind of job type (``JobQueue``, ``LambdaJob``, ``EcsJob``).

    max_receive_count:
        Deliveries before a message moves to the dead-letter queue, 1-1000. Default: 5.
    retention_period:
        How long the source queue keeps a message, 1 min - 14 days (whole seconds, rounded up).
        Default: 4 days.
    dlq_retention_period:
        How long the DLQ keeps a message; longer than ``retention_period``, because a message keeps its
        original enqueue time there. Default: 14 days.
    fifo:
        FIFO queues (both get ``.fifo`` names); consumers keep order per message group. A failed message is
        retried in process while its group's later messages wait, held, and at ``max_receive_count`` its consumer
        sends it to the DLQ itself: its group goes on, none of its later messages having spent a receive. A Lambda
        consumer retries only while the back-off fits in its invocation (synth warning
        ``jobqueues:fifoRetriesExceedLambdaTimeout`` otherwise). Default: False.
    content_based_deduplication:
        FIFO only: deduplicate on the body's SHA-256. Default: False.
    queue_name:
        Physical name of the source queue; the DLQ's is ``<queue_name>-dlq`` (before ``.fifo``).
        Default: ``<stack name>-<job type>``.
    encryption_key:
        KMS key that encrypts both queues. Default: SQS-managed server-side encryption.
    alarms:
        Alarm thresholds and actions. Default: ``JobQueueAlarmProps()``.
    delivery_delay:
        Source queue only: how long every new message stays invisible before its first delivery, 0 s - 15 min in
        whole seconds (FIFO too: a queue's delay, as SQS has no per-message delay there). A message ages while
        delayed, so the delay counts against ``retention_period`` and the oldest-message-age alarm: its default
        threshold adds the delay, and an explicit one must be above it. Default: 0 s.
    max_message_size:
        Source queue only: the largest message (body and attributes) it accepts, 1 KiB - 1 MiB in whole bytes
        (CloudFormation's range; regions without 1 MiB messages take 256 KiB at most). ``jobqueues send`` reads it
        from the queue. The DLQ keeps SQS's default, its region's maximum, so that a message ``sqslease``
        dead-letters with its added attributes fits. Default: 256 KiB.
    deduplication_scope:
        FIFO only, both queues: ``sqs.DeduplicationScope.MESSAGE_GROUP`` with ``fifo_throughput_limit``
        ``PER_MESSAGE_GROUP_ID`` is SQS's high-throughput FIFO (one without the other is refused).
        Default: SQS's, ``QUEUE``.
    fifo_throughput_limit:
        FIFO only, both queues: ``sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID`` with ``deduplication_scope``
        ``MESSAGE_GROUP``, see there. Default: SQS's, ``PER_QUEUE``.
    removal_policy:
        What deleting the stack (or replacing the queue) does to the source queue and the jobs still in it:
        ``RemovalPolicy.DESTROY``, ``RETAIN`` or ``RETAIN_ON_UPDATE_OR_DELETE``. Default: ``RemovalPolicy.DESTROY``
        (a deleted job type's pending jobs have no consumer left).
    dlq_removal_policy:
        The same for the DLQ. A retained DLQ keeps its name: delete it once read, before deploying the stack again
        under the same name. Default: ``RemovalPolicy.RETAIN`` (its messages are the evidence of failures).
    max_queue_time:
        The latency the team promises: an alarm fires when the p99 queue time (from ``SentTimestamp`` to the
        start of the run, milliseconds in the ``QueueTime`` metric ``sqslease`` consumers write) stays above it
        for 15 min. Positive, at most ``retention_period``; needs the alarms on. Default: none (no alarm).
    idempotency:
        Exactly-once completion (``sqslease``'s idempotency records, docs/sqslease.md): ``True`` gives the job type
        the stack's ``IdempotencyTable`` (one per stack and KMS key, shared by its job types: on-demand, TTL,
        point-in-time recovery, encrypted with ``encryption_key`` when there is one); or pass an
        ``IdempotencyTable`` (or a ``dynamodb.ITable`` with partition key ``pk``, string) of your own. The
        consumer gets ``SQSLEASE_IDEMPOTENCY_TABLE`` and ``SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD`` (the longer
        of the two queues' retention periods, or 14 days for a token) and may use PutItem, GetItem, UpdateItem
        and DeleteItem on its own job type's keys only (``dynamodb:LeadingKeys`` ``<job type>#*``). The job type
        may not contain ``#``. Default: False.
    """

    max_receive_count: int
    retention_period: Duration
    dlq_retention_period: Duration
    fifo: bool
    content_based_deduplication: bool
    queue_name: str
    encryption_key: kms.IKey
    alarms: JobQueueAlarmProps
    delivery_delay: Duration
    max_message_size: Size
    deduplication_scope: sqs.DeduplicationScope
    fifo_throughput_limit: sqs.FifoThroughputLimit
    removal_policy: RemovalPolicy
    dlq_removal_policy: RemovalPolicy
    max_queue_time: Duration
    idempotency: bool | IdempotencyTable | dynamodb.ITable


class LeaseOptions(TypedDict, total=False):
    """How long one message may take, and whether its consumer extends its lease.

    processing_p99:
        Measured p99 handler time of one message (any ``Duration``, milliseconds too). The visibility timeout
        is derived from it: ``max(2 x p99, 10 s)``, whole seconds rounded up. Default: none.
    visibility_timeout:
        Explicit visibility timeout, 0 s - 12 h (whole seconds, rounded up). Not below the derived one unless
        ``lease_extension`` is set. Default: derived.
    lease_extension:
        The consumer heartbeats its leases (``sqslease``), so the visibility timeout is a lease length rather
        than a worst-case bound. Default: False.
    max_processing_time:
        The longest one message may take, from its handler's start: a handler still running then has failed
        (``timed_out``). At most 12 h; above the visibility timeout only with ``lease_extension``, and then at
        most 12 h less a minute and the visibility timeout (a lease lasts at most 12 h from its receive). Default:
        none.
    """

    processing_p99: Duration
    visibility_timeout: Duration
    lease_extension: bool
    max_processing_time: Duration


class JobQueueProps(QueueOptions, LeaseOptions, total=False):
    """Props of :class:`jobqueues.JobQueue` and :meth:`jobqueues.JobQueueStacks.add`.

    lambda_timeout:
        Timeout of the consuming Lambda function, 2 s - 15 min in whole seconds, above ``processing_p99``; the
        visibility timeout is then at least ``6 x lambda_timeout + max_batching_window``, or
        ``lambda_timeout + max_batching_window + 10 s`` with ``lease_extension``. Default: none.
    max_batching_window:
        Maximum batching window of the Lambda event source, 0 s - 5 min in whole seconds; not for FIFO.
        Default: 0 s.
    """

    lambda_timeout: Duration
    max_batching_window: Duration


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
        Default: 10.
    max_batching_window:
        How long the event source gathers records, 0 s - 5 min in whole seconds; not for FIFO. Default: 0 s.
    max_concurrency:
        Cap on concurrent invocations by the event source, 2-1000. Default: no cap.
    memory_size:
        Function memory in MiB. Default: 512.
    processing_p99:
        Measured p99 of one message, below ``timeout``; with it, the VT is at least ``max(2 x p99, 10 s)`` too,
        and the p99-drift alarm fires above it (above half the timeout without it). Default: none.
    lease_extension:
        The function renews every record's lease as the invocation starts and heartbeats it, so the VT can be
        the shorter ``timeout + max_batching_window + 10 s``: faster retries after a crash, but a batch the
        event source holds longer (retrying throttled invocations, see :class:`jobqueues.LambdaJob`) becomes
        visible again before it runs. Default: False (the VT of ``6 x timeout + max_batching_window`` covers that).
    max_processing_time:
        The longest one message may take. Default: none.
    environment:
        More environment variables for the function; none named ``SQSLEASE_*`` (sqslease's settings, which the
        construct sets from the declaration). Default: none.
    log_retention:
        Retention of the function's log group. Default: one month.
    architecture:
        The function's instruction set; the ``sqslease`` layer is pure Python and declares both. Default:
        ``lambda_.Architecture.X86_64``.
    vpc:
        The VPC the function runs in. Its subnets need a route to SQS (a NAT gateway or an SQS interface
        endpoint): ``sqslease`` calls SQS from the function. Default: none (Lambda's own network).
    vpc_subnets:
        Private subnets of ``vpc`` for the function (not public: Lambda gives it no public IP). Only with ``vpc``.
        Default: the VPC's private subnets.
    security_groups:
        Security groups of the function, only with ``vpc``. Default: one new group, all outbound traffic allowed.
    reserved_concurrent_executions:
        Concurrency reserved for the function, at least 2, with ``max_concurrency`` at or below it: the event
        source's invocations above it are throttled, and without ``max_concurrency`` it makes up to 1,250 at once.
        Default: none (the account's unreserved pool).
    tracing:
        X-Ray tracing, e.g. ``lambda_.Tracing.ACTIVE``. Default: disabled.
    layers:
        Layers of your own, at most 4: a function takes 5, the ``sqslease`` layer comes last so that none of yours
        replaces it. Default: none.
    filters:
        Filter criteria of the event source, each ``lambda_.FilterCriteria.filter({"body": {...}})`` (an SQS event
        source filters on the body only), at most 10 (5 without a quota increase). A record that matches none is
        deleted from the queue unprocessed: it never reaches the function or the DLQ. Default: none (every record).
    metrics_config:
        Event source mapping metrics, ``lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT])`` (the only
        kind an SQS event source has). Default: none.
    provisioned_poller_config:
        Provisioned mode: ``minimum_pollers`` 2-200, ``maximum_pollers`` 2-2,000, minimum <= maximum; not with
        ``max_concurrency``. Default: none (standard mode).
    hooks:
        ``sqslease`` hooks called before and after each message (docs/sqslease.md, "Hooks"): import paths,
        ``package.module:name`` or ``package.module.name``, of ``sqslease.hooks.Hooks`` objects or classes in the
        function's code or a layer, given to the function as ``SQSLEASE_HOOKS``; a path that cannot be imported
        fails every invocation.
        Default: none (only the built-in OpenTelemetry hook, with ``opentelemetry-api`` installed).
    idempotency_key:
        What makes two messages the same job, with ``idempotency`` on (docs/sqslease.md, "Idempotency"): the
        import path, ``package.module:function`` or ``package.module.function``, of ``key(body, message) -> str``
        in the function's code or a layer, given to the function as ``SQSLEASE_IDEMPOTENCY_KEY``; a producer's
        retry (a new MessageId, the same key) then completes once. A path that cannot be imported fails every
        invocation (an init error).
        Default: none (the ``MessageId``: redeliveries only).
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
        The ECS cluster. Default: one per stack, shared by its ECS jobs, with Container Insights, in a new VPC
        (two availability zones, one NAT gateway, flow logs).
    image:
        The container image, with ``sqslease`` and the handler installed. Default: built from the
        ``Dockerfile`` in ``image_directory``; or the registry image in context ``jobqueues:image`` when set
        (the local emulator has no Docker).
    image_directory:
        The directory whose ``Dockerfile`` builds the default image (sqslease and the handlers installed),
        relative to the current directory; missing, or without a ``Dockerfile``, is a synth error. Not with
        ``image``. Default: ``"lambda_src"``.
    concurrency:
        Handlers running at once in one task, 1-1000. Default: 4.
    min_tasks:
        Tasks when idle. Default: 0 (scaled out from 0 as soon as a message is visible).
    max_tasks:
        Tasks at most. Default: 10.
    target_backlog_per_task:
        Target of the scaling policy: outstanding messages (visible + in flight) per running task.
        Default: ``concurrency``.
    cpu:
        Task CPU units. Default: 256.
    memory_limit_mib:
        Task memory in MiB. Default: 512.
    shutdown_grace:
        After SIGTERM, how long running handlers may finish before their messages are released; the
        container's stopTimeout is this + 5 s, at most 120 s. Default: 25 s.
    log_retention:
        Retention of the worker's log group. Default: one month.
    environment:
        More variables for the worker container; none named ``SQSLEASE_*`` (the lease settings are the worker's
        options) or ``ECS_AGENT_URI``. cdk-nag's ECS2 is acknowledged for them: put secret values in ``secrets``.
        Default: none.
    secrets:
        Variables from Secrets Manager or SSM Parameter Store (``ecs.Secret``), read when a task starts; the
        task execution role may read exactly these, plus ``kms:Decrypt`` on a secret's own key. Default: none.
    capacity_provider_strategies:
        Where tasks run: ``FARGATE`` and ``FARGATE_SPOT`` items, each once, weight 0-1000 (some above 0), base
        0-100,000 (on one item only); Spot runs X86_64 and ARM64 tasks. An ``ecs.Cluster`` gets both providers
        enabled; an imported cluster must have them. Default: the ``FARGATE`` launch type.
    platform_version:
        The Fargate platform version the service pins, e.g. ``ecs.FargatePlatformVersion.VERSION1_4``; on
        ``FARGATE_SPOT``, X86_64 tasks need 1.3.0 or later and ARM64 tasks 1.4.0 or later. Default: none pinned
        (ECS's ``LATEST``, 1.4.0 for Linux).
    cpu_architecture:
        ``ecs.CpuArchitecture.ARM64`` (Graviton) or ``X86_64``; the default image is built for it, an ``image``
        of yours must match it. Default: X86_64.
    vpc:
        The VPC the tasks run in: without ``cluster``, the job gets a cluster in it (Container Insights on),
        shared by the stack's ECS jobs in this VPC; with ``cluster``, it must be the cluster's. Default: the
        cluster's VPC.
    vpc_subnets:
        The tasks' subnets, a selection in ``vpc`` (which it needs). Default: the private subnets, or the public
        ones with ``assign_public_ip``.
    security_groups:
        The tasks' security groups. Default: a new group, all egress and no ingress.
    assign_public_ip:
        Tasks get a public IP: only in public subnets, for a VPC without NAT gateway. Default: False.
    enable_execute_command:
        ECS Exec (``aws ecs execute-command``) into the worker container: the task role gets the four
        ``ssmmessages`` channel actions and ``logs:DescribeLogGroups`` (cdk-nag IAM5 acknowledged: they take no
        resource), and writes session logs to the worker's log group only. Default: False.
    propagate_tags:
        Copy the service's or the task definition's tags to its tasks (``ecs.PropagatedTagSource``), e.g. for
        cost allocation. Default: none copied.
    hooks:
        ``sqslease`` hooks called before and after each message (docs/sqslease.md, "Hooks"): import paths,
        ``package.module:name`` or ``package.module.name``, of ``sqslease.hooks.Hooks`` objects or classes in the
        image, given to the worker as ``--hooks``; a path that cannot be imported stops the worker at start (exit
        status 2).
        Default: none (only the built-in OpenTelemetry hook, with ``opentelemetry-api`` installed).
    idempotency_key:
        What makes two messages the same job, with ``idempotency`` on (docs/sqslease.md, "Idempotency"): the
        import path, ``package.module:function`` or ``package.module.function``, of ``key(body, message) -> str``
        in the image, given to the worker as ``--idempotency-key``; a producer's retry (a new MessageId, the same
        key) then completes once. A path that cannot be imported stops the worker at start (exit status 2).
        Default: none (the ``MessageId``: redeliveries only).
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
