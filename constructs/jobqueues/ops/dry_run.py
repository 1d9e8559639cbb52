"""``jobqueues dlq redrive --dry-run``: how many messages a redrive would move, per FIFO group, moving nothing.

**Every message** is counted from SQS's own counts (``GetQueueAttributes``: visible, in flight, delayed), with no
receive. A standard DLQ needs nothing more.

**Per FIFO group** there is no API but a receive, and a FIFO receive hides the rest of a group: SQS returns up
to 10 messages of a group, then returns none of it while those are in flight. So the count receives and
*holds* (a 30 s visibility timeout, released at the end): each receive brings groups not seen yet, until one
brings nothing. A group that came in a batch of 10 may hold more; the others are complete. Each such group is
then received alone (released while every other group stays held): fewer than 10 back, and it is complete. What
SQS counts beyond the groups seen is placed in the one group that may hold more when there is one; with several,
each is "10 or more" and the rest is said as such. It cannot be done better without deleting: the 11th message
of a group is out of reach while the first 10 stay in the queue.

What that costs: one or two receives of each message counted per group (its receive count on the DLQ grows, as
``dlq list``'s peek does), and while the count runs (seconds) every group is in flight, so a consumer of the DLQ
(a running redrive) does not see them; a count killed half-way leaves them in flight for up to 30 s.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobqueues.ops.dlq import PEEK_VISIBILITY_S, release
from jobqueues.ops.queues import message_counts

#: Messages one receive returns at most, and so a FIFO group's most a receive shows.
RECEIVE_MAX = 10
#: Messages received per group count, at most: past it, the groups not reached are counted in ``not_in_groups``.
PEEK_LIMIT = 1000


@dataclass(frozen=True)
class DlqCount:
    """What a dry run found: SQS's counts (``messages`` = visible + in flight + delayed), and on FIFO the messages
    per group (``at_least``: the groups whose count is a lower bound), ``not_in_groups`` being the messages
    counted but not placed in a group (``messages == sum(groups) + not_in_groups``)."""

    messages: int
    in_flight: int
    delayed: int
    groups: dict[str, int] | None = None
    at_least: frozenset[str] = field(default_factory=frozenset)
    not_in_groups: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "messages": self.messages,
            "in_flight": self.in_flight,
            "delayed": self.delayed,
            "groups": self.groups,
            "at_least": sorted(self.at_least),
            "not_in_groups": self.not_in_groups,
        }


def place(seen: Mapping[str, int], open_groups: set[str], total: int, complete: bool) -> DlqCount:
    """The per-group count (pure): ``seen`` per group, the groups that may hold more, SQS's ``total``; whether
    the receives reached every group (``complete``). Only ``groups``, ``at_least`` and ``not_in_groups`` are set."""
    rest = max(0, total - sum(seen.values()))
    groups = dict(seen)
    if rest and complete and len(open_groups) == 1:
        (group,) = open_groups
        groups[group] += rest
        return DlqCount(total, 0, 0, groups)
    return DlqCount(total, 0, 0, groups, frozenset(open_groups if rest else ()), rest)


def count(sqs: Any, url: str, fifo: bool, limit: int = PEEK_LIMIT) -> DlqCount:
    """The messages of the DLQ at ``url``, per group when ``fifo`` (see the module docstring); nothing moves."""
    visible, in_flight, delayed = message_counts(sqs, url)
    total = visible + in_flight + delayed
    if not fifo:
        return DlqCount(total, in_flight, delayed)
    seen, open_groups, complete = _count_groups(sqs, url, limit)
    # Only the visible messages can be reached; those in flight or delayed are counted, in no group.
    placed = place(seen, open_groups, visible, complete)
    return DlqCount(
        total, in_flight, delayed, placed.groups, placed.at_least, placed.not_in_groups + in_flight + delayed
    )


def _count_groups(sqs: Any, url: str, limit: int) -> tuple[Counter[str], set[str], bool]:
    """(messages seen per group, groups that may hold more, whether every group was reached), every message
    received held until the end, then made visible again."""
    held: dict[str, list[str]] = defaultdict(list)
    seen: Counter[str] = Counter()
    open_groups: set[str] = set()
    complete = False
    try:
        while sum(seen.values()) < limit:
            batch = _receive(sqs, url, held)
            if not batch:
                complete = True
                break
            seen.update(batch)
            if sum(batch.values()) == RECEIVE_MAX:
                open_groups |= set(batch)
        for group in sorted(open_groups) if complete else []:
            # Alone: every other group is held, so this receive brings this group's first messages.
            release(sqs, url, held.pop(group))
            again = _receive(sqs, url, held)
            seen[group] = max(seen[group], again[group])
            seen.update({g: n for g, n in again.items() if g != group})  # a message sent meanwhile
            if sum(again.values()) < RECEIVE_MAX:
                open_groups.discard(group)
    finally:
        release(sqs, url, [handle for handles in held.values() for handle in handles])
    return seen, open_groups, complete


def _receive(sqs: Any, url: str, held: dict[str, list[str]]) -> Counter[str]:
    """One receive of up to 10 messages, held; their count per group."""
    messages = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=RECEIVE_MAX,
        VisibilityTimeout=PEEK_VISIBILITY_S,
        WaitTimeSeconds=1,
        MessageSystemAttributeNames=["MessageGroupId"],
    ).get("Messages", [])
    groups: Counter[str] = Counter()
    for message in messages:
        group = message.get("Attributes", {}).get("MessageGroupId") or "-"
        held[group].append(message["ReceiptHandle"])
        groups[group] += 1
    return groups
