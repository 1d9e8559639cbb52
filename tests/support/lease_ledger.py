"""What a worker did to the messages of a :class:`support.sqs_model.SqsModel`, as its handler and the model saw it,
and the lease runtime's promises checked as each event happens (``tests/test_sqslease_statemachine.py``).

The handler (:meth:`Ledger.handler`) blocks each run until the test ends it (:meth:`Ledger.finish`), so the test
decides when a handler succeeds or fails. The checks that need the moment they happen run where it happens: at a
handler's start (on its thread) and in the model's observer (under the model's lock, on the requesting thread);
what they find is kept in :attr:`Ledger.violations`, for the test to raise on its own thread.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from sqslease.message import Message
from support.sqs_model import Delivery, SqsModel

#: Real seconds a handler waits for the test to end it at most (a test that forgets one does not hang).
HANDLER_LIMIT_S = 120


class HandlerFailure(RuntimeError):
    """What a handler the test fails raises."""


@dataclass(eq=False)
class Run:
    """One handler call: the message (its lease included), the worker generation and how the test ended it."""

    number: int
    generation: int
    message: Message
    started_at: float
    verdict: str | None = None  # "success", "failure", or "killed" (its worker's process ended under it)
    ended_seq: int = 0  # the order in which the test ended the runs (0: running)
    go: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return self.verdict is None


class Ledger:
    """The runs of every worker generation and the invariants (see the module docstring).

    :param model: the queue; its ``observer`` is set to :meth:`observe`.
    :param dynamodb: the idempotency table (``support.fake_dynamodb.FakeDynamoDB``), or ``None``.
    :param job_type: the consumer's ``job_type`` (records are ``<job type>#<MessageId>``).
    """

    def __init__(self, model: SqsModel, dynamodb: Any, job_type: str) -> None:
        self.model = model
        self.dynamodb = dynamodb
        self.job_type = job_type
        self.runs: list[Run] = []
        self.violations: list[str] = []
        self.succeeded: set[str] = set()  # message ids with a run that succeeded
        self.failed: set[str] = set()  # message ids with a run that failed
        self.send_failed: set[str] = set()  # message ids whose DLQ send the consumer saw fail
        self.dead_lettered: set[str] = set()  # message ids the consumer sent to the DLQ
        self.shaky: set[str] = set()  # receipt handles whose lease may lapse: extensions failed, or the clock jumped
        self.generation = 0
        self.stopping = False  # the current worker was told to stop (SIGTERM)
        self.grace_ends = float("inf")  # when (clock) the current worker's shutdown_grace ends
        self.version = 0  # bumped by each run's start and end
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        model.observer = self.observe

    # -- the handler and the test's hand on it ------------------------------------------------------------------
    def handler(self, body: str, message: Message) -> None:
        """The worker's handler: checks its start, then waits for the test's verdict."""
        # The handler's thread read the clock as the run began: a move since excuses a lease that ran out meanwhile.
        late = self.model.clock.moved_since_read()
        in_flight = self.model.in_flight(message.receipt_handle)
        earlier = self.model.group_before(message.message_id)  # the model's lock first, then the ledger's
        with self._lock:
            run = Run(next(self._numbers), self.generation, message, self.model.clock.now)
            self._check_start(run, earlier, in_flight, late)
            self.runs.append(run)
            self.version += 1
        if not run.go.wait(HANDLER_LIMIT_S):
            raise HandlerFailure(f"run {run.number} was never ended by the test")
        if run.verdict != "success":
            raise HandlerFailure(f"{body} fails ({run.verdict})")

    def running(self, generation: int | None = None) -> list[Run]:
        with self._lock:
            return [r for r in self.runs if r.running and (generation is None or r.generation == generation)]

    def finish(self, run: Run, verdict: str) -> None:
        """End ``run``: ``success`` (the handler returns), ``failure`` (it raises) or ``killed`` (its process ended:
        it raises, and its worker, stopped, settles nothing)."""
        with self._lock:
            run.verdict = verdict
            run.ended_seq = next(self._numbers)
            {"success": self.succeeded, "failure": self.failed}.get(verdict, set()).add(run.message.message_id)
            self.version += 1
        run.go.set()

    def violation(self, text: str) -> None:
        with self._lock:
            self.violations.append(text)

    # -- checks at a handler's start ------------------------------------------------------------------------------
    def _check_start(self, run: Run, earlier: list[tuple[str, str]], in_flight: bool, late: bool) -> None:
        message = run.message
        if not in_flight and not late:
            self.violations.append(
                f"{message.message_id} (run {run.number}) started on {message.receipt_handle}, whose lease had run out"
            )
        if self.dynamodb is not None:
            item = self.dynamodb.items.get(f"{self.job_type}#{message.message_id}")
            if item is not None and item["status"]["S"] == "COMPLETED":
                self.violations.append(f"{message.message_id} ran again (run {run.number}): its key was COMPLETED")
        group = message.message_group_id
        if group is None:
            return
        for message_id, state in earlier:
            if message_id not in self.succeeded and message_id not in self.dead_lettered and state != "dead":
                self.violations.append(
                    f"FIFO order: {message.message_id} (run {run.number}) started before {message_id} of its group "
                    f"{group} succeeded or was dead-lettered"
                )
        for other in self.runs:
            if other.running and other.message.message_group_id == group:
                self.violations.append(
                    f"FIFO: {message.message_id} (run {run.number}) started while run {other.number} of its group "
                    f"{group} ({other.message.message_id}) runs"
                )

    # -- checks as SQS sees the requests (under the model's lock) -------------------------------------------------
    def observe(self, event: str, **details: Any) -> None:
        with self._lock:
            if details.get("late") and event == "change":
                # Decided before the clock moved (a request delayed that long): its effect on the message's
                # current delivery is the network's doing, not a promise broken.
                self.shaky.add(details["delivery"].handle)
                return
            if event == "delete":
                self._on_delete(details["delivery"])
            elif event == "change":
                self._on_change(details["delivery"], details["handle"], details["seconds"], details["before"])
            elif event == "dead" and details["entry"]["by"] == "consumer":
                self.dead_lettered.add(details["entry"]["message_id"])
            elif event == "send_failed":
                source = details["request"].get("MessageAttributes", {}).get("sqslease.source_message_id", {})
                self.send_failed.add(source.get("StringValue", ""))
            elif event == "refused" and not details["late"]:
                self._on_refused(details["handle"], details["code"], details["text"])

    def _on_refused(self, handle: str, code: str, text: str) -> None:
        if "beyond the limit" in text:
            self.violations.append(f"an extension of {handle} asked past the 12 h cap: refused")
        elif "not the latest" in text:  # a change with a stale handle (refused here; applied under "apply")
            self.violations.append(
                f"a visibility change sent by {threading.current_thread().name} with {handle}, stale: its message "
                "was received again"
            )

    def _on_delete(self, delivery: Delivery) -> None:
        message_id = delivery.message.message_id
        if message_id not in self.succeeded and message_id not in self.dead_lettered:
            self.violations.append(f"{message_id} deleted ({delivery.handle}) with no run that succeeded")

    def _on_change(self, delivery: Delivery, handle: str, seconds: int, before: float) -> None:
        now = self.model.clock.now
        if handle != delivery.handle:  # a stale handle, applied to the message's current delivery
            self.violations.append(
                f"a visibility change to {seconds} s sent by {threading.current_thread().name} with {handle}, stale: "
                f"its message was received again ({delivery.handle})"
            )
        if not (seconds == 0 or now + seconds < before - 1):
            return  # an extension
        run = self._run_of(delivery.handle)
        if run is not None and run.running:
            if not (self.stopping and now >= self.grace_ends):
                self.violations.append(f"{delivery.handle} released while its handler runs (run {run.number})")
        elif run is None and not self.stopping:
            excuse = self._behind_failed_head(delivery)
            if excuse is not None:
                self.violations.append(f"{delivery.message.message_id} released unrun ({delivery.handle}): {excuse}")

    def _behind_failed_head(self, delivery: Delivery) -> str | None:
        """Why releasing this unstarted delivery breaks a promise (``None``: it does not). Outside a drain, an
        unstarted message is released only behind a FIFO head that ended without success and could not be held for a
        retry in process: its lease was lost (the head may be an older delivery of the same message), its DLQ send
        failed, or it was not run at all (its idempotency record held elsewhere)."""
        group = delivery.message.group
        if group is None:
            return "a standard queue's message released outside a drain"
        ended = [r for r in self.runs if r.generation == self.generation and r.message.message_group_id == group]
        ended = sorted((r for r in ended if r.ended_seq), key=lambda r: r.ended_seq)
        if not ended:
            return None  # its head did not run
        head = ended[-1]
        if head.message.lease.lost or head.message.message_id in self.send_failed or head.verdict == "killed":
            return None
        return (
            f"behind run {head.number} of {head.message.message_id} ({head.verdict}, receive "
            f"{head.message.receive_count}), which neither lost its lease nor failed to reach the DLQ"
        )

    def _run_of(self, handle: str) -> Run | None:
        for run in reversed(self.runs):
            if run.message.receipt_handle == handle:
                return run
        return None
