"""``LambdaJob``: a job type consumed by a Lambda function that carries ``sqslease``."""

from __future__ import annotations

from typing import Any, Unpack

import jsii
from aws_cdk import Annotations, CfnResource, IAnyProducer, IResolveContext, Lazy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.consumer_contract import reserved_variable
from jobqueues.consumer_options import read_runtime_options
from jobqueues.consumer_rules import check_handler, check_lambda_consumer
from jobqueues.inputs import PropReader
from jobqueues.job_queue import JobQueue
from jobqueues.lambda_consumer import bind_lambda_consumer
from jobqueues.lambda_options import acknowledge_wildcards, grant_vpc_access, read_lambda_options
from jobqueues.lambda_rules import check_lambda_environment
from jobqueues.lease_layer import LAMBDA_RUNTIME
from jobqueues.planning import plan_from_props
from jobqueues.props import LambdaJobProps, LeaseOptions, QueueOptions
from sqslease.rules import DEFAULT_LAMBDA_BATCH_SIZE

#: The function's Lambda handler: runs the batch through sqslease and calls ``SQSLEASE_HANDLER`` per record.
ENTRY_POINT = "sqslease.lambda_entry.handler"
DEFAULT_MEMORY_MIB = 512
# The props that declare the queue (the function timeout becomes its lambda_timeout).
_QUEUE_PROPS = (set(QueueOptions.__annotations__) | set(LeaseOptions.__annotations__) | {"max_batching_window"}) - {
    "visibility_timeout"
}
KIND = "LambdaJob"
_REQUIRED = {
    "code": "pass the handler's code, e.g. code=lambda_.Code.from_asset('lambda_src/handlers')",
    "handler": "pass the per-message function, e.g. handler='thumbs.handle'",
    "timeout": "pass the function timeout, e.g. timeout=Duration.seconds(30) (the VT is derived from it)",
}


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
        batch_size = read.integer("batch_size", DEFAULT_LAMBDA_BATCH_SIZE)
        max_concurrency = read.integer("max_concurrency", 10)
        memory_size = read.integer("memory_size", DEFAULT_MEMORY_MIB)
        environment = read.instance("environment", dict, "a dict of str to str") or {}
        for prop, value in (("code", code), ("handler", handler), ("timeout", props.get("timeout"))):
            if value is None and prop not in read.tokens and props.get(prop) is None:
                read.errors.append(f"{prop} is required: {_REQUIRED[prop]}")
        if handler is not None:
            read.errors += check_handler(handler, "module.function", "handler='thumbs.handle'")
        check = check_lambda_consumer(
            batch_size=batch_size,
            max_batching_window_s=read.duration_s("max_batching_window"),
            max_concurrency=max_concurrency,
            fifo=props.get("fifo") is True,
        )
        for name in environment:
            why = reserved_variable(str(name))
            if why is not None:
                read.errors.append(f"environment[{name!r}] collides with a variable the function reads: {why}")
        read.errors += check_lambda_environment(
            [str(name) for name in environment if reserved_variable(str(name)) is None]
        )
        sqslease_options = read_runtime_options(read, idempotency=props.get("idempotency") not in (None, False))
        deployment, options_check = read_lambda_options(read, max_concurrency)
        check.errors[:0] = read.errors
        check.errors += options_check.errors
        queue_props: dict[str, Any] = {k: v for k, v in props.items() if k in _QUEUE_PROPS}
        if props.get("timeout") is not None:
            queue_props["lambda_timeout"] = props["timeout"]
        plan = plan_from_props(self, KIND, job_type, queue_props, labels={"lambda_timeout": "timeout"}, consumer=check)
        #: The queue + DLQ pair.
        self.job_queue = JobQueue(self, "Queue", plan=plan)

        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{job_type}: consumes {job_type}'s job queue",
        )
        grant_vpc_access(role, deployment)
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
            environment={
                **environment,
                **sqslease_options.apply(self.job_queue.consumer_contract()).environment(handler or ""),
            },
            description=f"{job_type} consumer (sqslease)",
            **deployment.function_props,
        )
        for warning in options_check.warnings:  # the function's own options: on the function, not the queue
            Annotations.of(self.function).add_warning_v2(warning.id, warning.message)
        log_group.grant_write(role)
        acknowledge_wildcards(role, deployment)
        _without_redundant_role_dependency(self.function, role)
        #: The consumer alarms.
        self.alarms = bind_lambda_consumer(
            self,
            self.job_queue,
            self.function,
            batch_size=DEFAULT_LAMBDA_BATCH_SIZE if batch_size is None else batch_size,
            max_batching_window=props.get("max_batching_window"),
            max_concurrency=max_concurrency,
            checked=True,
            add_environment=False,
            event_source_options=deployment.event_source_props,
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
