"""A real :class:`sqslease.worker.Worker` on the SQS model (:mod:`support.sqs_model`), one generation at a time, as
a stateful test runs it (``tests/test_sqslease_statemachine.py``): started in a thread on the injected clock,
paced after each step, drained by SIGTERM, and stopped at the end of an example.

:class:`WorkerGenerations` is a base of the test's state machine (after :class:`support.lease_checks.LeaseChecks`,
whose attributes it shares); :meth:`WorkerGenerations.begin` sets the rest.
"""

from __future__ import annotations

import io
import threading
import time
from typing import Any

from sqslease.emf import EmfLogger
from sqslease.idempotency import IdempotencySettings
from sqslease.idempotency_store import IdempotencyStore
from sqslease.worker import Worker
from support.fakes import FakeClock
from support.lease_checks import LIMIT_S, LeaseChecks
from support.waiting import wait_for

#: Real seconds a step lets the worker catch up at most (pacing: proceeding earlier asserts nothing).
PACE_LIMIT_S = 5


def real_pause(seconds: float) -> None:
    """The runtime's retry pauses are real time and move nothing on the fake clock: capped so that a retry comes
    at once (what it decides is on the fake clock)."""
    time.sleep(min(seconds, 0.02))


class WallClock:
    """Epoch seconds that move with the fake monotonic clock (the idempotency records' clock)."""

    def __init__(self, clock: FakeClock, epoch: float = 1_800_000_000.0) -> None:
        self.clock, self.offset = clock, epoch - clock.now

    def __call__(self) -> float:
        return self.clock.now + self.offset


class WorkerGenerations(LeaseChecks):
    """The current worker generation of a test: :meth:`start_worker`, :meth:`pace`, :meth:`stop_everything`."""

    url: str
    concurrency: int
    dynamodb: Any  # a support.fake_dynamodb.FakeDynamoDB, or None: no idempotency

    def begin(self, url: str, concurrency: int, dynamodb: Any, wall: WallClock) -> None:
        """The parts every generation shares: the queue's URL, the handlers, the idempotency table and its clock."""
        self.url, self.concurrency, self.dynamodb, self.wall = url, concurrency, dynamodb, wall
        self.emf = io.StringIO()  # every worker's EMF lines

    def start_worker(self) -> None:
        """A new worker generation, running in a thread (its ``run`` as a process's main)."""
        assert self.ledger is not None
        self.ledger.generation += 1
        self.ledger.stopping, self.ledger.grace_ends = False, float("inf")
        store = None
        if self.dynamodb is not None:
            store = IdempotencyStore(
                self.dynamodb, self.settings, IdempotencySettings(table="jobs"), clock=self.wall, sleep=real_pause
            )
        self.worker = Worker(
            self.model,
            self.url,
            self.ledger.handler,
            self.settings,
            concurrency=self.concurrency,
            emf=EmfLogger(self.emf),
            clock=self.clock,
            idempotency=store,
        )
        self.worker.heartbeat.sleep = real_pause
        self.thread = threading.Thread(target=self._run, args=(self.worker,), name="statemachine-worker", daemon=True)
        self.thread.start()

    def _run(self, worker: Worker) -> None:
        try:
            worker.run(install_signal_handlers=False)
        except BaseException as error:  # a Worker.run that raises is a finding: kept for the test's thread
            assert self.ledger is not None
            self.ledger.violation(f"Worker.run raised {error!r}")

    def send_sigterm(self) -> None:
        """What SIGTERM does: the worker drains, its handlers have ``shutdown_grace`` (clock) to end."""
        assert self.ledger is not None
        self.ledger.stopping, self.ledger.grace_ends = True, self.clock.now + self.settings.shutdown_grace
        self.worker.shutdown()

    def pace(self) -> None:
        """Wait until the worker did what the last step asked of it: took what is receivable, started what it can,
        sent its settles, ran a parked retry that is due (pacing: nothing is asserted on it)."""
        assert self.ledger is not None and self.thread is not None
        ends = time.monotonic() + PACE_LIMIT_S
        last: tuple[int, int, bool] | None = None
        stable, polls = 0, self.model.empty_polls
        while time.monotonic() < ends:
            self.reap()
            snapshot = (self.model.version, self.ledger.version, self.thread.is_alive())
            if snapshot != last:
                last, stable, polls = snapshot, 0, self.model.empty_polls
            elif self._caught_up(polls):
                stable += 1
                if stable >= 3:
                    return
            time.sleep(0.01)

    def _caught_up(self, polls: int) -> bool:
        assert self.ledger is not None and self.thread is not None
        if not self.thread.is_alive() or self.ledger.stopping:
            return True
        # A parked retry that is due runs once a handler is free (every handler busy: it waits, caught up).
        free = len(self.current_runs()) < self.concurrency
        if free and any(due <= self.clock.now for due in self.worker.handlers.parked().values()):
            return False
        return self.model.empty_polls > polls or self.worker.handlers.outstanding() >= 2 * self.concurrency

    def wake_handlers(self) -> None:
        """After a clock move: a handler waiting for a parked retry looks at the clock again now, not after up to
        ``PARKED_LOOK_S`` real seconds (pacing: a condition may always wake early)."""
        ready = self.worker.handlers._ready
        with ready._cond:
            ready._cond.notify_all()

    def reap(self) -> None:
        """A worker whose ``run`` returned is a process that exited: the handlers it left running die with it."""
        if self.ledger is not None and self.thread is not None and not self.thread.is_alive():
            for run in self.ledger.running(self.ledger.generation):
                self.ledger.finish(run, "killed")

    def stop_everything(self) -> None:
        """Faults off, every handler ended with success, SIGTERM, the clock moved until the drain ends; then every
        handler left ended (killed) and the worker's thread joined."""
        assert self.ledger is not None and self.thread is not None
        try:
            self._drain_clean()
        finally:
            for hold in self.model.holds:
                if hold.waiting:
                    hold.answer("timeout")
            for run in self.ledger.running():
                self.ledger.finish(run, "killed")
            self.thread.join(LIMIT_S)

    def _drain_clean(self) -> None:
        assert self.ledger is not None and self.thread is not None
        for operation in list(self.outages):
            self.model.outage(operation, None)
        self.outages.clear()
        self.model.clear_faults()
        for hold in self.model.waiting_holds():
            hold.answer("timeout")
        if not self.thread.is_alive():
            return
        if not self.ledger.stopping:
            self.send_sigterm()
        thread = self.thread
        for _ in range(60):  # the drain waits on the clock: moved a second at a time until it ended
            for run in self.current_runs():
                self.ledger.finish(run, "success")
            if wait_for(lambda: not thread.is_alive(), timeout_s=0.2):
                return
            self.clock.now += 1
            self.wake_handlers()
