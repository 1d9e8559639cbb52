"""``LambdaJob``: a job type consumed by a Lambda function that carries ``sqslease``."""

from __future__ import annotations

import math
from typing import Unpack

from aws_cdk import Annotations, CfnResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from jobqueues.consumer_binding import DeclaredConsumer
from jobqueues.consumer_options import RuntimeOptions
from jobqueues.errors import JobQueueError
from jobqueues.job_queue import JobQueue
from jobqueues.lambda_consumer import bind_lambda_consumer
from jobqueues.lambda_job_plan import LambdaJobPlan, plan_lambda_job
from jobqueues.lambda_options import acknowledge_wildcards, grant_vpc_access, lambda_job_declaration
from jobqueues.lease_layer import LAMBDA_RUNTIME, sqslease_layer
from jobqueues.plan import Given
from jobqueues.planning import claim_names
from jobqueues.props import LambdaJobProps
from jobqueues.registry import RegisteredConstruct, StackRegistry, registry_of, stack_of
from sqslease.rules import LAMBDA_DEFAULT_TIMEOUT_S

#: The function's Lambda handler: runs the batch through sqslease and calls ``SQSLEASE_HANDLER`` per record.
ENTRY_POINT = "sqslease.lambda_entry.handler"
KIND = "LambdaJob"


class LambdaJob(RegisteredConstruct):
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
    :param plan: build from this plan (:func:`jobqueues.lambda_job_plan.plan_lambda_job`) instead of props; the job
        type is the plan's and ``job_type`` is then only the construct id. Default: planned from the props.
    """

    def __init__(
        self, scope: Construct, job_type: str, *, plan: LambdaJobPlan | None = None, **props: Unpack[LambdaJobProps]
    ) -> None:
        super().__init__(scope, job_type)
        registry = registry_of(self)
        if plan is None:
            plan = plan_lambda_job(lambda_job_declaration(self, KIND, job_type, props, registry.facts.name))
        elif props:
            raise JobQueueError(f"{KIND} {self.node.path}: pass a plan or props, not both (got {sorted(props)})")
        claim_names(KIND, self, registry, plan.queue)
        #: The plan the job was built from: every final value, the rules' findings.
        self.plan = plan
        #: The queue + DLQ pair.
        self.job_queue = JobQueue(self, "Queue", plan=plan.queue, claimed_by=self)
        job_type = plan.queue.job_type
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{job_type}: consumes {job_type}'s job queue",
        )
        grant_vpc_access(role, plan)
        log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays[plan.log_retention])
        #: The consumer function; its handler is sqslease's entry point, which calls ``handler`` per message.
        self.function = self._function(plan, role, log_group, registry)
        for warning in plan.function_warnings:  # the function's own options: on the function, not the queue
            Annotations.of(self.function).add_warning_v2(warning.id, warning.message)
        log_group.grant_write(role)
        acknowledge_wildcards(role, plan)
        resource: CfnResource = self.function.node.default_child  # type: ignore[assignment]
        _without_redundant_role_dependency(self.function, role, resource, registry)
        function_id = registry.logical_id(self.path_below_stack("Function", "Resource"), lambda: resource)
        declared = DeclaredConsumer(resource, {"function": {"logical_id": function_id}}, _timeout_s(plan))
        #: The consumer alarms.
        self.alarms = bind_lambda_consumer(
            self,
            self.job_queue,
            self.function,
            batch_size=plan.batch_size,
            max_batching_window=_duration(plan.max_batching_window, registry),
            max_concurrency=plan.max_concurrency,
            checked=True,
            add_environment=False,
            add_layer=False,
            event_source_options=plan.event_source_options,
            declared=declared,
        )

    def _function(
        self, plan: LambdaJobPlan, role: iam.Role, log_group: logs.LogGroup, registry: StackRegistry
    ) -> lambda_.Function:
        handler = plan.handler.value if isinstance(plan.handler, Given) else plan.handler
        contract = RuntimeOptions(plan.hooks, plan.idempotency_key).apply(self.job_queue.consumer_contract())
        return lambda_.Function(
            self,
            "Function",
            runtime=LAMBDA_RUNTIME,
            code=plan.code,
            handler=ENTRY_POINT,
            timeout=_duration(plan.timeout, registry),
            memory_size=plan.memory_size,
            role=role,
            log_group=log_group,
            environment={**plan.environment, **contract.environment(handler or "")},
            description=f"{plan.queue.job_type} consumer (sqslease)",
            # The sqslease layer after the user's, given at creation (an add_layers call is a round trip).
            **{**plan.function_options, "layers": [*(plan.function_options.get("layers") or []), sqslease_layer(self)]},
        )


def _duration(seconds: float | Given | None, registry: StackRegistry) -> Duration | None:
    """The ``Duration`` of a planned value: the token as given, or whole seconds shared in the stack."""
    if isinstance(seconds, Given):
        return seconds.value  # type: ignore[no-any-return]
    return None if seconds is None else registry.seconds(seconds)


def _timeout_s(plan: LambdaJobPlan) -> float | None:
    """The function's timeout in seconds as it is deployed (whole seconds, :func:`_duration`); ``None``: a token."""
    if isinstance(plan.timeout, Given):
        return None
    return LAMBDA_DEFAULT_TIMEOUT_S if plan.timeout is None else math.ceil(plan.timeout)


def _without_redundant_role_dependency(
    function: lambda_.Function,
    role: iam.Role,
    resource: CfnResource | None = None,
    registry: StackRegistry | None = None,
) -> None:
    """Drop the function's ``DependsOn`` on its role, which its ``Role: Fn::GetAtt`` already orders (cfn-lint
    W3005), and keep the rest: the role's policies, which the event source needs before it is created.

    ``lambda.Function`` makes its resource depend on the role construct, which the CDK turns into a dependency on
    each of the role's resources at synth: dropped then (:meth:`StackRegistry.before_render`), two round trips to the
    kernel a function instead of one per dependency each time the template is resolved.

    :param resource: the function's resource, when the caller has it already. Default: looked up.
    :param registry: the function's stack's registry, when the caller has it. Default: looked up.
    """
    function_resource: CfnResource = resource or function.node.default_child  # type: ignore[assignment]
    (registry or registry_of(function)).before_render(lambda: _drop_role_dependency(function_resource, role))


def _drop_role_dependency(resource: CfnResource, role: iam.Role) -> None:
    dependencies = [d for d in resource.obtain_dependencies() if isinstance(d, CfnResource)]
    roles = [d for d in dependencies if isinstance(d, iam.CfnRole)]
    if len(roles) == 1:
        # The function depends on every resource of its role, so a lone role resource is its role's.
        resource.remove_resource_dependency(roles[0])
        rest = [d for d in dependencies if d is not roles[0]]
    else:
        resource.remove_resource_dependency(role.node.default_child)  # type: ignore[arg-type]
        rest = [d for d in resource.obtain_dependencies() if isinstance(d, CfnResource)]
    if len(rest) > 1:
        # The CDK orders DependsOn by construct path; jobqueues' functions have always had theirs by logical id.
        stack = stack_of(resource)
        resource.add_override("DependsOn", sorted(stack.get_logical_id(d) for d in rest))
