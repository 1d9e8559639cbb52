"""The consumer's side of idempotency: which records a worker or an invocation holds, tied to which leases.

:class:`IdempotencyGate` is what the processor, the heartbeat and the drain call (see docs/sqslease.md,
"Idempotency"). Each hold lives in :attr:`IdempotencyGate.holds` from ``begin`` until whoever settles it first
takes it (the handler's end, its timeout, or the drain): so a record is completed or deleted once. Without
idempotency nothing here is built: the processor and the heartbeat check one ``None``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqslease.config import SETTINGS, ConsumerConfig
from sqslease.idempotency import (
    Begin,
    BeginStatus,
    ExtendOutcome,
    Hold,
    IdempotencyKeyError,
    IdempotencySettings,
    KeyFunction,
    SettleOutcome,
    compute_key,
    lease_expiry_epoch,
    message_id_key,
)
from sqslease.idempotency_store import IdempotencyStore, store_client
from sqslease.imports import import_object
from sqslease.lease import Lease, LeaseState
from sqslease.message import Message
from sqslease.settings import LeaseSettings

logger = logging.getLogger("sqslease")

#: Records a log line names at most (a tick of 1,000 due leases would write a line of 50 KB).
NAMED_IN_A_LINE = 10


@dataclass(frozen=True)
class IdempotentResult:
    """Return ``IdempotentResult(value)`` from a handler to store ``value`` (JSON, at most ``max_result_bytes``)
    with its COMPLETED record, for producers to read with ``IdempotencyStore.get(key)``. Any other return
    value is ignored, as without idempotency."""

    value: Any


def env_store(
    settings: LeaseSettings, concurrency: int = 1, environ: Mapping[str, str] | None = None
) -> IdempotencyStore | None:
    """The store the environment's idempotency settings describe (:meth:`sqslease.config.ConsumerConfig.from_env`;
    default ``os.environ``; its other variables are not read), or ``None`` when they name no table (off)."""
    return configured_store(settings, ConsumerConfig.from_env(environ, part="idempotency").idempotency, concurrency)


def configured_store(
    settings: LeaseSettings, idempotency: IdempotencySettings, concurrency: int = 1
) -> IdempotencyStore | None:
    """The store ``idempotency`` describes, with its own DynamoDB client, or ``None`` without a table (off)."""
    if not idempotency.table:
        return None
    return IdempotencyStore(store_client(settings, concurrency), settings, idempotency)


@functools.cache
def configured_key(path: str | None) -> KeyFunction:
    """The key function ``settings.idempotency_key`` names (``package.module:function``), imported once per
    process; :func:`message_id_key` for ``None``. A ``ValueError`` names a path that cannot be imported or is not
    callable (the worker and ``lambda_entry`` call this at start, so a bad path stops them there)."""
    if path is None:
        return message_id_key
    key = import_object(path)
    if not callable(key):
        raise ValueError(f"{path!r} is not callable: name a function key(body, message) -> str")
    named: KeyFunction = key
    return named


def chosen_key(key: KeyFunction, settings: LeaseSettings) -> KeyFunction:
    """``key`` when a caller gave one, else the one ``settings.idempotency_key`` names, else the ``MessageId``."""
    return key if key is not message_id_key else configured_key(settings.idempotency_key)


class IdempotencyGate:
    """One consumer's holds on ``store``'s records, by lease. Thread-safe.

    :param store: the records.
    :param key: ``key(body, message) -> str``. Default: the ``MessageId``.
    :param clock: the monotonic clock the leases' deadlines are on. Default ``time.monotonic``.
    """

    def __init__(
        self, store: IdempotencyStore, key: KeyFunction = message_id_key, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.key = key
        self.clock = clock
        self.holds: dict[Lease, Hold] = {}
        self._lock = threading.Lock()

    def expiry(self, deadline: float) -> float:
        """A monotonic deadline in the store's epoch seconds."""
        return lease_expiry_epoch(deadline, self.clock(), self.store.clock())

    def lease_end(self, lease: Lease, offset: float) -> float:
        """When ``lease`` ends, as the heartbeat will have it (the end its extension in flight asks for, else its
        deadline), plus ``offset``: the store's epoch seconds less the monotonic ones, read once per claim or
        completion, so that an end that did not move reads the same at each attempt."""
        end = lease.deadline
        if lease.state is LeaseState.EXTENDING:
            end = max(end, lease.extending_to)
        return end + offset

    def begin(self, message: Message) -> Begin:
        """Claim the message's key until its lease ends. Raises ``IdempotencyKeyError`` for a bad key (the handler's
        failure) and ``FatalStoreError``. A RUN's hold is kept with the lease until :meth:`take`.

        The lease may be extended while the claim is in flight; each attempt writes its latest end, and a record
        that landed short of it is moved to it before the handler runs (:meth:`_keep`)."""
        key = compute_key(self.key, message.body, message)
        lease, offset = message.lease, self.store.clock() - self.clock()
        begun = self.store.begin(key, lambda: self.lease_end(lease, offset))
        return begun if begun.hold is None else self._keep(lease, begun.hold, offset)

    def _keep(self, lease: Lease, hold: Hold, offset: float) -> Begin:
        """Keep ``hold`` with ``lease`` from now on, so that each tick moves its record with the lease. A tick that
        took the lease before the hold was kept did not see it: its record is first moved to the lease's end here
        (one ``extend``), checked under the lock the heartbeat's :meth:`held` takes, so no extension is missed.
        Not moved (throttled past its slack, lost): UNAVAILABLE, and the handler does not run, since the record
        would lapse under it."""
        # An extension moves a lease's end by more than a heartbeat interval (visibility timeout minus threshold
        # exceeds it); anything less is the record's millisecond rounding.
        moved = self.store.settings.heartbeat_interval / 2
        while True:
            with self._lock:
                end = self.lease_end(lease, offset)
                if end - hold.expires_at < moved:
                    self.holds[lease] = hold
                    return Begin(BeginStatus.RUN, hold=hold)
            (outcome,) = self.store.extend([(hold, end)])
            if outcome is not ExtendOutcome.EXTENDED:
                return Begin(
                    BeginStatus.UNAVAILABLE, error=f"record not moved with its extended lease: {outcome.value}"
                )

    def admit(self, message: Message) -> tuple[str, BaseException | None] | None:
        """``None``: run the handler (the record is held). Else the EMF outcome of not running it, and the key
        function's error for ``failure``. Raises ``FatalStoreError``."""
        try:
            begun = self.begin(message)
        except IdempotencyKeyError as error:
            logger.error("message %s not run: %s", message.message_id, error)
            return "failure", error
        if begun.status is BeginStatus.RUN:
            return None
        if begun.status is BeginStatus.COMPLETED:
            logger.info("message %s is a duplicate of a completed job: not run", message.message_id)
            return "duplicate", None
        if begun.status is BeginStatus.IN_PROGRESS_ELSEWHERE:
            logger.warning(
                "message %s not run: its key is held by another consumer for %.1f s more; left to its lease",
                message.message_id,
                (begun.expires_at or 0) - self.store.clock(),
            )
            return "in_progress_elsewhere", None
        logger.error(
            "message %s not run: no idempotency record could be written (%s); left to its lease",
            message.message_id,
            begun.error,
        )
        return "store_unavailable", None

    def take(self, lease: Lease) -> Hold | None:
        """The lease's hold, which the caller settles; ``None`` when another caller took it first."""
        with self._lock:
            return self.holds.pop(lease, None)

    def complete(self, message: Message, returned: Any) -> None:
        """Mark the message's record COMPLETED (with ``returned.value`` for an :class:`IdempotentResult`)."""
        hold = self.take(message.lease)
        if hold is None:
            logger.warning("message %s: its idempotency record was already released; not completed", message.message_id)
            return
        result = returned.value if isinstance(returned, IdempotentResult) else None
        lease, offset = message.lease, self.store.clock() - self.clock()

        def deadline() -> float:  # while the SQS lease is held no other consumer has the message: keep trying
            return max(hold.expires_at, self.lease_end(lease, offset)) if lease.live else hold.expires_at

        try:
            outcome = self.store.complete(hold, result, deadline)
        except (TypeError, ValueError) as error:  # too large, or not JSON: the job is done all the same
            logger.error(
                "message %s: result not stored (%s); completing its record without it", message.message_id, error
            )
            outcome = self.store.complete(hold, deadline=deadline)
        if outcome is not SettleOutcome.DONE:
            logger.warning(
                "message %s: its idempotency record could not be completed (%s): a redelivery may run it again",
                message.message_id,
                outcome.value,
            )

    def fail(self, lease: Lease, message_id: str) -> None:
        """Delete the lease's record, if held, so that the retry runs at once."""
        hold = self.take(lease)
        if hold is None:
            return
        outcome = self.store.fail(hold)
        if outcome is SettleOutcome.UNAVAILABLE:
            logger.warning("message %s: idempotency record not deleted; the retry runs once it lapses", message_id)

    def held(self, due: Sequence[tuple[Lease, float]]) -> list[tuple[Hold, float]]:
        """The records held by ``due`` leases, each with its lease's new end (monotonic) in epoch seconds."""
        with self._lock:
            return [(self.holds[lease], self.expiry(end)) for lease, end in due if lease in self.holds]

    def extend(self, records: Sequence[tuple[Hold, float]]) -> tuple[int, int]:
        """One ``store.extend`` of :meth:`held`'s records. Returns (records extended, records not extended); those
        not extended are logged: their handlers run on, and their SQS leases are kept. A record whose hold was taken
        meanwhile (its handler ended: it is being completed or deleted) is neither: it needs no extension."""
        outcomes = self.store.extend(records)
        missed = [
            hold for (hold, _), outcome in zip(records, outcomes, strict=True) if outcome is not ExtendOutcome.EXTENDED
        ]
        if missed:
            with self._lock:
                kept = {id(hold) for hold in self.holds.values()}
            missed = [hold for hold in missed if id(hold) in kept]
        if missed:
            names = [hold.pk for hold in missed[:NAMED_IN_A_LINE]] + ["..."] * (len(missed) > NAMED_IN_A_LINE)
            logger.error(
                "%d idempotency records not extended (%s): another consumer may run their messages once they lapse",
                len(missed),
                ", ".join(names),
            )
        return sum(outcome is ExtendOutcome.EXTENDED for outcome in outcomes), len(missed)


def idempotency_gate(
    settings: LeaseSettings,
    concurrency: int,
    store: IdempotencyStore | None,
    key: KeyFunction,
    clock: Callable[[], float],
) -> IdempotencyGate | None:
    """The worker's idempotency: ``store``, else the one the environment describes
    (:func:`sqslease.idempotency_gate.env_store`), keyed on ``key`` or the function ``settings`` names; ``None`` (off)
    without either store. A key without a store is logged: it is ignored."""
    store = store if store is not None else env_store(settings, concurrency)
    if store is None and (key is not message_id_key or settings.idempotency_key is not None):
        table = SETTINGS["idempotency_table"].variable
        logger.warning("the idempotency key is ignored: idempotency is off (set %s)", table)
    key = chosen_key(key, settings)
    return IdempotencyGate(store, key, clock) if store is not None else None
