"""A job queue made elsewhere, adopted as a job type (:meth:`jobqueues.JobQueue.from_queue_attributes`).

Like aws-cdk-lib's ``Queue.fromQueueArn``: nothing is created for the queues. The lease facts given are checked
with the rules of a declared queue (:func:`jobqueues.plan.plan_job_queue`), so a consumer bound to it gets
settings ``sqslease`` keeps, and the binders refuse a function whose timeout the queue cannot serve.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues.declaration import QueueDeclaration
from jobqueues.errors import JobQueueError
from jobqueues.inputs import PropReader, is_token
from jobqueues.job_queue_base import JobQueueBase, seconds_or_none
from jobqueues.marker import mark_adopted_job_queue
from jobqueues.names import StackFacts
from jobqueues.plan import QueuePlan, plan_job_queue
from jobqueues.registry import registry_of

KIND = "JobQueue.from_queue_attributes"
_DURATIONS = ("visibility_timeout", "processing_p99", "max_processing_time", "lambda_timeout", "max_batching_window")


class ImportedJobQueue(JobQueueBase):
    """See :meth:`jobqueues.JobQueue.from_queue_attributes` for the parameters."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        job_type: str,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        visibility_timeout: Duration,
        lease_extension: bool = False,
        processing_p99: Duration | None = None,
        max_processing_time: Duration | None = None,
        lambda_timeout: Duration | None = None,
        max_batching_window: Duration | None = None,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, id)
        registry = registry_of(self)
        given = {
            "visibility_timeout": visibility_timeout,
            "processing_p99": processing_p99,
            "max_processing_time": max_processing_time,
            "lambda_timeout": lambda_timeout,
            "max_batching_window": max_batching_window,
            "lease_extension": lease_extension,
        }
        plan, errors = _plan(job_type, given, queue, dead_letter_queue)
        errors += _placement_problems(registry.facts, queue, dead_letter_queue)
        errors += registry.names.conflicts(registry.facts, self, job_type, [])
        if errors:
            raise JobQueueError(f"{KIND} {self.node.path} cannot be used:\n" + "\n".join(f"  - {e}" for e in errors))
        registry.names.register(registry.facts, self, job_type, [])
        self.job_type = job_type
        self.queue = queue
        self.dead_letter_queue = dead_letter_queue
        self.visibility_timeout = visibility_timeout
        self.visibility_timeout_seconds = seconds_or_none(visibility_timeout)
        #: How the visibility timeout was chosen: by the queue's owner.
        self.visibility_timeout_rule = "as deployed (adopted queue)"
        self.lease_extension = plan.lease_extension
        self.processing_p99_seconds = plan.processing_p99
        self.max_processing_time_seconds = plan.max_processing_time
        self.lambda_timeout_seconds = plan.lambda_timeout
        self.max_batching_window_seconds = plan.max_batching_window
        self.fifo = plan.fifo
        self.alarm_topic = alarm_topic
        mark_adopted_job_queue(self, registry)


def _plan(
    job_type: str, given: dict[str, Any], queue: sqs.IQueue, dead_letter_queue: sqs.IQueue
) -> tuple[QueuePlan, list[str]]:
    """The facts given, read and checked with the rules of a declared queue: the plan and every error so far."""
    read = PropReader(given, given)
    seconds = {name: read.duration_s(name) for name in _DURATIONS}
    lease_extension = read.boolean("lease_extension", False)
    errors = list(read.errors)
    for name, value, attribute in (
        ("queue", queue, "queue_arn"),
        ("dead_letter_queue", dead_letter_queue, "queue_arn"),
    ):
        if not hasattr(value, attribute):
            errors.append(f"{name}={value!r} is not an sqs.IQueue: pass e.g. sqs.Queue.from_queue_arn(...)")
    if given["visibility_timeout"] is None:
        errors.append("visibility_timeout is required: pass the source queue's visibility timeout as deployed")
    plan = plan_job_queue(
        QueueDeclaration(
            job_type=job_type,
            lease_extension=lease_extension,
            fifo=bool(getattr(queue, "fifo", False)),
            tokens={p: given[p] for p in read.tokens},
            adopted=True,
            **seconds,  # type: ignore[arg-type]
        ),
        alarms_enabled=False,
    )
    return plan, errors + plan.errors


def _placement_problems(facts: StackFacts, queue: sqs.IQueue, dead_letter_queue: sqs.IQueue) -> list[str]:
    """Where the queues must be for their consumer to work: in the stack's account and region (an unresolved
    account or region is not compared), and a FIFO queue's DLQ FIFO too."""
    problems = []
    if hasattr(queue, "env"):
        for what, theirs, ours in (
            ("account", queue.env.account, facts.account),
            ("region", queue.env.region, facts.region),
        ):
            if theirs != ours and not is_token(theirs) and not is_token(ours):
                problems.append(
                    f"the queue is in {what} {theirs}, the stack in {what} {ours}: SQS metrics (the consumer's "
                    "scaling and alarms) are in the queue's own account and region, and a Lambda event source must "
                    f"be in its region; adopt the queue in a stack of {what} {theirs}"
                )
    if hasattr(queue, "fifo") and hasattr(dead_letter_queue, "fifo") and queue.fifo != dead_letter_queue.fifo:
        problems.append(
            "the queue is " + ("FIFO" if queue.fifo else "standard") + " and its dead-letter queue is not: SQS "
            "requires the DLQ of a FIFO queue to be FIFO (a name ending in .fifo), and of a standard queue standard"
        )
    return problems
