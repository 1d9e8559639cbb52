"""A drain (SIGTERM to several workers of one queue at once, as in a deployment or scale-in) against moto_server.

Budget: a drain costs a message that did not run at most the one receive that brought it to the draining worker,
so with ``maxReceiveCount`` >= 2 no drain sends a message that never ran to the DLQ. moto_server, like SQS, keeps
a long poll open after its client went away and marks what it then finds as received.

The drain's steps (run on freed handlers, release at the release point, release at the grace's end, FIFO
hold-back) are pinned below on a scripted client and a clock that moves only when told.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.fakes import FakeClock, FakeSQS
from support.fault_proxy import Fault, FaultProxy
from support.moto_queues import Queues, counts, make_queue, receive_all, send
from support.waiting import wait_for
from support.worker_processes import events_of, start_worker_process
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import emf_records, running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.drain import DRAIN_POLL_MARGIN_S
from sqslease.handler_pool import HandlerPool
from sqslease.message import Message
from sqslease.settings import FailurePolicy

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

TRIALS = 3
JOBS = 5  # worker A: 3 running, 2 received but not started
#: 4 s leases (threshold 1 s): a first lease of 4 s and 2 s long polls.
SETTINGS = {
    "SQSLEASE_VISIBILITY_TIMEOUT": "4",
    "SQSLEASE_EXTENSION_THRESHOLD": "1",
    "SQSLEASE_WAIT_TIME": "2",
}


def jobs_end_on(path: Path) -> dict[str, str]:
    return {"SLOW_JOB_UNTIL_FILE": str(path)}


@dataclass
class Trial:
    queues: Queues
    events: Path
    busy: subprocess.Popen[bytes] | None = None
    idle: subprocess.Popen[bytes] | None = None
    idle_log: Path | None = None

    def log_text(self) -> str:
        return self.idle_log.read_text() if self.idle_log and self.idle_log.exists() else ""

    def processes(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in (self.busy, self.idle) if p is not None]


def test_a_drain_of_two_workers_at_once_costs_an_unrun_message_at_most_one_receive(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    polled: set[str] = set()  # the queues an idle worker's long poll reached the server for

    def note_polls(operation: str, body: bytes) -> Fault | None:
        if operation == "ReceiveMessage":
            polled.add(json.loads(body)["QueueUrl"])
        return None

    proxy = FaultProxy(local_aws.endpoint, note_polls).start()  # in front of B only: it passes every request
    trials = []
    released = tmp_path / "jobs-may-end"  # the jobs run until this file exists: A is busy at SIGTERM, whatever the load
    for n in range(TRIALS):  # the trials run side by side, each on its own queue
        trial = Trial(make_queue(local_aws, vt=600, max_receive_count=2), tmp_path / f"events-{n}")
        send(local_aws, trial.queues.url, [f"job-{n}-{i}" for i in range(JOBS)])
        trial.busy = start_worker_process(
            local_aws, trial.queues.url, trial.events, quiet=True, concurrency=3, **SETTINGS, **jobs_end_on(released)
        )
        trials.append(trial)
    try:
        # A holds 3 running and 2 unstarted
        assert wait_for(lambda: all(len(events_of(t.events)) == 3 for t in trials), timeout_s=30)
        assert wait_for(lambda: all(counts(local_aws, t.queues.url) == (0, JOBS) for t in trials), timeout_s=10)
        for n, trial in enumerate(trials):
            trial.idle_log = tmp_path / f"idle-{n}.log"
            trial.idle = start_worker_process(
                local_aws,
                trial.queues.url,
                trial.events,
                endpoint=proxy.endpoint,
                concurrency=3,
                log=trial.idle_log,
                **SETTINGS,
                **jobs_end_on(released),
            )
        # B polls: it is in a long poll (2 s) from then on, but for the moment between two
        assert wait_for(lambda: polled >= {t.queues.url for t in trials}, timeout_s=30)
        assert not [e for t in trials for e in events_of(t.events) if e[0] == "end"], "A was not busy at SIGTERM"
        for trial in trials:
            for process in trial.processes():
                process.send_signal(signal.SIGTERM)
        # A releases its 2 unstarted messages at its release point (2 s polls + 1 s), its 3 jobs still running;
        # no poll of B took them (a drain's poll in flight hides what it finds)
        assert wait_for(lambda: all(counts(local_aws, t.queues.url) == (JOBS - 3, 3) for t in trials), timeout_s=30)
        released.touch()  # then A's jobs end
        for trial in trials:
            assert [p.wait(timeout=40) for p in trial.processes()] == [0, 0]
    finally:
        for trial in trials:
            for process in trial.processes():
                process.kill()
        proxy.stop()
    assert wait_for(lambda: all(counts(local_aws, t.queues.url)[1] == 0 for t in trials), timeout_s=15)
    problems = []
    for n, trial in enumerate(trials):
        ran = {event[1] for event in events_of(trial.events) if event[0] == "start"}
        # Receiving here is one more receive: a message received twice already goes to the DLQ instead.
        left = {
            m["Body"]: int(m["Attributes"]["ApproximateReceiveCount"]) - 1
            for m in receive_all(local_aws, trial.queues.url, vt=60)
        }
        dead = {m["Body"] for m in receive_all(local_aws, trial.queues.dlq_url)}
        assert ran | set(left) | dead == {f"job-{n}-{i}" for i in range(JOBS)}
        if dead - ran:
            problems.append(f"trial {n}: {sorted(dead - ran)} reached the DLQ without ever running")
        over = {body: count for body, count in left.items() if body not in ran and count > 1}
        if over:
            problems.append(f"trial {n}: received more than once without running: {over}")
    assert not problems, "\n".join(problems)


# -- unit: the drain on a scripted client and a clock that moves only when told ------------------------------
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
# UNIT's first lease is 10 s, extended 5 s before it ends, with 1 s polls: the release point is poll_wait + 1 s = 2 s
# after the signal on the fake clock, and no lease falls due before 5 s.


def blocking(gate: threading.Event, runs: list[str], fail: bool = False) -> Callable[[str, Message], None]:
    """A handler that records each body and holds the first until ``gate`` opens (then fails if ``fail``)."""

    def handler(body: str, message: Message) -> None:
        runs.append(body)
        if len(runs) == 1:
            gate.wait(30)
            if fail:
                raise RuntimeError(f"{body} fails")

    return handler


def advance_until(clock: FakeClock, done: Callable[[], bool], step_s: float = 0.25) -> bool:
    """Move the fake clock ``step_s`` at a time until ``done()`` (or 40 steps)."""
    return wait_for(lambda: done() or bool(clock.sleep(step_s)), timeout_s=20, interval_s=0.05)


def test_a_drain_runs_received_messages_on_handlers_that_come_free_before_its_release_point() -> None:
    # GIVEN one handler running "a" and "b" received, waiting for it
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("a", "b", "c")
    gate, runs = threading.Event(), []
    with running_worker(sqs, URL, blocking(gate, runs), concurrency=1, clock=clock, **UNIT) as worker:
        assert wait_for(lambda: runs == ["a"] and worker.handlers.outstanding() == 2, timeout_s=10)
        # WHEN the worker is told to stop, and "a" ends before the release point (the clock stands still)
        worker.shutdown()
        gate.set()
        assert wait_for(lambda: len(sqs.entries("DeleteMessageBatch")) == 2, timeout_s=10)
    # THEN "b" ran on the freed handler: its receive was not wasted; "c" was never received; nothing was released
    assert runs == ["a", "b"] and sqs.releases() == [] and sqs.handle_of("c") == []
    assert [r["Outcome"] for r in emf_records(worker)] == ["success", "success"]


def test_a_drain_releases_what_is_unstarted_at_its_release_point_and_logs_it_released() -> None:
    # GIVEN one handler held on "a" and "b" received
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("a", "b")
    gate, runs = threading.Event(), []
    with running_worker(sqs, URL, blocking(gate, runs), concurrency=1, clock=clock, shutdown_grace=600, **UNIT) as w:
        try:
            assert wait_for(lambda: runs == ["a"] and w.handlers.outstanding() == 2, timeout_s=10)
            # WHEN it is told to stop and the clock passes the release point with "a" still running
            w.shutdown()
            assert advance_until(clock, lambda: bool(sqs.releases()))
        finally:
            gate.set()
    # THEN "b" is released unrun, not before poll_wait + 1 s after the signal, and "a" finished and was deleted
    ((released_at, handle),) = sqs.releases()
    assert handle == sqs.handle_of("b")[0] and released_at >= w.settings.poll_wait + DRAIN_POLL_MARGIN_S
    assert runs == ["a"] and [e["ReceiptHandle"] for e in sqs.entries("DeleteMessageBatch")] == sqs.handle_of("a")
    outcomes = {r["MessageId"]: r for r in emf_records(w)}
    assert outcomes["m-a"]["Outcome"] == "success" and outcomes["m-b"]["Outcome"] == "released"
    assert outcomes["m-b"]["ReceiveCount"] == 1 and outcomes["m-b"]["ProcessingTime"] == 0


def test_a_drain_never_starts_what_its_poll_in_flight_brings_and_releases_it_at_its_release_point() -> None:
    clock = FakeClock()
    sqs = FakeSQS(clock)
    polled, answer, runs = threading.Event(), threading.Event(), []

    def held_poll() -> None:
        polled.set()
        answer.wait(10)

    with running_worker(sqs, URL, lambda body, message: runs.append(body), clock=clock, **UNIT) as worker:
        # GIVEN an idle worker of 2 handlers whose long poll is in flight
        sqs.script("ReceiveMessage", held_poll)
        assert wait_for(polled.is_set, timeout_s=10)
        # WHEN it is told to stop, and then that poll brings a message while both handlers are free
        worker.shutdown()
        sqs.add("late")
        answer.set()
        # THEN the message is not started (the drain may cut it short): released unstarted at the release point
        assert advance_until(clock, lambda: bool(sqs.releases()))
    ((released_at, handle),) = sqs.releases()
    assert runs == [] and handle == sqs.handle_of("late")[0]
    assert released_at >= worker.settings.poll_wait + DRAIN_POLL_MARGIN_S
    assert [r["Outcome"] for r in emf_records(worker)] == ["released"]


def test_when_the_grace_ends_a_drain_releases_the_messages_still_running(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("forever")
    gate, runs = threading.Event(), []
    try:
        with running_worker(sqs, URL, blocking(gate, runs), concurrency=1, clock=clock, shutdown_grace=1, **UNIT) as w:
            assert wait_for(lambda: runs == ["forever"], timeout_s=10)
            w.shutdown()
            assert advance_until(clock, lambda: bool(sqs.releases()))
        assert [h for _, h in sqs.releases()] == sqs.handle_of("forever")
        assert all(at >= 1 for at, _ in sqs.releases())  # at the end of the 1 s grace, not before
        assert "grace period over: releasing 1 messages still being handled" in caplog.text
    finally:
        gate.set()


def hold_the_failed_group_until_the_drain_looks(pool: HandlerPool) -> None:
    """Make ``pool``'s ready queue, when a failed FIFO head hands its group's later messages back, wait (up to 5 s)
    for a drain to look whether messages wait and close: the moment a drain once closed before the group was held."""
    done = pool._ready.done

    def done_then_let_the_drain_look(message: Message, failed: bool) -> list[Message]:
        later = done(message, failed)
        if later:
            wait_for(lambda: pool._released, timeout_s=5)
        return later

    pool._ready.done = done_then_let_the_drain_look  # type: ignore[method-assign]


@pytest.mark.parametrize("drain_looks_meanwhile", [False, True])
def test_a_drain_holds_a_failed_fifo_groups_later_messages_until_its_release_point(
    drain_looks_meanwhile: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Released at once, they could meet the long poll of another worker drained at the same moment, which might
    # have no handler for them: a second receive for messages that never ran. Also when the drain looks whether
    # messages wait at the moment A0's failure takes A1 and A2 out of the ready queue.
    caplog.set_level(logging.INFO, "sqslease")
    clock = FakeClock()
    sqs = FakeSQS(clock)
    sqs.add("A0", "A1", "A2", group="A")
    gate, runs = threading.Event(), []
    settings = {"failure_policy": FailurePolicy.LAPSE, "shutdown_grace": 600, **UNIT}
    with running_worker(sqs, URL + ".fifo", blocking(gate, runs, fail=True), 2, clock=clock, **settings) as w:
        assert wait_for(lambda: runs == ["A0"] and w.handlers.outstanding() == 3, timeout_s=10)
        if drain_looks_meanwhile:
            hold_the_failed_group_until_the_drain_looks(w.handlers)
        # WHEN the worker is told to stop and A0 then fails, before the release point
        w.shutdown()
        gate.set()
        assert wait_for(lambda: emf_records(w), timeout_s=10)
        # THEN A1 and A2 are held back, neither run nor released (released at once, nothing would wait for them)
        held = "message group A: message m-A0 failed; releasing 2 later messages of the group"
        assert wait_for(lambda: held in caplog.text and w.handlers.waiting(), timeout_s=10)
        assert sqs.releases() == [] and runs == ["A0"]
        # and released once the clock passes the release point
        assert advance_until(clock, lambda: len(sqs.releases()) == 2)
    assert sorted(h for _, h in sqs.releases()) == sorted(sqs.handle_of("A1") + sqs.handle_of("A2"))
    assert "releasing 2 messages not yet started" in caplog.text  # by the drain, with the unstarted ones
    assert all(at >= w.settings.poll_wait + DRAIN_POLL_MARGIN_S for at, _ in sqs.releases())
    assert sorted((r["MessageId"], r["Outcome"]) for r in emf_records(w)) == [
        ("m-A0", "failure"),
        ("m-A1", "released"),
        ("m-A2", "released"),
    ]
