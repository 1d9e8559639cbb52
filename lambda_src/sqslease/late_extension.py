"""What the heartbeat says of an extension sent late, or answered after its lease ran out, and why.

A tick on time leaves each due lease at least ``extension_threshold - heartbeat_interval`` seconds. A round of the
heartbeat thread's tick that sends its request with a lease holding less than half that warns (:func:`warn_if_late`).
An extension answered once its lease had run out may have landed after the end, when SQS may have handed the
message to another consumer, and SQS accepts the old receipt handle all the same: the round marks such a lease lost
(:func:`log_answered_late` says so). Each line names the likely cause: the heartbeat's threads did not get to run
(a handler keeping the GIL, or too little CPU).
"""

from __future__ import annotations

import logging

from sqslease.lease import Lease
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

#: What a late extension's log line says of its cause, and where to read more.
STARVED = (
    "The heartbeat did not get to run in time: a thread kept the GIL (a handler computing and writing often), or "
    'the process had too little CPU; see docs/sqslease.md, "How leases are kept"'
)


def handles(leases: list[Lease]) -> str:
    """The first three leases' receipt handles, shortened as every lease's log line shortens them."""
    return ", ".join(lease.receipt_handle[:16] for lease in leases[:3]) + (", ..." if len(leases) > 3 else "")


def warn_if_late(batch: list[Lease], sent_at: float, settings: LeaseSettings) -> None:
    """One WARNING if a lease of ``batch``, its request sent at ``sent_at`` (monotonic seconds), has less than half
    the least slack a tick on time leaves it."""
    on_time = settings.extension_threshold - settings.heartbeat_interval
    late = [lease for lease in batch if lease.deadline - sent_at < on_time / 2]
    if late:
        logger.warning(
            "heartbeat ran late: extending %d of %d leases (%s) with less than %.2f s left (the least %.3f s), "
            "where a tick on time leaves %.2f s. %s",
            len(late),
            len(batch),
            handles(late),
            on_time / 2,
            min(lease.deadline for lease in late) - sent_at,
            on_time,
            STARVED,
        )


def log_answered_late(lost: list[Lease], answered_at: float) -> None:
    """One ERROR for the leases marked lost because their extension was answered at ``answered_at`` (monotonic
    seconds), once they had run out."""
    logger.error(
        "extension of %d leases (%s) answered %.2f s after the first of them ran out: it may have landed too "
        "late, and the message be with another consumer; marked lost (not settled when its handler ends). %s",
        len(lost),
        handles(lost),
        answered_at - min(lease.deadline for lease in lost),
        STARVED,
    )
