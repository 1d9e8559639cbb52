"""A Lambda invocation's renewal of its records' leases as it starts (lease extension on), before any record runs;
see :mod:`sqslease.lambda_adapter`.

The usual invocation (at most 10 records: one request) sends its ChangeMessageVisibilityBatch straight from its
records' receipt handles. When SQS extends every entry, its leases are made renewed (their deadline from the request,
one extension each), and filed in a lease table with a heartbeat only if one of them would come due before the
invocation ends (:func:`heartbeat_needed`): no table, heartbeat, tick or round for a ``LambdaJob``'s invocation, whose
lease outlasts the function. Any other answer (an entry refused, the request failed) is handed to a heartbeat round as
the answer to its first request (:meth:`~sqslease.heartbeat_round.HeartbeatRounds.answered_round`): retried, lost or
reported fatal exactly as the heartbeat's own rounds do. More than 10 records, idempotency on (its records move with
their leases), debug logging (the round's lines) or a lease near ``max_total_lease`` take the heartbeat's own tick.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqslease.heartbeat import Heartbeat
from sqslease.heartbeat_round import Answer, allowed_visibility
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.lease import Lease
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import FatalSqsError
from sqslease.rules import SQS_MAX_BATCH_ENTRIES
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

#: The Ids of a request's first ``n`` entries, by ``n``.
_IDS = [frozenset(str(i) for i in range(n)) for n in range(SQS_MAX_BATCH_ENTRIES + 1)]
#: The lease table, its leases and its heartbeat (None: no table of the invocation's own, nothing heartbeats).
Renewed = tuple[LeaseScheduler, list[Lease], Heartbeat | None]


def renew_at_start(
    handles: list[str],
    received_at: float,
    first_lease: float,
    ends_at: float | None,
    settings: LeaseSettings,
    sqs: Any,
    queue_url: str,
    on_fatal: Callable[[FatalSqsError], None],
    idempotency: IdempotencyGate | None = None,
) -> Renewed:
    """Renew the leases of the receipt handles ``handles`` (received at ``received_at``, their lease ``first_lease``
    seconds from then as far as we know), every round over (renewed or lost) when it returns, and start a heartbeat
    if one would come due before ``ends_at`` (monotonic seconds; None: unknown)."""
    made_with = (settings, sqs, queue_url, on_fatal)
    now = time.monotonic()
    if (
        len(handles) > SQS_MAX_BATCH_ENTRIES
        or idempotency is not None
        or logger.isEnabledFor(logging.DEBUG)
        or settings.max_total_lease - (now - received_at) < 1  # the tick stops extending such a lease
    ):
        scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        leases = scheduler.add_all(handles, received_at, first_lease)
        heartbeat = _heartbeat(scheduler, *made_with, idempotency)
        tick = heartbeat.tick(first_inline=True)
        for renewal in tick.rounds:  # every round over (its leases renewed, or lost) before a record starts
            renewal.result()
        if logger.isEnabledFor(logging.DEBUG):  # the rounds' stats summed for the line only
            renewed = tick.wait()
            logger.debug("renewed %d of %d leases (%d requests)", renewed.extended, len(handles), renewed.requests)
        return _started_if_needed(scheduler, leases, heartbeat, ends_at)
    vt = allowed_visibility(settings, received_at, now)  # one receive: one received_at, one answer for all
    entries = [{"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": vt} for i, handle in enumerate(handles)]
    try:
        response: dict[str, Any] | Exception = sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
    except Exception as error:  # classified by the round, as its own request's failure
        response = error
    if isinstance(response, dict) and _all_extended(response, len(entries)):
        leases = [Lease(handle, received_at, now + vt) for handle in handles]
        for lease in leases:
            lease.extensions = 1
        if not heartbeat_needed(leases, settings.extension_threshold, ends_at):
            return untracked_leases(), leases, None
    # a heartbeat's table: its leases taken due (EXTENDING, every one: due within renew_within), then answered
    scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
    leases = scheduler.add_all(handles, received_at, first_lease)
    scheduler.take_due(now)
    heartbeat = _heartbeat(scheduler, *made_with)
    heartbeat.answered_round(leases, Answer(now, [vt] * len(leases), response))
    return _started_if_needed(scheduler, leases, heartbeat, ends_at)


def _all_extended(response: dict[str, Any], entries: int) -> bool:
    """Whether SQS extended each of the ``entries`` (Ids ``0`` to ``entries - 1``) and refused none."""
    if response.get("Failed"):
        return False
    successful = response.get("Successful", [])
    return len(successful) == entries and {s["Id"] for s in successful} == _IDS[entries]


def _started_if_needed(
    scheduler: LeaseScheduler, leases: list[Lease], heartbeat: Heartbeat, ends_at: float | None
) -> Renewed:
    if heartbeat_needed(leases, scheduler.extension_threshold, ends_at):
        heartbeat.start()
    return scheduler, leases, heartbeat


def _heartbeat(
    scheduler: LeaseScheduler,
    settings: LeaseSettings,
    sqs: Any,
    queue_url: str,
    on_fatal: Callable[[FatalSqsError], None],
    idempotency: IdempotencyGate | None = None,
) -> Heartbeat:
    return Heartbeat(
        sqs,
        queue_url,
        scheduler,
        settings,
        on_fatal=on_fatal,
        idempotency=idempotency,
        requests=renewal_requests(settings.max_requests_in_flight),
    )


@functools.cache
def untracked_leases() -> LeaseScheduler:
    """The lease table the settles of this process's invocations take their lock from when nothing heartbeats their
    leases (lease extension off, or renewed past the invocation's end), made once: their leases are never filed in
    it (nothing takes them due), so it stays empty, and a settle finds its lease in no table
    (:meth:`~sqslease.lease_table.LeaseScheduler.finish_all` pops none). A table, its lock and its condition an
    invocation were a tenth of what an invocation cost besides its records."""
    return LeaseScheduler()


@functools.cache
def renewal_requests(max_requests_in_flight: int) -> threading.BoundedSemaphore:
    """The slots of the requests in flight of this process's invocations' heartbeats, made once, not per invocation
    (a semaphore costs about as much as the rest of a heartbeat's objects): a process runs one invocation at a time,
    and an invocation's heartbeat is stopped, its rounds over, before it returns."""
    return threading.BoundedSemaphore(max_requests_in_flight)


def heartbeat_needed(leases: Iterable[Lease], extension_threshold: float, ends_at: float | None) -> bool:
    """Whether a lease would come due (within ``extension_threshold`` seconds of its deadline) before the invocation
    ends at ``ends_at`` (monotonic seconds; None: unknown). After the renewal at the start, a lease longer than the
    function's timeout never does: a ``LambdaJob``'s (timeout + 10 s), so its invocations start no heartbeat."""
    if ends_at is None:
        return True
    comes_due_by = ends_at + extension_threshold
    for lease in leases:  # a loop, not any() over a generator: asked every invocation with lease extension
        if lease.deadline < comes_due_by and not lease.lost:
            return True
    return False
