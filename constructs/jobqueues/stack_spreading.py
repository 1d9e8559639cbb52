"""``JobQueueStacks``: spread many job types over stacks within CloudFormation's 500-resource limit."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from jobqueues.job_queue import CLOUDFORMATION_MAX_RESOURCES, RESOURCES_PER_JOB_QUEUE, JobQueue

#: Default job types per stack: 64 x 7 = 448 resources, leaving room for a topic, keys and outputs.
DEFAULT_JOB_TYPES_PER_STACK = 64


class JobQueueStacks:
    """Creates ``<prefix>1``, ``<prefix>2``, ... stacks as job types are added.

    Example::

        stacks = JobQueueStacks(app, "Jobs", env=env)
        for name, p99 in catalogue.items():
            stacks.add(name, processing_p99=p99)

    :param scope: the app (or stage) the stacks belong to.
    :param prefix: stack id prefix; stack ``n`` is ``f"{prefix}{n}"``.
    :param job_types_per_stack: at most this many job types per stack. Default 64.
    :param stack_props: keyword arguments passed to every ``Stack`` (``env``, ``tags``...).
    """

    def __init__(
        self,
        scope: Construct,
        prefix: str,
        *,
        job_types_per_stack: int = DEFAULT_JOB_TYPES_PER_STACK,
        **stack_props: Any,
    ) -> None:
        limit = CLOUDFORMATION_MAX_RESOURCES // RESOURCES_PER_JOB_QUEUE
        if not 1 <= job_types_per_stack <= limit:
            raise ValueError(
                f"job_types_per_stack must be between 1 and {limit} "
                f"({RESOURCES_PER_JOB_QUEUE} resources each, {CLOUDFORMATION_MAX_RESOURCES} per stack); "
                f"got {job_types_per_stack}"
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

    def add(self, job_type: str, **job_queue_props: Any) -> JobQueue:
        """Declare a job type (same keyword arguments as :class:`JobQueue`) in the current stack."""
        if not self.stacks or self._in_current == self._per_stack:
            self.stacks.append(Stack(self._scope, f"{self._prefix}{len(self.stacks) + 1}", **self._stack_props))
            self._in_current = 0
        job_queue = JobQueue(self.stacks[-1], job_type, **job_queue_props)
        self._in_current += 1
        self.job_queues[job_type] = job_queue
        return job_queue
