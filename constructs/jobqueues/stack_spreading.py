"""``JobQueueStacks``: spread many job types over stacks within CloudFormation's 500-resource limit."""

from __future__ import annotations

from typing import Any, Unpack

from aws_cdk import Stack
from constructs import Construct

from jobqueues.errors import JobQueueError
from jobqueues.job_queue import JobQueue
from jobqueues.props import JobQueueProps
from jobqueues.stack_limits import (
    RESOURCES_PER_JOB_QUEUE,
    STACK_RESOURCE_LIMIT_CONTEXT,
    job_types_that_fit,
    stack_resource_limit,
)

#: Default job types per stack: 60 x 8 = 480 resources, leaving room for a topic, keys and outputs.
DEFAULT_JOB_TYPES_PER_STACK = 60


class JobQueueStacks:
    """Creates ``<prefix>1``, ``<prefix>2``, ... stacks as job types are added.

    Example::

        stacks = JobQueueStacks(app, "Jobs", env=env)
        for name, p99 in catalogue.items():
            stacks.add(name, processing_p99=p99)

    :param scope: the app (or stage) the stacks belong to.
    :param prefix: stack id prefix; stack ``n`` is ``f"{prefix}{n}"``.
    :param job_types_per_stack: at most this many job types per stack, within the resource limit
        (``@aws-cdk/core:stackResourceLimit``, default 500). Default: :data:`DEFAULT_JOB_TYPES_PER_STACK`, or what
        fits under a lower limit.
    :param stack_props: keyword arguments passed to every ``Stack`` (``env``, ``tags``...).
    """

    def __init__(
        self,
        scope: Construct,
        prefix: str,
        *,
        job_types_per_stack: int | None = None,
        **stack_props: Any,
    ) -> None:
        resource_limit = stack_resource_limit(scope)
        fits = job_types_that_fit(resource_limit) if resource_limit else DEFAULT_JOB_TYPES_PER_STACK
        if job_types_per_stack is None:
            job_types_per_stack = min(DEFAULT_JOB_TYPES_PER_STACK, fits)
        if isinstance(job_types_per_stack, bool) or not isinstance(job_types_per_stack, int):
            raise JobQueueError(
                f"job_types_per_stack={job_types_per_stack!r} is not a whole number: pass an int, e.g. 64"
            )
        if resource_limit and not 1 <= job_types_per_stack <= fits:
            raise JobQueueError(
                f"job_types_per_stack must be between 1 and {fits} ({RESOURCES_PER_JOB_QUEUE} resources each, "
                f"{resource_limit} per stack by {STACK_RESOURCE_LIMIT_CONTEXT}); got {job_types_per_stack}"
            )
        self._scope = scope
        self._prefix = prefix
        self._per_stack = job_types_per_stack
        self._stack_props = stack_props
        self._in_current = 0
        #: The stacks created so far, in order.
        self.stacks: list[Stack] = []
        #: Every job queue added, by job type.
        self.job_queues: dict[str, JobQueue] = {}

    def add(self, job_type: str, **job_queue_props: Unpack[JobQueueProps]) -> JobQueue:
        """Declare a job type (same keyword arguments as :class:`JobQueue`) in the current stack."""
        if not self.stacks or self._in_current == self._per_stack:
            self.stacks.append(Stack(self._scope, f"{self._prefix}{len(self.stacks) + 1}", **self._stack_props))
            self._in_current = 0
        job_queue = JobQueue(self.stacks[-1], job_type, **job_queue_props)
        self._in_current += 1
        self.job_queues[job_type] = job_queue
        return job_queue
