"""The noisy-tenant rule (``jobstats.noisy``), pure: a tenant whose messages or p99 queue time are far above the
median of the other tenants of its deployment."""

from __future__ import annotations

import random
import statistics

import pytest

from jobstats.noisy import MIN_NOISY_QUEUE_MS, NOISY_FACTOR, TenantFigures, median_without, noisy_tenants


def tenants(**figures: tuple[int, float | None]) -> dict[str, TenantFigures]:
    return {name: TenantFigures(messages, wait) for name, (messages, wait) in figures.items()}


def test_a_tenant_that_floods_the_queue_is_noisy_and_the_quiet_ones_are_not() -> None:
    # GIVEN one tenant with 500 messages and three with 10 to 30 (no queue times)
    figures = tenants(flood=(500, None), a=(10, None), b=(20, None), c=(30, None))
    # THEN the flood is noisy (500 >= 5 x 20, the others' median), none of the others
    assert noisy_tenants(figures) == ["flood"]


def test_the_bar_is_the_factor_times_the_others_median_exactly() -> None:
    at_bar = int(NOISY_FACTOR * 20)
    assert noisy_tenants(tenants(t=(at_bar, None), a=(20, None), b=(20, None))) == ["t"]
    assert noisy_tenants(tenants(t=(at_bar - 1, None), a=(20, None), b=(20, None))) == []


def test_two_floods_are_both_named_busiest_first() -> None:
    # the median of the others, not their mean: the first flood does not hide the second
    figures = tenants(big=(900, None), bigger=(1200, None), a=(10, None), b=(12, None), c=(11, None))
    assert noisy_tenants(figures) == ["bigger", "big"]


def test_a_tenant_kept_waiting_is_noisy_by_its_queue_time() -> None:
    # GIVEN a fair queue: SQS holds the flood's messages back, so the flood waits, the quiet tenants do not
    figures = tenants(flood=(40, 60_000.0), a=(30, 200.0), b=(25, 300.0), c=(35, 250.0))
    # THEN the flood is named by its wait although its count is not 5x the others'
    assert noisy_tenants(figures) == ["flood"]


def test_a_tenant_that_waits_behind_a_flood_is_its_victim_not_noisy() -> None:
    # GIVEN a queue that is not fair (or the emulator): a few jobs sent after a flood wait behind it
    figures = tenants(flood=(300, 900.0), late=(2, 60_000.0), a=(2, 500.0), b=(2, 400.0))
    # THEN the late tenant's long wait does not make it noisy: it sent no more than the others
    assert noisy_tenants(figures) == ["flood"]


def test_a_few_milliseconds_of_wait_name_nobody() -> None:
    # 40 ms is 10x the others' 4 ms but below the floor: queue-time noise, not a noisy tenant
    assert noisy_tenants(tenants(t=(11, 40.0), a=(10, 4.0), b=(10, 4.0))) == []
    floor = MIN_NOISY_QUEUE_MS
    assert noisy_tenants(tenants(t=(11, floor), a=(10, 4.0), b=(10, 4.0))) == ["t"]


def test_one_tenant_or_none_is_never_noisy() -> None:
    assert noisy_tenants(tenants(only=(10_000, 99_000.0))) == []
    assert noisy_tenants({}) == []


def test_tenants_without_queue_times_are_judged_by_their_messages_only() -> None:
    figures = tenants(t=(10, None), a=(10, 10.0), b=(10, 10.0))
    assert noisy_tenants(figures) == []
    assert noisy_tenants(tenants(t=(10, 90_000.0), a=(10, None))) == []  # no other wait to compare with


def test_the_factor_must_be_above_one() -> None:
    with pytest.raises(ValueError, match="factor must be above 1"):
        noisy_tenants(tenants(a=(1, None)), factor=1)


def test_the_median_without_one_value_is_the_median_of_the_rest() -> None:
    # GIVEN lists of many sizes, with repeats (seeded: the same lists every run)
    rng = random.Random(27)
    for size in range(1, 40):
        values = sorted(rng.choice([1.0, 2.0, 3.0, 5.0, 8.0, rng.uniform(0, 100)]) for _ in range(size))
        for value in set(values):
            rest = list(values)
            rest.remove(value)
            # THEN removing any one value gives statistics.median of the rest (None when nothing is left)
            assert median_without(values, value) == (statistics.median(rest) if rest else None)
    with pytest.raises(ValueError, match="not among"):
        median_without([1.0, 2.0], 3.0)
