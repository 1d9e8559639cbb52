"""Which tenants of a queue are noisy: a pure rule on per-tenant figures (no Spark).

A tenant is a message group (``MessageGroupId``, what a fair queue's producers set; see docs/fair-queues.md). A
tenant is **noisy** when, compared with the *median of the other tenants* of its deployment:

- it sent at least :data:`NOISY_FACTOR` times as many messages, or
- it sent more messages than they did, and its p99 queue time is at least :data:`NOISY_FACTOR` times theirs and at
  least :data:`MIN_NOISY_QUEUE_MS`.

The median of the others, not their mean: one flooding tenant must not raise the bar for a second one. On a fair
queue SQS holds a flooding tenant's messages back so that the others' wait stays short, so its queue time is the
symptom even when its count is not 5 times theirs; on a queue that is not fair (or the local emulator, which does
not emulate the fairness) a few jobs sent after a flood wait behind it: a tenant that waits but sent no more than
the others is the victim, never the noisy one. The queue-time floor keeps milliseconds of noise (4 ms against
0.5 ms) from naming anyone. A deployment with one tenant has none noisy.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: How far above the other tenants' median a tenant's messages or p99 queue time must be for it to be noisy.
NOISY_FACTOR = 5.0
#: A p99 queue time below this (milliseconds) never makes a tenant noisy.
MIN_NOISY_QUEUE_MS = 1000.0


@dataclass(frozen=True)
class TenantFigures:
    """What the rule reads of one tenant: its messages (distinct ``MessageId`` values, not runs: retries are no
    flood) and its p99 queue time in ms (``None``: its lines carry no ``QueueTime``)."""

    messages: int
    queue_time_p99_ms: float | None = None


def noisy_tenants(
    tenants: Mapping[str, TenantFigures], factor: float = NOISY_FACTOR, min_queue_ms: float = MIN_NOISY_QUEUE_MS
) -> list[str]:
    """The noisy tenants of one deployment (see the module), the busiest first (then by name).

    :param factor: how many times the other tenants' median counts as far above it. Default :data:`NOISY_FACTOR`.
    :param min_queue_ms: the p99 queue time (ms) below which no tenant is noisy by its wait. Default
        :data:`MIN_NOISY_QUEUE_MS`.
    """
    if factor <= 1:
        raise ValueError(f"factor must be above 1, got {factor}")
    counts = sorted(figures.messages for figures in tenants.values())
    waits = sorted(f.queue_time_p99_ms for f in tenants.values() if f.queue_time_p99_ms is not None)
    noisy = []
    for name, figures in tenants.items():
        others_count = median_without(counts, figures.messages)
        wait = figures.queue_time_p99_ms
        others_wait = median_without(waits, wait) if wait is not None else None
        busier = others_count is not None and figures.messages > others_count
        if (others_count is not None and figures.messages >= factor * others_count) or (
            busier and wait is not None and others_wait is not None and wait >= max(min_queue_ms, factor * others_wait)
        ):
            noisy.append(name)
    return sorted(noisy, key=lambda name: (-tenants[name].messages, name))


def median_without(ordered: Sequence[float], value: float) -> float | None:
    """The median of ``ordered`` (sorted ascending) with one occurrence of ``value`` taken out; ``None`` when
    nothing is left. O(log n), so that the rule stays O(n log n) over thousands of tenants."""
    size = len(ordered) - 1
    if size <= 0:
        return None
    removed = _index(ordered, value)

    def at(position: int) -> float:  # the position-th value of the list without the removed one
        return ordered[position if position < removed else position + 1]

    middle = size // 2
    return at(middle) if size % 2 else (at(middle - 1) + at(middle)) / 2


def _index(ordered: Sequence[float], value: float) -> int:
    """The index of one occurrence of ``value`` in ``ordered``; ``ValueError`` when it is not there."""
    index = bisect_left(ordered, value)
    if index == len(ordered) or ordered[index] != value:
        raise ValueError(f"{value} is not among the values")
    return index
