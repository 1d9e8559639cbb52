"""A Lambda function as a job type's consumer (:func:`bind_lambda_consumer`), declared by ``LambdaJob`` or
brought with ``add_lambda_consumer``: the SQS event source with partial batch failures, the consumer
environment, the ``sqslease`` layer, and the function's own alarms and graphs beside the shared binding."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from jobqueues.alarms import alarm
from jobqueues.consumer_alarms import ConsumerAlarms
from jobqueues.consumer_binding import Binding, DeclaredConsumer, bind_consumer, claim_consumer
from jobqueues.consumer_options import RUNTIME_OPTIONS, RuntimeOptions, read_runtime_options
from jobqueues.consumer_rules import check_lambda_consumer, check_lambda_timing, longest_timeout_fitting
from jobqueues.errors import JobQueueError
from jobqueues.fleet_dashboard import add_consumer_errors
from jobqueues.inputs import PropReader
from jobqueues.interface import IJobQueue
from jobqueues.lambda_rules import layer_runtime_error
from jobqueues.lease_layer import LAYER_RUNTIMES, RUNTIME_FIX, sqslease_layer
from jobqueues.marker import mark_consumer, reference
from jobqueues.registry import one_minute
from sqslease.rules import (
    DEFAULT_LAMBDA_BATCH_SIZE,
    LAMBDA_DEFAULT_TIMEOUT_S,
    format_duration,
    lambda_visibility_timeout,
)


def bind_lambda_consumer(
    scope: Construct,
    job_queue: IJobQueue,
    function: lambda_.Function,
    *,
    batch_size: int = DEFAULT_LAMBDA_BATCH_SIZE,
    max_batching_window: Duration | None = None,
    max_concurrency: int | None = None,
    add_layer: bool = True,
    checked: bool = False,
    add_environment: bool = True,
    event_source_options: Mapping[str, Any] | None = None,
    hooks: Sequence[str] | None = None,
    idempotency_key: str | None = None,
    declared: DeclaredConsumer | None = None,
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
    :param event_source_options: more ``SqsEventSource`` props, checked by the caller (a ``LambdaJob``'s
        ``filters``, ``metrics_config``, ``provisioned_poller_config``). Default: none.
    :param hooks: ``sqslease`` hooks, import paths; the function gets them as ``SQSLEASE_HOOKS`` (with
        ``add_environment``). Default: none.
    :param idempotency_key: the idempotency key function's import path, with idempotency on; the function gets it
        as ``SQSLEASE_IDEMPOTENCY_KEY`` (with ``add_environment``). Default: none (the ``MessageId``).
    :param declared: what a ``LambdaJob`` knows of its function (its resource, timeout and logical id). Default:
        looked up.
    """
    claim_consumer(job_queue, scope, "add_lambda_consumer")
    timeout_s = declared.timeout_s if declared is not None else function_timeout_s(function)
    options = RuntimeOptions()
    if not checked:
        given = {"hooks": hooks, "idempotency_key": idempotency_key}
        runtime = function.runtime.name if add_layer else None  # the layer's runtimes are checked too
        window, concurrency = max_batching_window, max_concurrency
        options = _check_function(job_queue, timeout_s, batch_size, window, concurrency, given, runtime)
    event_source = {
        "batch_size": batch_size,
        "max_batching_window": max_batching_window,
        "max_concurrency": max_concurrency,
        **(event_source_options or {}),
    }
    function.add_event_source(
        event_sources.SqsEventSource(job_queue.queue, report_batch_item_failures=True, **event_source)
    )
    if add_environment:
        for name, value in options.apply(job_queue.consumer_contract()).environment().items():
            function.add_environment(name, value)
    if add_layer:
        function.add_layers(sqslease_layer(scope))
    binding = bind_consumer(scope, job_queue, function, function_timeout_s=timeout_s)
    _mark(job_queue, function, timeout_s, event_source, declared)
    return _finish(scope, job_queue, binding, function)


def _mark(
    job_queue: IJobQueue,
    function: lambda_.Function,
    timeout_s: float | None,
    event_source: Mapping[str, Any],
    declared: DeclaredConsumer | None,
) -> None:
    """The consumer marker: the function and its event source's numbers."""
    if declared is not None and "function" in declared.references:
        function_reference = declared.references["function"]
    else:
        function_reference = reference(function, function.function_name, "name", Stack.of(function))
    window = event_source["max_batching_window"]
    part = {
        "kind": "lambda",
        "function": function_reference,
        "timeout_s": timeout_s,
        "batch_size": event_source["batch_size"],
        "max_batching_window_s": window.to_seconds() if window else 0,
        "max_concurrency": event_source["max_concurrency"],
    }
    mark_consumer(job_queue, function, part, declared.resource if declared is not None else None)


def _finish(scope: Construct, job_queue: IJobQueue, binding: Binding, function: lambda_.Function) -> ConsumerAlarms:
    """The function's errors and throttles alarms and graphs, then the binding's shared alarms and dashboard."""
    minute = one_minute(scope)
    # One metric object each for the alarm and the graph (each is a round trip; Sum is their default statistic).
    errors_metric = function.metric_errors(statistic="Sum", period=minute)
    throttles_metric = function.metric_throttles(statistic="Sum", period=minute)
    errors = alarm(
        scope,
        "ErrorsAlarm",
        errors_metric,
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
        throttles_metric,
        threshold=1,
        evaluation_periods=3,
        description=(
            f"{job_queue.job_type}: invocations throttled: raise the account's concurrency, or cap the event "
            "source with max_concurrency so records wait in the queue instead."
        ),
    )
    widgets: list[cloudwatch.IWidget] = [
        cloudwatch.GraphWidget(
            title="Function errors / throttles",
            left=[errors_metric],
            right=[throttles_metric],
            width=8,
        ),
        cloudwatch.GraphWidget(
            title="Function duration p99 (ms)", left=[function.metric_duration(statistic="p99")], width=8
        ),
    ]
    add_consumer_errors(job_queue, scope, function)
    return binding.finish(widgets, errors=errors, throttles=throttles)


def function_timeout_s(function: lambda_.Function) -> float | None:
    """The function's timeout in seconds (Lambda's 3 s when it sets none); ``None`` for an unresolved token."""
    if function.timeout is None:
        return LAMBDA_DEFAULT_TIMEOUT_S
    return None if Token.is_unresolved(function.timeout.to_string()) else function.timeout.to_seconds()


def _check_function(
    job_queue: IJobQueue,
    timeout_s: float | None,
    batch_size: int,
    max_batching_window: Duration | None,
    max_concurrency: int | None,
    runtime_options: Mapping[str, Any],
    layer_runtime: str | None = None,
) -> RuntimeOptions:
    """The function and the binder's options checked against the job queue: the ``sqslease`` options, or a
    ``JobQueueError`` listing every problem.

    :param layer_runtime: the function's runtime, when it is to get the ``sqslease`` layer. Default: none."""
    read = PropReader(
        {
            "batch_size": batch_size,
            "max_batching_window": max_batching_window,
            "max_concurrency": max_concurrency,
            **runtime_options,
        },
        ("batch_size", "max_batching_window", "max_concurrency", *RUNTIME_OPTIONS),
    )
    options = read_runtime_options(read, idempotency=job_queue.idempotency_table is not None)
    window_s = read.duration_s("max_batching_window")
    check = check_lambda_consumer(
        batch_size=read.integer("batch_size", DEFAULT_LAMBDA_BATCH_SIZE),
        max_batching_window_s=window_s,
        max_concurrency=read.integer("max_concurrency", 10),
        fifo=job_queue.fifo,
    )
    errors = read.errors + check.errors
    served = [runtime.name for runtime in LAYER_RUNTIMES]
    unserved = layer_runtime_error(layer_runtime, served, RUNTIME_FIX) if layer_runtime is not None else None
    if unserved is not None:
        errors.append(unserved)
    if job_queue.fifo and window_s:
        errors.append(f"max_batching_window {format_duration(window_s)} is not supported for FIFO queues: remove it")
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
    return options


def _vt_fix(job_queue: IJobQueue, timeout_s: float, window_s: float, least_s: int) -> str:
    """How to make the queue's declaration fit the function: only what it does not declare already."""
    if getattr(job_queue, "owns_queues", True) is False:  # as jobqueues.marker tells an adopted queue
        return _adopted_vt_fix(job_queue, timeout_s, window_s, least_s)
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


def _adopted_vt_fix(job_queue: IJobQueue, timeout_s: float, window_s: float, least_s: int) -> str:
    """How to make an adopted queue fit the function: its VT is its owner's fact (declaring ``lambda_timeout``
    changes nothing), so raise it there, extend leases, or shorten the function where a timeout fits both."""
    fixes = [
        f"raise the queue's visibility timeout to at least {format_duration(least_s)} where the queue is owned, "
        f"and in from_queue_attributes(visibility_timeout=...) of job type {job_queue.job_type!r}"
    ]
    if not job_queue.lease_extension:
        leased = lambda_visibility_timeout(timeout_s, window_s, lease_extension=True).seconds
        fixes.append(f"declare lease_extension=True in from_queue_attributes (then at least {format_duration(leased)})")
    vt_s = job_queue.visibility_timeout_seconds
    shorter = (
        None
        if vt_s is None
        else longest_timeout_fitting(
            vt_s,
            timeout_s,
            max_batching_window_s=window_s,
            lease_extension=job_queue.lease_extension,
            processing_p99_s=job_queue.processing_p99_seconds,
        )
    )
    if shorter is not None:
        fixes.append(f"shorten the function timeout to at most {format_duration(shorter)}")
    return ", or ".join(fixes)
