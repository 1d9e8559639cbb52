"""The lease runtime's promises, checked by a stateful property test: hypothesis drives a real
:class:`sqslease.worker.Worker` (its threads on an injected clock) against an in-process model of SQS's visibility
rules (:mod:`support.sqs_model`), with sends, handler successes and failures, faulted, held and lost requests,
SIGTERM and restarts, and clock steps and jumps. What the model covers, and what it does not: docs/testing.md.

The invariants (:mod:`support.lease_ledger` checks them as each event happens; :mod:`support.lease_checks` after
each step):

- a lease the worker holds is extended when it falls due while SQS answers; no lease of a running handler lapses
  unless its extensions failed for its whole slack (an outage, a held request), the clock jumped past it, or it
  reached its cap (``max_total_lease``); the worker never believes a lease lasts longer than SQS does;
- nothing is deleted unless a run of it succeeded (or the worker sent it to the DLQ);
- FIFO: a message runs only after the earlier messages of its group succeeded or were dead-lettered, never beside
  one of them; outside a drain, an unstarted message is released only behind a head whose lease was lost, whose DLQ
  send failed or that was not run: so none that never failed reaches the DLQ because an earlier one failed;
- with idempotency, no run starts for a key whose record is COMPLETED;
- no handler starts on a lease that ran out; no visibility change goes out with a receipt handle its message was
  received again since, unless the clock moved after the worker last looked at it (a request delayed across the
  move).

Deterministic: a derandomized profile, and no wall clock in any decision. Threads run in real time, so each step
lets the worker catch up (:meth:`support.lease_worker.WorkerGenerations.pace`: pacing only, nothing is asserted
on it) and every wait for the worker has a generous bound.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock
from support.lease_ledger import Ledger
from support.lease_worker import WallClock, WorkerGenerations
from support.sqs_faults import CMV, DELETE, RECEIVE, SEND, Hold
from support.sqs_model import SqsModel

from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.heavy  # 800 steps paced in real time (about 45 s, little CPU): scheduled first

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs-dlq"
#: SQS's 12 h cap on a message's total visibility timeout, scaled down so that a run reaches it in a few steps.
CAP_S = 120
CONCURRENCY = 2
#: 12 s leases (the first 10 s), extended 5 s before they end; 1 s polls: the release point 2 s after SIGTERM.
SETTINGS = {
    "visibility_timeout": 12,
    "extension_threshold": 5,
    "heartbeat_interval": 0.1,
    "wait_time": 1,
    "shutdown_grace": 10,
    "backoff_base": 2,
    "backoff_max": 8,
    "max_receive_count": 3,
    "job_type": "Jobs",
}
STEPS_S = (0.5, 1, 2, 4)  # below the threshold: a kept lease never lapses in one
JUMPS_S = (7, 12, 31, 70)  # past leases: a frozen process
FAULTS = [
    *((CMV, kind) for kind in ("throttle", "error500", "timeout", "landed_timeout")),
    *((DELETE, kind) for kind in ("throttle", "error500", "timeout", "landed_timeout", "lost")),
    (RECEIVE, "throttle"),
    (RECEIVE, "error500"),
    (SEND, "error500"),
    (SEND, "landed_timeout"),
]

#: The actions of a step, each as often as it is named.
ACTIONS = [
    *["send"] * 2,
    *["end_a_handler"] * 6,
    *["advance"] * 6,
    "jump",
    "fail_requests",
    "outage",
    "hold",
    "sigterm",
]

PROFILE = settings(
    max_examples=20,
    stateful_step_count=40,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class LeaseMachine(RuleBasedStateMachine, WorkerGenerations):
    """One queue, one worker at a time (restarted after a SIGTERM), and the steps of the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.thread: threading.Thread | None = None
        self.ledger: Ledger | None = None
        self.outages: set[str] = set()

    @initialize(
        fifo=st.booleans(),
        idempotency=st.booleans(),
        stale_changes=st.sampled_from(["refuse", "apply"]),
        max_total_lease=st.sampled_from([CAP_S - 60, CAP_S]),
        policy=st.sampled_from([FailurePolicy.BACKOFF, FailurePolicy.VISIBLE_NOW, FailurePolicy.LAPSE]),
        first=st.lists(st.sampled_from(["job-a", "job-b", "job-c", "poison-a"]), min_size=1, max_size=4),
    )
    def start(
        self,
        fifo: bool,
        idempotency: bool,
        stale_changes: str,
        max_total_lease: int,
        policy: FailurePolicy,
        first: list[str],
    ) -> None:
        self.clock = FakeClock(1000.0)
        self.fifo = fifo
        suffix = ".fifo" if fifo else ""
        self.url = URL + suffix
        self.model = SqsModel(self.url, DLQ + suffix, self.clock, SETTINGS["max_receive_count"], CAP_S, stale_changes)
        wall = WallClock(self.clock)
        self.begin(self.url, CONCURRENCY, FakeDynamoDB(wall) if idempotency else None, wall)
        self.ledger = Ledger(self.model, self.dynamodb, str(SETTINGS["job_type"]))
        self.settings = LeaseSettings(
            **SETTINGS,
            max_total_lease=max_total_lease,
            failure_policy=policy,
            dead_letter_queue_url=DLQ + suffix,
        )
        for body in first:
            self.model.send(body, body[-1])
        self.start_worker()

    # -- the steps ------------------------------------------------------------------------------------------------
    # What a step draws never depends on what the worker did (the threads' timing): Hypothesis replays a choice
    # sequence and must see the same draws. So a step draws its action and all of its parameters from fixed
    # strategies first, and an action that does not apply now (no handler to end, no held request) does nothing.
    @rule(action=st.sampled_from(ACTIONS), data=st.data())
    def step(self, action: str, data: st.DataObject) -> None:
        """One action of :data:`ACTIONS` (most steps move work along)."""
        getattr(self, action)(data)
        self.settle()

    def send(self, data: st.DataObject) -> None:
        group = data.draw(st.sampled_from(["a", "b", "c"]), label="group")
        body = f"{data.draw(st.sampled_from(['job', 'job', 'poison']), label='kind')}-{group}"
        for _ in range(data.draw(st.integers(1, 2), label="count")):
            self.model.send(body, group)

    def end_a_handler(self, data: st.DataObject) -> None:
        pick = data.draw(st.integers(0, 7), label="run")
        verdict = data.draw(st.sampled_from(["success", "success", "failure"]), label="verdict")
        runs = self.current_runs()
        if runs:
            run = runs[pick % len(runs)]
            self.ledger.finish(run, "failure" if run.message.body.startswith("poison") else verdict)

    def advance(self, data: st.DataObject) -> None:
        self.move_clock(data.draw(st.sampled_from(STEPS_S), label="seconds"), jump=False)

    def jump(self, data: st.DataObject) -> None:
        self.move_clock(data.draw(st.sampled_from(JUMPS_S), label="seconds"), jump=True)

    def fail_requests(self, data: st.DataObject) -> None:
        operation, kind = data.draw(st.sampled_from(FAULTS), label="fault")
        count = data.draw(st.integers(1, 2), label="requests")
        if kind == "lost" and self.fifo:  # a FIFO queue never hands a message out twice: no lost delete
            kind = "timeout"
        self.model.script(operation, *[kind] * count)

    def outage(self, data: st.DataObject) -> None:
        """An outage of one operation begins, or, if one is on, they all end."""
        operation = data.draw(st.sampled_from([CMV, DELETE]), label="operation")
        kind = data.draw(st.sampled_from(["throttle", "error500", "timeout"]), label="kind")
        if self.outages:
            for ended in sorted(self.outages):
                self.model.outage(ended, None)
            self.outages.clear()
            return
        self.model.outage(operation, kind)
        self.outages.add(operation)
        if operation == CMV:
            self.shake([d.handle for d in self.model.deliveries.values() if self.model.in_flight(d.handle)])

    def hold(self, data: st.DataObject) -> None:
        """The next request of an operation is held; or, if one is held, it is answered."""
        operation = data.draw(st.sampled_from([CMV, DELETE]), label="operation")
        landed = data.draw(st.booleans(), label="landed")
        answer = data.draw(st.sampled_from(["ok", "timeout"]), label="answer")
        waiting = self.model.waiting_holds()
        for hold in waiting:
            self.shake(hold.handles)
            hold.answer(answer if hold.landed else "timeout")
        self.model.holds = [hold for hold in self.model.holds if hold.sent_at is None]
        if not waiting and not self.model.holds:
            self.model.script(operation, Hold(landed))

    def sigterm(self, data: st.DataObject) -> None:
        """SIGTERM to a running worker, or a new worker once the last one's drain ended."""
        if self.thread.is_alive() and not self.ledger.stopping:
            self.send_sigterm()
        elif not self.thread.is_alive():
            self.start_worker()

    # -- after each step ------------------------------------------------------------------------------------------
    @invariant()
    def no_promise_broken(self) -> None:
        if self.ledger is None:
            return
        self.check_deadlines()
        assert not self.ledger.violations, "\n".join(self.ledger.violations)

    def settle(self) -> None:
        """Let the worker catch up, then check that it kept the leases it had to."""
        self.pace()
        self.check_leases_kept()

    def move_clock(self, seconds: float, jump: bool) -> None:
        to = self.clock.now + seconds
        for hold in self.model.waiting_holds():  # the client times out a held request after its request timeout
            if hold.sent_at + self.settings.lease_request_timeout <= to:
                self.shake(hold.handles)
                hold.answer("timeout")
        self.pace()
        for hold in self.model.waiting_holds():
            self.shake(hold.handles)
        if jump or CMV in self.outages:
            self.shake([d.handle for d in self.model.deliveries.values() if self.model.in_flight(d.handle)])
        self.check_lapses(to)
        self.clock.now = to
        self.wake_handlers()

    # -- teardown ---------------------------------------------------------------------------------------------------
    def teardown(self) -> None:
        if self.ledger is None:
            return
        self.stop_everything()
        assert self.thread is not None and not self.thread.is_alive(), "the worker did not stop"
        assert not self.ledger.violations, "\n".join(self.ledger.violations)


LeaseMachine.TestCase.settings = PROFILE
TestLeaseMachine = LeaseMachine.TestCase
