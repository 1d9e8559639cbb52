"""Plan, then build, for a ``LambdaJob``: a pure function turns its declaration into every value its queue, its
function and its event source get.

:func:`plan_lambda_job` runs the consumer's rules (:mod:`jobqueues.consumer_rules`, :mod:`jobqueues.lambda_rules`)
and plans the job queue with their findings (:func:`jobqueues.plan.plan_job_queue`), so one plan holds every value,
error and warning. Pure Python (no aws_cdk), as the queue's plan: a token is carried as given (:class:`Given`), and
so are the CDK objects of the declaration (the code, a VPC, layers, filters); what the rules need of those objects
is read by the construct (:func:`jobqueues.lambda_options.lambda_job_declaration`), which needs the CDK to read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jobqueues import defaults
from jobqueues.consumer_contract import reserved_variable
from jobqueues.consumer_rules import (
    ConsumerCheck,
    check_handler,
    check_hooks,
    check_idempotency_key,
    check_lambda_consumer,
)
from jobqueues.declaration import QueueDeclaration
from jobqueues.declaration_warnings import DeclarationWarning
from jobqueues.lambda_environment_rules import check_lambda_environment
from jobqueues.lambda_rules import LambdaOptions, check_lambda_options
from jobqueues.plan import Given, QueuePlan, plan_job_queue

#: What the function's required props are for, in their error.
REQUIRED = {
    "code": "pass the handler's code, e.g. code=lambda_.Code.from_asset('lambda_src/handlers')",
    "handler": "pass the per-message function, e.g. handler='thumbs.handle'",
    "timeout": "pass the function timeout, e.g. timeout=Duration.seconds(30) (the VT is derived from it)",
}


@dataclass(frozen=True)
class LambdaJobDeclaration:
    """Everything declared for one ``LambdaJob``: plain values, durations in seconds, CDK objects as given.

    ``None`` means "not declared": the plan applies the default of :mod:`jobqueues.defaults`.

    :param queue: the job queue's declaration; its ``lambda_timeout`` is the function timeout, its
        ``max_batching_window`` the event source's (a token of either in its ``tokens``).
    :param code: the handler's code (a ``lambda_.Code``), as given; required.
    :param handler: the per-message function, ``module.function``; required (or a token in ``tokens``).
    :param batch_size: records per invocation.
    :param memory_size: the function's memory in MiB.
    :param environment: the function's own variables.
    :param hooks: ``sqslease`` hooks, import paths.
    :param idempotency_key: the import path of the idempotency key function.
    :param log_retention: the ``logs.RetentionDays`` member's name of the function's log group.
    :param options: the deployment options as the rules check them (:class:`jobqueues.lambda_rules.LambdaOptions`,
        ``max_concurrency`` included); the construct reads them of its props, a declaration made by hand gives them.
    :param function_options: the function's deployment props as given (``architecture``, ``vpc``, ``vpc_subnets``,
        ``security_groups``, ``tracing``, ``layers``): CDK objects, passed to the function unread.
    :param event_source_options: the event source's props as given (``filters``, ``metrics_config``,
        ``provisioned_poller_config``).
    :param tracing_active: ``tracing`` is ``lambda_.Tracing.ACTIVE`` (the role gets X-Ray's write actions).
    :param queue_resources: the queue's construct props, as :func:`jobqueues.plan.plan_job_queue` takes them.
    :param alarms_enabled: ``alarms.enabled``.
    :param tokens: the function's props given as unresolved tokens (``handler``): prop name -> the value as given.
    :param errors: what the construct found where the props entered (types, units), listed first.
    :param findings: what the construct found in the CDK objects given (a layer's runtimes, the subnets a selection
        picks, a group of another VPC), listed after the rules of the options.
    :param refused: the props given with a value of the wrong type (in ``errors``): not reported missing too.
    """

    queue: QueueDeclaration
    code: Any = None
    handler: str | None = None
    batch_size: int | None = None
    memory_size: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    hooks: tuple[str, ...] = ()
    idempotency_key: str | None = None
    log_retention: str | None = None
    options: LambdaOptions = field(default_factory=LambdaOptions)
    function_options: Mapping[str, Any] = field(default_factory=dict)
    event_source_options: Mapping[str, Any] = field(default_factory=dict)
    tracing_active: bool = False
    queue_resources: Mapping[str, Any] = field(default_factory=dict)
    alarms_enabled: bool = True
    tokens: Mapping[str, object] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    refused: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LambdaJobPlan:
    """Every final value of one ``LambdaJob``. Durations in seconds, or a token as given (:class:`Given`).

    :param queue: the job queue's plan; its errors and warnings are the whole declaration's (the function's own
        warnings aside).
    :param code: the handler's code, as given.
    :param handler: the per-message function (``SQSLEASE_HANDLER``).
    :param timeout: the function timeout.
    :param batch_size: records per invocation.
    :param max_batching_window: the event source's batching window; ``None``: not declared (none).
    :param max_concurrency: the event source's cap on concurrent invocations; ``None``: no cap.
    :param memory_size: the function's memory in MiB.
    :param environment: the function's own variables (the consumer contract's are added at build).
    :param hooks: ``sqslease`` hooks, import paths.
    :param idempotency_key: the idempotency key function's import path; ``None``: the ``MessageId``.
    :param log_retention: the ``logs.RetentionDays`` member's name of the function's log group.
    :param function_options: the function's deployment props, as given (``reserved_concurrent_executions`` too).
    :param event_source_options: the event source's props, as given.
    :param vpc_access: the function runs in a VPC: its role gets the network-interface actions.
    :param tracing_active: X-Ray tracing is active: its role gets X-Ray's write actions.
    :param function_warnings: findings on the function's own options, each with an id to acknowledge it by.
    """

    queue: QueuePlan
    code: Any
    handler: str | Given | None
    timeout: float | Given | None
    batch_size: int
    max_batching_window: float | Given | None
    max_concurrency: int | None
    memory_size: int
    environment: Mapping[str, str]
    hooks: tuple[str, ...]
    idempotency_key: str | None
    log_retention: str
    function_options: Mapping[str, Any]
    event_source_options: Mapping[str, Any]
    vpc_access: bool
    tracing_active: bool
    function_warnings: list[DeclarationWarning] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Every problem of the declaration, each with its fix; a plan with errors is never built."""
        return self.queue.errors

    @property
    def warnings(self) -> list[DeclarationWarning]:
        """Every warning: the job queue's, then the function's."""
        return self.queue.warnings + self.function_warnings


def plan_lambda_job(d: LambdaJobDeclaration) -> LambdaJobPlan:
    """The plan of declaration ``d``: the consumer's rules and the queue's, each value settled."""
    # The queue's lambda_timeout is the function's timeout: its messages say so.
    d = replace(d, queue=replace(d.queue, prop_names={"lambda_timeout": "timeout", **d.queue.prop_names}))
    consumer, function_warnings = lambda_consumer_check(d)
    queue = plan_job_queue(d.queue, consumer=consumer, alarms_enabled=d.alarms_enabled, resources=d.queue_resources)
    reserved = d.options.reserved_concurrent_executions
    return LambdaJobPlan(
        queue=queue,
        code=d.code,
        handler=Given(d.tokens["handler"]) if "handler" in d.tokens else d.handler,
        timeout=_given(d.queue, "lambda_timeout", d.queue.lambda_timeout),
        batch_size=defaults.LAMBDA_BATCH_SIZE if d.batch_size is None else d.batch_size,
        max_batching_window=_given(d.queue, "max_batching_window", d.queue.max_batching_window),
        max_concurrency=d.options.max_concurrency,
        memory_size=defaults.LAMBDA_MEMORY_MIB if d.memory_size is None else d.memory_size,
        environment=d.environment,
        hooks=d.hooks,
        idempotency_key=d.idempotency_key,
        log_retention=d.log_retention or defaults.LOG_RETENTION,
        function_options={
            **d.function_options,
            **({"reserved_concurrent_executions": reserved} if reserved is not None else {}),
        },
        event_source_options=d.event_source_options,
        vpc_access=d.options.vpc,
        tracing_active=d.tracing_active,
        function_warnings=function_warnings,
    )


def lambda_consumer_check(d: LambdaJobDeclaration) -> tuple[ConsumerCheck, list[DeclarationWarning]]:
    """The consumer's errors (those found where the props entered first) and the queue-level warnings, and the
    warnings of the function's own options."""
    errors = list(d.errors) + _missing(d)
    names = [str(name) for name in d.environment]
    errors += [
        f"environment[{name!r}] collides with a variable the function reads: {why}"
        for name in names
        if (why := reserved_variable(name)) is not None
    ]
    errors += check_lambda_environment([name for name in names if reserved_variable(name) is None])
    errors += check_hooks(d.hooks)
    errors += check_idempotency_key(d.idempotency_key, d.queue.idempotency or "idempotency" in d.refused)
    event_source = check_lambda_consumer(
        batch_size=d.batch_size,
        max_batching_window_s=d.queue.max_batching_window,
        max_concurrency=d.options.max_concurrency,
        fifo=d.queue.fifo,
    )
    options = check_lambda_options(d.options)
    errors += event_source.errors + options.errors + list(d.findings)
    return ConsumerCheck(errors, event_source.warnings), options.warnings


def _missing(d: LambdaJobDeclaration) -> list[str]:
    """The required props not given (a token, or a value of the wrong type, is given), and a handler that is not an
    import path."""
    given = {
        "code": d.code is not None or "code" in d.refused,
        "handler": d.handler is not None or "handler" in d.tokens or "handler" in d.refused,
        "timeout": d.queue.lambda_timeout is not None
        or "lambda_timeout" in d.queue.tokens
        or "lambda_timeout" in d.refused,
    }
    missing = [f"{prop} is required: {REQUIRED[prop]}" for prop, present in given.items() if not present]
    if d.handler is not None:
        missing += check_handler(d.handler, "module.function", "handler='thumbs.handle'")
    return missing


def _given(queue: QueueDeclaration, prop: str, seconds: float | None) -> float | Given | None:
    return Given(queue.tokens[prop]) if prop in queue.tokens else seconds
