"""CloudFormation's resources-per-stack limit, checked with a job-type-level fix.

The CDK checks the limit too, but its error counts resources; this one says how many job types fit and how to
spread them. Resources are counted from the construct tree when the app is validated, never by hand. The limit
is the CDK's own: context ``@aws-cdk/core:stackResourceLimit`` (default 500; 0 turns the check off, as in the
CDK).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jsii
from aws_cdk import CfnResource, Stack
from constructs import Construct, IValidation

STACK_RESOURCE_LIMIT_CONTEXT = "@aws-cdk/core:stackResourceLimit"
CLOUDFORMATION_MAX_RESOURCES = 500

#: What ``JobQueueStacks`` plans with before a job type exists: the resources of one ``JobQueue`` with all alarms
#: on (2 queues, 2 TLS-only queue policies, 4 alarms: ``max_queue_time`` adds the fourth); a test counts them from
#: the tree.
RESOURCES_PER_JOB_QUEUE = 8
#: Resources a stack with job types holds once, whatever their number: its fleet dashboard
#: (:mod:`jobqueues.fleet_dashboard`); a test counts it from the tree.
RESOURCES_PER_STACK = 1


def stack_resource_limit(scope: Construct) -> int:
    """The resource limit in force at ``scope``: its ``@aws-cdk/core:stackResourceLimit`` context, or 500."""
    value = scope.node.try_get_context(STACK_RESOURCE_LIMIT_CONTEXT)
    return CLOUDFORMATION_MAX_RESOURCES if value is None else int(value)


def job_types_that_fit(limit: int, resources_per_job_type: int = RESOURCES_PER_JOB_QUEUE) -> int:
    """How many job types of ``resources_per_job_type`` resources fit under ``limit``, beside the stack's own
    :data:`RESOURCES_PER_STACK`."""
    return (limit - RESOURCES_PER_STACK) // resources_per_job_type


class ResourceBudget:
    """Counts the job types of one stack; at validation, its resources from the construct tree. The stack's
    :class:`jobqueues.registry.StackRegistry` holds it."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.job_types = 0
        #: Other checks of the stack at synth, each returning its problems: run by the same validation, one callback
        #: from the kernel a stack (:func:`jobqueues.marker`'s).
        self.checks: list[Callable[[], list[str]]] = []
        stack.node.add_validation(_BudgetValidation(self))

    @property
    def resources(self) -> int:
        """The stack's CloudFormation resources, counted from its construct tree (one jsii call)."""
        return sum(1 for c in self.stack.node.find_all() if isinstance(c, CfnResource))

    def problems(self) -> list[str]:
        limit = stack_resource_limit(self.stack)
        if limit == 0 or not self.job_types:
            return []
        resources = self.resources
        if resources <= limit:
            return []
        per_job_type = math.ceil((resources - RESOURCES_PER_STACK) / self.job_types)
        return [
            f"stack {self.stack.stack_name} declares {self.job_types} job types = {resources} resources; "
            f"CloudFormation allows {limit} per stack ({STACK_RESOURCE_LIMIT_CONTEXT}). Spread the job types over "
            f"several stacks, at most {job_types_that_fit(limit, per_job_type)} per stack at {per_job_type} "
            "resources each (jobqueues.JobQueueStacks does it for you)"
        ]


@jsii.implements(IValidation)
class _BudgetValidation:
    def __init__(self, budget: ResourceBudget) -> None:
        self._budget = budget

    def validate(self) -> list[str]:
        return [*self._budget.problems(), *(problem for check in self._budget.checks for problem in check())]
