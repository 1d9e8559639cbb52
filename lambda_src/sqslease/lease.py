"""One received message's lease: its deadline, its state, and who settles it. No I/O.

A lease starts when the ReceiveMessage request was *sent* (conservative: SQS starts the visibility
timeout somewhere between send and response) and ends at ``deadline`` on the monotonic clock.

One state per receipt handle, moved by the lease table (:class:`sqslease.lease_table.LeaseScheduler`)::

    ACTIVE --take_due--> EXTENDING --extended/retry--> ACTIVE
       |                    |
       |                    +--begin_change--> SETTLE_WAITING --extension done--> FINISHING
       +--begin_change--> FINISHING --finish--> RELEASED
    ACTIVE or EXTENDING, its delete claimed (begin_delete) --finish--> DELETED
    any live state, or FINISHING --lost--> LOST

A lease is settled once (``settling``). A *delete* leaves the lease ACTIVE/EXTENDING, so the heartbeat
keeps it until SQS confirms the delete (an extension landing after a delete fails harmlessly). A
*visibility change* (release, backoff) takes the lease out of the heartbeat's hands first, so no late
extension overwrites it; it waits for an extension in flight without blocking anyone (``change_ready``).
"""

from __future__ import annotations

from enum import IntEnum


class LeaseState(IntEnum):
    ACTIVE = 0
    EXTENDING = 1
    SETTLE_WAITING = 2  # a settle waits for an extension request in flight
    FINISHING = 3
    DELETED = 4
    RELEASED = 5
    LOST = 6


#: The states in which the message is still held: not lost, and no release or delete has ended it.
LIVE_STATES = (LeaseState.ACTIVE, LeaseState.EXTENDING, LeaseState.SETTLE_WAITING)

NOT_SETTLING, DELETING, CHANGING = 0, 1, 2

#: :attr:`Lease.lost`'s state, looked up once: an enum member read through its class cost 0.05 us, and a record reads
#: ``lost`` three times (``bench/runtime_bench.py``).
_LOST = LeaseState.LOST
#: A new lease's state, looked up once for the same reason (an invocation builds a lease a record).
_ACTIVE = LeaseState.ACTIVE


class Lease:
    """One received message's hold on its visibility timeout."""

    __slots__ = ("deadline", "extending_to", "extensions", "receipt_handle", "received_at", "settling", "state")

    def __init__(self, receipt_handle: str, received_at: float, deadline: float) -> None:
        self.receipt_handle = receipt_handle
        self.received_at = received_at  # monotonic time the ReceiveMessage request was sent
        self.deadline = deadline  # monotonic time the lease runs out, as far as we know
        self.extending_to = deadline  # with idempotency: the end the heartbeat's latest extension asks for
        self.state = _ACTIVE
        self.extensions = 0
        self.settling = NOT_SETTLING  # DELETING or CHANGING once a settle owns the lease

    @property
    def deleting(self) -> bool:
        """A delete is queued or in flight; the heartbeat keeps the lease until SQS confirms it."""
        return self.settling == DELETING and self.state in LIVE_STATES

    @property
    def lost(self) -> bool:
        """True when SQS no longer honours this receipt handle; the message may be redelivered."""
        return self.state is _LOST  # state is always a LeaseState member: identity, the cheapest test

    @property
    def live(self) -> bool:
        """Held: not lost, and no release or delete has ended it (a delete in flight keeps it held)."""
        return self.state in LIVE_STATES

    @property
    def settled(self) -> bool:
        return self.state in (LeaseState.DELETED, LeaseState.RELEASED)

    def __repr__(self) -> str:
        return f"Lease({self.receipt_handle[:12]}..., {self.state.name}, extensions={self.extensions})"
