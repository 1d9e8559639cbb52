"""The lease table on its own: due selection, batch filling and the one-state-per-handle protocol."""

from __future__ import annotations

import math
import threading

import pytest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError
from support.sqs_errors import client_error
from support.waiting import wait_for

from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import EntryOutcome, backoff_delay, classify_error, may_have_landed


def scheduler_with(deadlines: list[float], threshold: float = 5, pull_forward: float = 10) -> LeaseScheduler:
    scheduler = LeaseScheduler(threshold, pull_forward)
    for i, deadline in enumerate(deadlines):
        scheduler.add(f"h{i}", received_at=0, visibility_timeout=deadline)
    return scheduler


@pytest.mark.parametrize("due", [1, 9, 10, 11, 25, 100, 1001])
def test_due_leases_come_in_full_batches_of_ten(due: int) -> None:
    # `due` leases expire within the threshold, plenty more shortly after, and some far away.
    scheduler = scheduler_with([3] * due + [12] * 50 + [100] * 50)
    taken = scheduler.take_due(now=0)
    assert len(taken) == math.ceil(due / 10) * 10  # the last batch is filled by pulling leases forward
    assert all(lease.state is LeaseState.EXTENDING for lease in taken)
    assert sum(1 for lease in taken if lease.deadline == 3) == due  # every due lease is in


def test_nothing_far_away_is_pulled_forward() -> None:
    scheduler = scheduler_with([3] * 11 + [100] * 50)
    assert len(scheduler.take_due(now=0)) == 11


def test_nothing_due_takes_nothing() -> None:
    assert scheduler_with([12] * 20).take_due(now=0) == []


def test_extension_reschedules_from_the_send_time() -> None:
    scheduler = scheduler_with([3])
    (lease,) = scheduler.take_due(now=0)
    scheduler.extended(lease, sent_at=1.0, visibility_timeout=30)
    assert lease.state is LeaseState.ACTIVE and lease.deadline == 31 and lease.extensions == 1
    assert scheduler.take_due(now=10) == []
    assert scheduler.take_due(now=26) == [lease]


def test_settle_waits_for_an_extension_in_flight_and_no_extension_follows() -> None:
    scheduler = scheduler_with([3])
    (lease,) = scheduler.take_due(now=0)  # extension request "in flight"
    settled = []
    settler = threading.Thread(target=lambda: settled.append(scheduler.begin_settle(lease, timeout=60)))
    settler.start()
    assert wait_for(lambda: lease.state is LeaseState.SETTLE_WAITING, timeout_s=30)
    assert settled == []  # waiting for the request to finish (until it ends, or for the 60 s)
    scheduler.extended(lease, sent_at=0.5, visibility_timeout=30)
    settler.join()
    assert settled == [True] and lease.state is LeaseState.FINISHING
    # The completed extension did not put the lease back in the heap: nothing will extend it again.
    assert scheduler.take_due(now=1_000) == []
    scheduler.finish(lease, LeaseState.DELETED)
    assert len(scheduler) == 0 and lease.settled


def test_settle_of_an_active_lease_is_immediate_and_once() -> None:
    scheduler = scheduler_with([30])
    lease = scheduler.get("h0")
    assert scheduler.begin_settle(lease) is True
    assert scheduler.begin_settle(lease) is False  # a second settle never proceeds
    assert scheduler.take_due(now=1_000) == []


def test_settle_wait_timeout_hands_the_lease_back_to_the_heartbeat() -> None:
    scheduler = scheduler_with([3])
    (lease,) = scheduler.take_due(now=0)
    assert scheduler.begin_settle(lease, timeout=0.05) is False
    assert lease.state is LeaseState.EXTENDING
    scheduler.extended(lease, sent_at=0, visibility_timeout=30)
    assert lease.state is LeaseState.ACTIVE


def test_lost_lease_is_dropped_and_cannot_be_settled() -> None:
    scheduler = scheduler_with([3])
    (lease,) = scheduler.take_due(now=0)
    scheduler.lost(lease)
    assert lease.lost and len(scheduler) == 0
    assert scheduler.begin_settle(lease) is False


def test_retry_only_within_slack() -> None:
    scheduler = scheduler_with([3, 3])
    first, second = scheduler.take_due(now=0)
    assert scheduler.retry_later(first, now=1) is True and first.state is LeaseState.ACTIVE
    assert scheduler.retry_later(second, now=3.5) is False and second.lost
    assert scheduler.take_due(now=1) == [first]  # tried again on the next tick


def test_stop_extending_keeps_the_lease_but_never_extends_it() -> None:
    scheduler = scheduler_with([3])
    (lease,) = scheduler.take_due(now=0)
    scheduler.stop_extending(lease)
    assert lease.state is LeaseState.ACTIVE and scheduler.take_due(now=1_000) == []
    assert scheduler.begin_settle(lease) is True


@pytest.mark.parametrize(
    ("code", "message", "outcome"),
    [
        ("ReceiptHandleIsInvalid", "The input receipt handle is invalid.", EntryOutcome.LOST),
        (
            "InvalidParameterValue",
            "Value x for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
            EntryOutcome.LOST,
        ),
        (
            "InvalidParameterValue",
            "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]",
            EntryOutcome.LIMIT,
        ),
        ("RequestThrottled", "slow down", EntryOutcome.RETRY),
        ("InternalError", "", EntryOutcome.RETRY),
    ],
)
def test_error_classification(code: str, message: str, outcome: EntryOutcome) -> None:
    assert classify_error(code, message) is outcome


def test_a_request_may_have_landed_unless_sqs_refused_it_or_it_was_never_sent() -> None:
    url = "http://localhost:1/"
    assert not may_have_landed(client_error("throttle", "ChangeMessageVisibilityBatch"))  # 400: refused
    assert not may_have_landed(client_error("access_denied", "ChangeMessageVisibilityBatch"))
    assert not may_have_landed(ConnectTimeoutError(endpoint_url=url))
    assert not may_have_landed(EndpointConnectionError(endpoint_url=url))
    assert may_have_landed(client_error("error500", "ChangeMessageVisibilityBatch"))  # 5xx: may be applied
    assert may_have_landed(ReadTimeoutError(endpoint_url=url))
    assert may_have_landed(ConnectionResetError())


def test_backoff_grows_with_receive_count_and_is_capped() -> None:
    import random

    rng = random.Random(7)
    delays = [backoff_delay(n, base=2, cap=60, rng=rng) for n in range(1, 10)]
    assert 1 <= delays[0] <= 2
    assert all(d <= 60 for d in delays) and max(delays) >= 30
    assert backoff_delay(10_000, base=2, cap=10**9, rng=rng) <= 43_200
