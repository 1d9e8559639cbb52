"""Where jobqueues keeps what it learns while an app is built: on the construct tree, never in a module's globals.

- :class:`AppRegistry`, a child of the app (the tree's root), holds the job types and queue names the app declares
  (:class:`jobqueues.names.NameRegistry`): two apps in one process never see each other's.
- :class:`StackRegistry`, a child of each stack that holds a job queue or a consumer binding: the stack's facts,
  its resource budget, the context values read of it, and the ``Duration`` objects its constructs share.

Both are plain constructs (nothing in the template), found by their id, :data:`REGISTRY_ID`, which is reserved.
Each lookup in the tree is a round-trip to the CDK's Node kernel, so a construct of jobqueues
(:class:`RegisteredConstruct`) finds its stack's registry once, when it is created, and keeps it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import jsii
from aws_cdk import CfnElement, Duration, Stack, Stage
from constructs import Construct, IConstruct, IValidation

from jobqueues.logical_ids import logical_id
from jobqueues.names import NameRegistry, StackFacts
from jobqueues.stack_limits import ResourceBudget

#: The id of the registries, in the app and in each stack.
REGISTRY_ID = "JobQueuesRegistry"


class AppRegistry(Construct):
    """The registry of one app: the names its job types claim. A child of the tree's root."""

    def __init__(self, root: Construct) -> None:
        super().__init__(root, REGISTRY_ID)
        #: The job types and queue names declared in the app.
        self.names = NameRegistry()

    @staticmethod
    def of(root: IConstruct) -> AppRegistry:
        """The registry of the app whose root is ``root``, created on first use."""
        found = root.node.try_find_child(REGISTRY_ID)
        return found if isinstance(found, AppRegistry) else AppRegistry(cast(Construct, root))


class StackRegistry(Construct):
    """The registry of one stack. Its facts are read once, as it is created.

    :param stack: the stack it belongs to (its parent).
    """

    def __init__(self, stack: Stack) -> None:
        super().__init__(stack, REGISTRY_ID)
        #: The stack.
        self.stack = stack
        stage = Stage.of(stack)
        #: What the name checks and messages need of the stack.
        self.facts = StackFacts(
            name=stack.stack_name,
            stage_path=stage.node.path if stage is not None else "",
            account=stack.account,
            region=stack.region,
        )
        #: The names of the app the stack is in.
        self.names = AppRegistry.of(stack.node.root).names
        #: The stack's construct path (``Dev/Jobs`` inside a Stage).
        self.path: str = stack.node.path
        # Whether the kernel allocates logical ids as jobqueues.logical_ids computes them (asked once).
        self._kernel_agrees: bool | None = None
        self._budget: ResourceBudget | None = None
        #: The fleet view (a :class:`jobqueues.fleet_dashboard.FleetDashboard`), created with the first job type.
        self.fleet: Construct | None = None
        self._durations: dict[tuple[str, int], Duration] = {}
        self._context: dict[str, Any] = {}
        self._before_render: list[Callable[[], None]] = []
        #: What a module of jobqueues finds or makes once per stack, under a key of its own (the ``sqslease`` layer,
        #: the shared cluster): a tree lookup is two round trips to the kernel.
        self.cache: dict[Any, Any] = {}

    @property
    def budget(self) -> ResourceBudget:
        """The stack's resource budget, created (with its validation on the stack) when a job type is counted."""
        if self._budget is None:
            self._budget = ResourceBudget(self.stack)
        return self._budget

    def count_job_type(self) -> None:
        """Record one more job type in the stack; its resources are counted from the tree at validation."""
        self.budget.job_types += 1

    def seconds(self, seconds: float) -> Duration:
        """A ``Duration`` of whole seconds, rounded up (SQS takes integers), shared per value: a ``Duration`` is
        immutable, and each new one costs a round-trip to the CDK's Node kernel."""
        return self._duration("seconds", math.ceil(seconds))

    def minutes(self, minutes: int) -> Duration:
        """A ``Duration`` of ``minutes``, shared per value."""
        return self._duration("minutes", minutes)

    def _duration(self, unit: str, amount: int) -> Duration:
        duration = self._durations.get((unit, amount))
        if duration is None:
            duration = self._durations[(unit, amount)] = getattr(Duration, unit)(amount)
        return duration

    def logical_id(self, components: list[str] | None, resource: Callable[[], CfnElement]) -> str:
        """The logical id of ``resource()`` (a resource of this stack) whose path below the stack is ``components``:
        computed in Python (:mod:`jobqueues.logical_ids`) once the kernel's first answer in this stack agreed, else
        the kernel's (a stack that allocates or renames ids its own way; ``components`` ``None``: unknown)."""
        if components is not None:
            computed = logical_id(components)
            if self._kernel_agrees is None:
                self._kernel_agrees = self.stack.get_logical_id(resource()) == computed
            if self._kernel_agrees:
                return computed
        return self.stack.get_logical_id(resource())

    def before_render(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` at synth once the app's dependencies are on its resources (after the aspects and the
        CDK's ``prepareApp``) and before the templates are rendered: one validation for the whole stack, a callback
        from the kernel per synth instead of a token resolved in each resource."""
        if not self._before_render:
            self.node.add_validation(_BeforeRender(self._before_render))
        self._before_render.append(callback)

    def context(self, key: str) -> Any:
        """The stack's context value ``key``, read once (each read is a round-trip to jsii)."""
        if key not in self._context:
            self._context[key] = self.stack.node.try_get_context(key)
        return self._context[key]


@jsii.implements(IValidation)
class _BeforeRender:
    """The stack's :meth:`StackRegistry.before_render` callbacks, as the one validation that runs them."""

    def __init__(self, callbacks: list[Callable[[], None]]) -> None:
        self._callbacks = callbacks

    def validate(self) -> list[str]:
        for callback in self._callbacks:
            callback()
        return []


class RegisteredConstruct(Construct):
    """A construct of jobqueues: it finds its stack's registry when it is created, and keeps it, so that the
    constructs inside it find it without a round-trip (:func:`registry_of`, :func:`stack_of`)."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self._registry = registry_of(scope)
        # Its path below its stack, known without asking the kernel when its scope is the stack or one of these.
        self._below_stack: list[str] | None = (
            [id]
            if isinstance(scope, Stack)
            else [*scope._below_stack, id]
            if isinstance(scope, RegisteredConstruct) and scope._below_stack is not None
            else None
        )

    def path_below_stack(self, *children: str) -> list[str] | None:
        """The ids from below its stack down to its descendant ``children`` (``None``: not known in Python)."""
        return None if self._below_stack is None else [*self._below_stack, *children]

    @property
    def construct_path(self) -> str:
        """``node.path``, without a round-trip when its path below its stack is known."""
        if self._below_stack is None:
            return self.node.path
        return "/".join([self._registry.path, *self._below_stack])


def registry_of(scope: IConstruct) -> StackRegistry:
    """The registry of ``scope``'s stack, created on first use."""
    if isinstance(scope, RegisteredConstruct):
        return scope._registry
    stack = stack_of(scope)
    # Kept on the stack's Python object too: the tree lookup is two round-trips per job type.
    found = getattr(stack, "_jobqueues_registry", None) or stack.node.try_find_child(REGISTRY_ID)
    if not isinstance(found, StackRegistry):
        found = StackRegistry(stack)
    stack._jobqueues_registry = found  # type: ignore[attr-defined]
    return found


def stack_of(scope: IConstruct) -> Stack:
    """``Stack.of(scope)``, without the round-trip to the CDK's Node kernel for a stack or a construct of jobqueues."""
    if isinstance(scope, Stack):
        return scope
    if isinstance(scope, RegisteredConstruct):
        return scope._registry.stack
    return Stack.of(scope)


def one_minute(scope: IConstruct) -> Duration:
    """The one-minute ``Duration`` of ``scope``'s stack: the period of a queue's alarms and metrics."""
    return registry_of(scope).minutes(1)
