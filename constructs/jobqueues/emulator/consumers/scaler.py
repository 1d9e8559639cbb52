"""How many local workers an ECS job type runs: the deployed scaling policy, as a pure function.

The deployed service scales on backlog per task (:mod:`jobqueues.scaling`): target tracking on
``(visible + in flight) / running tasks`` towards ``target_backlog_per_task``, plus a step policy that starts the
first task when a message is visible and none runs. Locally, without CloudWatch's one-minute periods:

- **scale out** at once to ``ceil((visible + in flight) / target_backlog_per_task)`` workers, at least 1 when a
  message is visible, within ``min_tasks``..``max_tasks``;
- **scale in** to that count only after the backlog has asked for fewer workers than are running for
  ``scale_in_after_s`` seconds in a row (default :data:`SCALE_IN_AFTER_S`; the deployed policy's scale-in
  cooldown is 300 s). A worker told to stop gets SIGTERM and drains: it finishes what it runs.

:func:`decide` takes the time as an argument, so tests drive it with plain numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: Seconds the backlog must ask for fewer workers before they are stopped (``--scale-in-after``).
SCALE_IN_AFTER_S = 30.0


@dataclass(frozen=True)
class ScalingPolicy:
    """A job type's deployed bounds (the discovery's ``EcsConsumer``) and the local scale-in delay (seconds)."""

    min_tasks: int = 0
    max_tasks: int = 1
    target_backlog_per_task: float = 1.0
    scale_in_after_s: float = SCALE_IN_AFTER_S


@dataclass(frozen=True)
class QueueDepth:
    """A queue's ``ApproximateNumberOfMessages`` (visible) and ``...NotVisible`` (in flight)."""

    visible: int
    in_flight: int

    @property
    def backlog(self) -> int:
        return self.visible + self.in_flight


@dataclass(frozen=True)
class ScalingState:
    """What :func:`decide` remembers between calls: since when (seconds, the caller's clock) the backlog has
    asked for fewer workers than run; ``None`` while it has not."""

    fewer_since: float | None = None


def wanted(policy: ScalingPolicy, depth: QueueDepth) -> int:
    """The workers the backlog asks for, within the policy's bounds (at least 1 while a message is visible)."""
    target = max(policy.target_backlog_per_task, 1e-9)
    count = math.ceil(depth.backlog / target)
    if depth.visible > 0:
        count = max(count, 1)  # the deployed step policy: a visible message starts the first task
    return max(policy.min_tasks, min(policy.max_tasks, count))


def decide(
    policy: ScalingPolicy, state: ScalingState, depth: QueueDepth, running: int, now: float
) -> tuple[int, ScalingState]:
    """The number of workers to run now, given ``running`` (live, not draining), and the state for the next call.

    More workers than run: at once. Fewer: once the backlog has asked for fewer for ``scale_in_after_s``.
    """
    count = wanted(policy, depth)
    if count >= running:
        return count, replace(state, fewer_since=None)
    since = state.fewer_since if state.fewer_since is not None else now
    if now - since >= policy.scale_in_after_s:
        return count, ScalingState(fewer_since=None)
    return running, ScalingState(fewer_since=since)
