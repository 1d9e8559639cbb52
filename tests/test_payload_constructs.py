"""A job type's payload bucket (``payload_bucket``, ``delete_payloads``): its expiry derived from the queues'
retention, the declarations refused at synth, the bucket and the grants in the template, cdk-nag and cfn-lint clean."""

from __future__ import annotations

import pytest

from jobqueues.payload_rules import payload_expiration_days, payload_problems

DAY = 86_400


@pytest.mark.parametrize(
    ("retention_s", "dlq_retention_s", "days"),
    [
        (4 * DAY, 14 * DAY, 19),  # the defaults: a pointer dead-lettered on its last day lives 18 days
        (60, 60, 2),  # a minute each: a day, plus the margin
        (DAY + 1, DAY, 4),  # whole days, rounded up
        (None, 4 * DAY, 19),  # a token counts as SQS's longest, 14 days
        (None, None, 29),
    ],
)
def test_objects_expire_a_day_after_the_longest_a_pointer_can_live_in_the_queues(
    retention_s: float | None, dlq_retention_s: float | None, days: int
) -> None:
    assert payload_expiration_days(retention_s, dlq_retention_s) == days


def test_delete_payloads_without_a_bucket_does_nothing_and_is_refused() -> None:
    (problem,) = payload_problems(bucket=False, delete_payloads=False, fifo=False, content_based_deduplication=False)
    assert problem.startswith("delete_payloads=False does nothing without payload_bucket: pass payload_bucket=True")


def test_a_bucket_on_a_content_deduplicated_fifo_queue_is_refused() -> None:
    (problem,) = payload_problems(bucket=True, delete_payloads=None, fifo=True, content_based_deduplication=True)
    assert "payload_bucket with content_based_deduplication=True" in problem
    assert "drop content_based_deduplication" in problem


@pytest.mark.parametrize("delete_payloads", [None, True, False])
def test_a_bucket_with_or_without_deletion_is_fine(delete_payloads: bool | None) -> None:
    assert (
        payload_problems(bucket=True, delete_payloads=delete_payloads, fifo=True, content_based_deduplication=False)
        == []
    )
