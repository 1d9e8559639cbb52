"""``LambdaJob``: a job type consumed by a Lambda function that carries ``sqslease``; and
:func:`bind_lambda_consumer`, the same wiring for a function you bring (``JobQueue.add_lambda_consumer``)."""

from __future__ import annotations

from typing import Any, Unpack

import jsii
from aws_cdk import CfnResource, Duration, IAnyProducer, IResolveContext, Lazy, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.alarms import alarm, notify, one_minute
from jobqueues.consumer_alarms import ConsumerAlarms, create_consumer_alarms
from jobqueues.consumer_rules import ConsumerCheck, check_lambda_consumer, check_lambda_timing
from jobqueues.dashboard import job_dashboard
from jobqueues.errors import JobQueueError
from jobqueues.inputs import PropReader
from jobqueues.job_queue import JobQueue
from jobqueues.lease_layer import LAMBDA_RUNTIME, sqslease_layer
from jobqueues.metrics import ConsumerMetrics
from jobqueues.names import stack_facts
from jobqueues.props import JobQueueProps, LambdaJobProps, LeaseOptions, QueueOptions
from jobqueues.stack_limits import count_resources
from sqslease.rules import LAMBDA_DEFAULT_TIMEOUT_S, format_duration, lambda_visibility_timeout

#: The function's Lambda handler: runs the batch through sqslease and calls ``SQSLEASE_HANDLER`` per record.
ENTRY_POINT = "sqslease.lambda_entry.handler"
DEFAULT_BATCH_SIZE = 10
DEFAULT_MEMORY_MIB = 512
#: Resources a LambdaJob adds beside its queues: role, policy, log group, function, event source mapping,
#: 5 alarms, dashboard.
RESOURCES_PER_LAMBDA_CONSUMER = 11
# The props that declare the queue (the function timeout becomes its lambda_timeout).
_QUEUE_PROPS = (set(QueueOptions.__annotations__) | set(LeaseOptions.__annotations__) | {"max_batching_window"}) - {
    "visibility_timeout"
}


KIND = "LambdaJob"


class LambdaJob(Construct):
    """A job type consumed by a Lambda function: queue + DLQ, function, event source, layer, IAM, alarms and
    a dashboard, all from one declaration. The props are :class:`jobqueues.props.LambdaJobProps`.

    The visibility timeout is derived from the function's own timeout (``6 x timeout + max_batching_window``,
    or ``timeout + max_batching_window + 10 s`` with ``lease_extension=True``), so the timeout is declared once.

    ``lease_extension=True`` trades AWS's margin for throttling for a faster retry: the function renews every
    record's lease as it starts and heartbeats it, so the records of a crashed or timed-out invocation return
    after the shorter visibility timeout; but a batch the event source holds longer than that (while it retries
    throttled invocations) becomes visible again before the function runs, at the cost of a receive (and possibly
    a second run), and sustained throttling can then reach ``max_receive_count``: size reserved concurrency and
    ``max_concurrency`` so that invocations are not throttled. Example::

        LambdaJob(self, "Thumbnails", code=Code.from_asset("lambda_src/handlers"), handler="thumbs.handle",
                  timeout=Duration.seconds(30), batch_size=10, max_batching_window=Duration.seconds(5))  # VT 185 s

    :param scope: parent construct.
    :param job_type: construct id and job type name (see :class:`JobQueue`).
    """

    def __init__(self, scope: Construct, job_type: str, **props: Unpack[LambdaJobProps]) -> None:
        super().__init__(scope, job_type)
        read = PropReader(props, LambdaJobProps.__annotations__)
        code = read.having("code", "bind", "a lambda_.Code, e.g. Code.from_asset('lambda_src/handlers')")
        handler = read.string("handler")
        batch_size = read.integer("batch_size", 10)
        max_concurrency = read.integer("max_concurrency", 10)
        memory_size = read.integer("memory_size", 512)
        environment = read.instance("environment", dict, "a dict of str to str") or {}
        for prop, value in (("code", code), ("handler", handler), ("timeout", props.get("timeout"))):
            if value is None and prop not in read.tokens and props.get(prop) is None:
                read.errors.append(f"{prop} is required: {_REQUIRED[prop]}")
        check = check_lambda_consumer(
            batch_size=batch_size,
            max_batching_window_s=read.duration_s("max_batching_window"),
            max_concurrency=max_concurrency,
            fifo=props.get("fifo") is True,
        )
        check.errors[:0] = read.errors
        queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
        if props.get("timeout") is not None:
            queue_props["lambda_timeout"] = props["timeout"]
        #: The queue + DLQ pair.
        self.job_queue = _ConsumerQueue(self, job_type, queue_props, owner=(KIND, self), consumer=check)

        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{job_type}: consumes {job_type}'s job queue",
        )
        log_group = logs.LogGroup(self, "Logs", retention=props.get("log_retention", logs.RetentionDays.ONE_MONTH))
        #: The consumer function; its handler is sqslease's entry point, which calls ``handler`` per message.
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=LAMBDA_RUNTIME,
            code=code,
            handler=ENTRY_POINT,
            timeout=props["timeout"],
            memory_size=DEFAULT_MEMORY_MIB if memory_size is None else memory_size,
            role=role,
            log_group=log_group,
            environment={**environment, **self.job_queue.consumer_environment(), "SQSLEASE_HANDLER": handler or ""},
            description=f"{job_type} consumer (sqslease)",
        )
        log_group.grant_write(role)
        _without_redundant_role_dependency(self.function, role)
        #: The consumer alarms.
        self.alarms = bind_lambda_consumer(
            self,
            self.job_queue,
            self.function,
            batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
            max_batching_window=props.get("max_batching_window"),
            max_concurrency=max_concurrency,
            checked=True,
            add_environment=False,
        )


def _without_redundant_role_dependency(function: lambda_.Function, role: iam.Role) -> None:
    """Drop the function's ``DependsOn`` on its role, which its ``Role: Fn::GetAtt`` already orders (cfn-lint
    W3005), and keep the rest: the role's policies, which the event source needs before it is created."""
    resource: CfnResource = function.node.default_child  # type: ignore[assignment]
    role_resource: CfnResource = role.node.default_child  # type: ignore[assignment]
    resource.add_override("DependsOn", Lazy.uncached_any(_DependenciesBut(resource, role_resource)))


@jsii.implements(IAnyProducer)
class _DependenciesBut:
    """Produces the logical ids ``resource`` depends on once the app has resolved them, all but ``redundant``."""

    def __init__(self, resource: CfnResource, redundant: CfnResource) -> None:
        self.resource, self.redundant = resource, redundant
        self._stack: Stack | None = None
        self._redundant_id = ""

    def produce(self, context: IResolveContext) -> list[str] | None:
        # The template is resolved more than once (synth, validation plugins): each jsii call is a round-trip, so
        # what cannot change between resolutions is looked up once. The dependencies themselves can: not cached.
        if self._stack is None:
            self._stack = Stack.of(self.resource)
            self._redundant_id = self._stack.get_logical_id(self.redundant)
        stack = self._stack
        ids = {stack.get_logical_id(d) for d in self.resource.obtain_dependencies() if isinstance(d, CfnResource)}
        ids.discard(self._redundant_id)
        return sorted(ids) or None


class _ConsumerQueue(JobQueue):
    """The job queue of a consumer construct: errors name the consumer construct and its props."""

    def __init__(
        self,
        scope: Construct,
        job_type: str,
        props: dict[str, Any],
        *,
        owner: tuple[str, Construct],
        consumer: ConsumerCheck,
    ) -> None:
        Construct.__init__(self, scope, "Queue")
        self._declare(
            scope,
            job_type,
            props,
            JobQueueProps.__annotations__,
            owner=owner,
            prop_names={"lambda_timeout": "timeout"},
            consumer=consumer,
        )
        if self.processing_p99_seconds is not None:
            # The declared p99 in the template, where tools (the local demo, reviews) compare measurements with it.
            self.queue.node.default_child.add_metadata(  # type: ignore[union-attr]
                "jobqueues:processing_p99_s", self.processing_p99_seconds
            )


_REQUIRED = {
    "code": "pass the handler's code, e.g. code=lambda_.Code.from_asset('lambda_src/handlers')",
    "handler": "pass the per-message function, e.g. handler='thumbs.handle'",
    "timeout": "pass the function timeout, e.g. timeout=Duration.seconds(30) (the VT is derived from it)",
}


def bind_lambda_consumer(
    scope: Construct,
    job_queue: JobQueue,
    function: lambda_.Function,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_batching_window: Duration | None = None,
    max_concurrency: int | None = None,
    add_layer: bool = True,
    checked: bool = False,
    add_environment: bool = True,
) -> ConsumerAlarms:
    """Make ``function`` the consumer of ``job_queue``: event source (partial batch failures), grants, the
    consumer environment, the ``sqslease`` layer, alarms and a dashboard.

    :param batch_size: records per invocation. Default: 10.
    :param max_batching_window: the event source's batching window. Default: none.
    :param max_concurrency: cap on concurrent invocations, 2-1000. Default: none.
    :param add_layer: add the stack's ``sqslease`` layer to the function. Default: True.
    :param checked: the caller validated the timeout and event source already. Default: False.
    :param add_environment: add the consumer environment (a caller that created the function with it already
        passes False). Default: True.
    """
    if not checked:
        _check_function(scope, job_queue, function, batch_size, max_batching_window, max_concurrency)
    function.add_event_source(
        event_sources.SqsEventSource(
            job_queue.queue,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            max_concurrency=max_concurrency,
            report_batch_item_failures=True,
        )
    )
    job_queue.grant_consume_messages(function)
    if add_environment:
        for name, value in job_queue.consumer_environment().items():
            function.add_environment(name, value)
    if add_layer:
        function.add_layers(sqslease_layer(scope))

    metrics = ConsumerMetrics.of(job_queue)
    leak, lost, drift = create_consumer_alarms(scope, job_queue, metrics, function_timeout_s=_timeout_s(function))
    minute = one_minute()
    errors = alarm(
        scope,
        "ErrorsAlarm",
        function.metric_errors(statistic="Sum", period=minute),
        threshold=1,
        evaluation_periods=3,
        description=(
            f"{job_queue.job_type}: the consumer function itself failed (not a record: sqslease reports failed "
            "records as batch item failures). The whole batch is retried."
        ),
    )
    throttles = alarm(
        scope,
        "ThrottlesAlarm",
        function.metric_throttles(statistic="Sum", period=minute),
        threshold=1,
        evaluation_periods=3,
        description=(
            f"{job_queue.job_type}: invocations throttled: raise the account's concurrency, or cap the event "
            "source with max_concurrency so records wait in the queue instead."
        ),
    )
    alarms = ConsumerAlarms(leak, lost, drift, errors=errors, throttles=throttles)
    notify(job_queue.alarm_topic, alarms.all())
    stack = Stack.of(scope)
    job_dashboard(
        scope,
        f"{stack_facts(stack).name}-{job_queue.job_type}",
        job_queue,
        metrics,
        [
            cloudwatch.GraphWidget(
                title="Function errors / throttles",
                left=[function.metric_errors(period=minute)],
                right=[function.metric_throttles(period=minute)],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Function duration p99 (ms)", left=[function.metric_duration(statistic="p99")], width=8
            ),
        ],
    )
    count_resources(stack, RESOURCES_PER_LAMBDA_CONSUMER, job_types=0)
    return alarms


def _check_function(
    scope: Construct,
    job_queue: JobQueue,
    function: lambda_.Function,
    batch_size: int,
    max_batching_window: Duration | None,
    max_concurrency: int | None,
) -> None:
    read = PropReader(
        {"batch_size": batch_size, "max_batching_window": max_batching_window, "max_concurrency": max_concurrency},
        ("batch_size", "max_batching_window", "max_concurrency"),
    )
    window_s = read.duration_s("max_batching_window")
    check = check_lambda_consumer(
        batch_size=read.integer("batch_size", 10),
        max_batching_window_s=window_s,
        max_concurrency=read.integer("max_concurrency", 10),
        fifo=job_queue.fifo,
    )
    errors = read.errors + check.errors
    if job_queue.fifo and window_s:
        errors.append(f"max_batching_window {format_duration(window_s)} is not supported for FIFO queues: remove it")
    timeout_s = _timeout_s(function)
    if timeout_s is not None:
        errors += check_lambda_timing(
            timeout_s,
            processing_p99_s=job_queue.processing_p99_seconds,
            timeout_name="the function timeout",
            p99_name="the queue's processing_p99",
        )
    vt_s = job_queue.visibility_timeout_seconds
    if timeout_s is not None and vt_s is not None:
        # The rule the queue's own declaration was checked with (jobqueues.declaration).
        least = lambda_visibility_timeout(timeout_s, window_s or 0, lease_extension=job_queue.lease_extension)
        if vt_s < least.seconds:
            errors.append(
                f"the function's timeout {format_duration(timeout_s)} needs a visibility timeout of at least "
                f"{format_duration(least.seconds)} ({least.rule}); the queue has {format_duration(vt_s)}: "
                + _vt_fix(job_queue, timeout_s, window_s or 0, least.seconds)
            )
    if errors:
        raise JobQueueError(
            f"add_lambda_consumer on {job_queue.node.path} cannot be deployed:\n"
            + "\n".join(f"  - {e}" for e in errors)
        )


def _timeout_s(function: lambda_.Function) -> float | None:
    """The function's timeout in seconds (Lambda's 3 s when it sets none); ``None`` for an unresolved token."""
    if function.timeout is None:
        return LAMBDA_DEFAULT_TIMEOUT_S
    return None if Token.is_unresolved(function.timeout.to_string()) else function.timeout.to_seconds()


def _vt_fix(job_queue: JobQueue, timeout_s: float, window_s: float, least_s: int) -> str:
    """How to make the queue's declaration fit the function: only what it does not declare already."""
    job_type = job_queue.job_type
    fixes = []
    if job_queue.lease_extension:
        fixes.append(f"raise visibility_timeout to at least {format_duration(least_s)} on job type {job_type!r}")
    else:
        if job_queue.lambda_timeout_seconds != timeout_s:
            fixes.append(f"declare lambda_timeout=Duration.seconds({int(timeout_s)}) on job type {job_type!r}")
        if job_queue.max_batching_window_seconds != window_s:
            fixes.append(f"declare max_batching_window=Duration.seconds({int(window_s)}) on it")
        leased = lambda_visibility_timeout(timeout_s, window_s, lease_extension=True).seconds
        fixes.append(f"declare lease_extension=True on it (then at least {format_duration(leased)})")
    return ", or ".join([*fixes, "shorten the function timeout"])
