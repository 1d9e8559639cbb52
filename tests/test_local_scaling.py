"""``jobqueues local up``'s scaling of local ECS workers (jobqueues.emulator.consumers.scaler): a pure function of the
queue depth, the running workers and the time passed in, so these tests need no clock and no emulator."""

from __future__ import annotations

import pytest

from jobqueues.emulator.consumers.scaler import QueueDepth, ScalingPolicy, ScalingState, decide, wanted

POLICY = ScalingPolicy(min_tasks=0, max_tasks=3, target_backlog_per_task=2, scale_in_after_s=30)


def run(depths: list[tuple[float, int, int]], policy: ScalingPolicy = POLICY) -> list[int]:
    """Worker counts after each (time, visible, in flight), starting from none, as the runner applies them."""
    state, running, counts = ScalingState(), 0, []
    for now, visible, in_flight in depths:
        running, state = decide(policy, state, QueueDepth(visible, in_flight), running, now)
        counts.append(running)
    return counts


def test_none_while_the_queue_is_empty() -> None:
    assert run([(0, 0, 0), (10, 0, 0), (100, 0, 0)]) == [0, 0, 0]


def test_one_message_starts_one_worker() -> None:
    assert run([(0, 0, 0), (1, 1, 0)]) == [0, 1]


@pytest.mark.parametrize(
    ("visible", "in_flight", "expected"),
    [(1, 0, 1), (2, 0, 1), (3, 0, 2), (0, 4, 2), (2, 3, 3), (12, 0, 3), (1000, 50, 3)],
)
def test_backlog_per_task_within_max_tasks(visible: int, in_flight: int, expected: int) -> None:
    """ceil((visible + in flight) / target_backlog_per_task), capped at max_tasks."""
    assert wanted(POLICY, QueueDepth(visible, in_flight)) == expected


def test_min_tasks_run_on_an_empty_queue() -> None:
    policy = ScalingPolicy(min_tasks=2, max_tasks=5, target_backlog_per_task=10)
    assert run([(0, 0, 0), (1, 0, 0)], policy) == [2, 2]
    assert wanted(policy, QueueDepth(100, 0)) == 5


def test_in_flight_work_keeps_workers() -> None:
    """Visible drops to 0 while every message is worked on: the workers stay (in flight counts)."""
    assert run([(0, 6, 0), (1, 0, 6), (100, 0, 6)]) == [3, 3, 3]


def test_scale_in_only_after_the_idle_period() -> None:
    counts = run([(0, 6, 0), (5, 0, 0), (20, 0, 0), (34, 0, 0), (35, 0, 0), (36, 0, 0)])
    assert counts == [3, 3, 3, 3, 0, 0]  # fewer asked for from t=5: stopped at t=35, 30 s later


def test_new_backlog_restarts_the_idle_period() -> None:
    counts = run([(0, 6, 0), (5, 0, 0), (30, 5, 0), (31, 0, 0), (60, 0, 0), (61, 0, 0)])
    assert counts == [3, 3, 3, 3, 3, 0]  # the backlog at t=30 wanted 3 again: the period restarts at t=31


def test_partial_scale_in() -> None:
    assert run([(0, 6, 0), (1, 2, 0), (31, 2, 0)]) == [3, 3, 1]


def test_scale_out_is_immediate_and_respawns_after_a_kill() -> None:
    """A killed worker leaves fewer running than the backlog wants: the next decision starts one again."""
    state = ScalingState()
    count, state = decide(POLICY, state, QueueDepth(6, 0), 0, now=0)
    assert count == 3
    count, state = decide(POLICY, state, QueueDepth(0, 6), 2, now=1)  # one of the three was killed
    assert count == 3


def test_zero_scale_in_delay_stops_at_once() -> None:
    policy = ScalingPolicy(min_tasks=0, max_tasks=3, target_backlog_per_task=2, scale_in_after_s=0)
    assert run([(0, 6, 0), (1, 0, 0)], policy) == [3, 0]
