"""The lease promises a stateful test checks from outside the worker, against the SQS model's deadlines
(``tests/test_sqslease_statemachine.py``): a lease due is extended while SQS answers, a running handler's lease
lapses only when its extensions failed, and the worker never believes a lease lasts longer than SQS does.

:class:`LeaseChecks` is a base of the test's state machine, which sets every attribute declared here. A broken
promise is kept in the ledger's violations (:class:`support.lease_ledger.Ledger`), for the machine's invariant to
raise.
"""

from __future__ import annotations

import threading

from sqslease.lease import CHANGING, Lease, LeaseState
from sqslease.settings import LeaseSettings
from sqslease.worker import Worker
from support.fakes import FakeClock
from support.lease_ledger import Ledger, Run
from support.sqs_faults import CMV
from support.sqs_model import SqsModel
from support.waiting import wait_for

#: Real seconds any wait for the worker takes at most: generous, the machine is shared.
LIMIT_S = 30


class LeaseChecks:
    """The checks, on the machine's clock, model, ledger, settings, current worker and its thread."""

    clock: FakeClock
    model: SqsModel
    ledger: Ledger | None
    settings: LeaseSettings
    worker: Worker
    thread: threading.Thread | None
    outages: set[str]  # operations in an outage

    def current_runs(self) -> list[Run]:
        """The current worker's runs still running."""
        return [] if self.ledger is None else self.ledger.running(self.ledger.generation)

    def shake(self, handles: list[str]) -> None:
        """These leases may lapse without a promise broken: their extensions failed, or the clock jumped."""
        assert self.ledger is not None
        with self.ledger._lock:
            self.ledger.shaky.update(handles)

    def check_lapses(self, to: float) -> None:
        """A running handler's lease that would lapse by ``to`` must have had its extensions fail, or its cap."""
        assert self.ledger is not None
        for run in self.current_runs():
            handle = run.message.receipt_handle
            delivery = self.model.delivery(handle)
            if delivery is None or not self.model.in_flight(handle) or delivery.deadline > to:
                continue
            capped = delivery.deadline >= run.message.lease.received_at + self.settings.max_total_lease - 1 - 1e-6
            if handle not in self.ledger.shaky and not capped:
                self.ledger.violation(
                    f"the lease of run {run.number} ({handle}) lapses at {delivery.deadline:g} while its handler runs, "
                    f"its extensions never having failed (clock {self.clock.now:g} -> {to:g})"
                )

    def check_leases_kept(self) -> None:
        """Every lease the worker holds that is due, with SQS answering, is extended within two heartbeat ticks."""
        assert self.ledger is not None and self.thread is not None
        if not self.thread.is_alive() or self.worker.heartbeat._stop.is_set():  # the drain stopped it
            return
        due = [lease for lease in self.worker.scheduler if self._owed(lease)]
        for run in self.current_runs():
            lost = run.message.lease.lost
            if lost and run.message.receipt_handle not in self.ledger.shaky and not self._capped(run.message.lease):
                self.ledger.violation(f"run {run.number} lost its lease ({run.message.receipt_handle}), SQS answering")
        if not due:
            return
        if not self.clock.await_reads("sqslease-heartbeat", 2, LIMIT_S):
            if self.thread.is_alive() and not self.worker.heartbeat._stop.is_set():
                self.ledger.violation("the heartbeat stopped ticking")
            return
        # A round still on its request: wait for it, unless that request is held (the lease is no longer owed).
        wait_for(lambda: not any(lease.state is LeaseState.EXTENDING and self._owed(lease) for lease in due), LIMIT_S)
        for lease in due:
            delivery = self.model.delivery(lease.receipt_handle)
            if self._owed(lease) and delivery is not None:
                self.ledger.violation(
                    f"lease {lease.receipt_handle} due (SQS deadline {delivery.deadline:g}, clock {self.clock.now:g}) "
                    f"not extended, SQS answering"
                )

    def _owed(self, lease: Lease) -> bool:
        """Whether ``lease`` is due and the heartbeat can extend it now: held, SQS answering, a whole extension
        before its cap, and slack left."""
        now, handle = self.clock.now, lease.receipt_handle
        if not lease.live or lease.settling == CHANGING or CMV in self.outages or not self.model.in_flight(handle):
            return False
        if any(handle in hold.handles for hold in self.model.waiting_holds()):
            return False
        delivery = self.model.delivery(handle)
        if delivery is None or lease.deadline - now <= 0.1 or self._capped(lease):
            return False
        return delivery.deadline - now <= self.settings.extension_threshold

    def _capped(self, lease: Lease) -> bool:
        left = self.settings.max_total_lease - (self.clock.now - lease.received_at)
        return left < self.settings.extension_threshold + 1

    def check_deadlines(self) -> None:
        """The worker never believes a lease lasts longer than SQS does."""
        assert self.ledger is not None
        if self.thread is None or not self.thread.is_alive():
            return
        for lease in self.worker.scheduler:
            delivery = self.model.delivery(lease.receipt_handle)
            if delivery is None or lease.receipt_handle in self.ledger.shaky or not lease.live:
                continue
            if lease.deadline > delivery.deadline + 1e-6:
                self.ledger.violation(
                    f"the worker holds {lease.receipt_handle} until {lease.deadline:g}; SQS until {delivery.deadline:g}"
                )
