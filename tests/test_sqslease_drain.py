"""A drain (SIGTERM to several workers of one queue at once, as in a deployment or scale-in) against moto_server.

Budget: a drain costs a message that did not run at most the one receive that brought it to the draining worker,
so with ``maxReceiveCount`` >= 2 no drain sends a message that never ran to the DLQ. moto_server, like SQS, keeps
a long poll open after its client went away and marks what it then finds as received.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sqs_helpers import Queues, counts, events_of, make_queue, receive_all, send, start_worker_process, wait_for

from local_emulator.server import LocalServer

TRIALS = 3
JOBS = 5  # worker A: 3 running, 2 received but not started
#: 4 s leases (threshold 1 s): a first lease of 4 s and 2 s long polls.
SETTINGS = {
    "SQSLEASE_VISIBILITY_TIMEOUT": "4",
    "SQSLEASE_EXTENSION_THRESHOLD": "1",
    "SQSLEASE_WAIT_TIME": "2",
    "SLOW_JOB_SECONDS": "8",  # A is still busy when both are signalled
}


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
    trials = []
    for n in range(TRIALS):  # the trials run side by side, each on its own queue
        trial = Trial(make_queue(local_aws, vt=600, max_receive_count=2), tmp_path / f"events-{n}")
        send(local_aws, trial.queues.url, [f"job-{n}-{i}" for i in range(JOBS)])
        trial.busy = start_worker_process(
            local_aws, trial.queues.url, trial.events, quiet=True, concurrency=3, **SETTINGS
        )
        trials.append(trial)
    try:
        # A holds 3 running and 2 unstarted
        assert wait_for(lambda: all(len(events_of(t.events)) == 3 for t in trials), timeout_s=30)
        assert wait_for(lambda: all(counts(local_aws, t.queues.url) == (0, JOBS) for t in trials), timeout_s=10)
        for n, trial in enumerate(trials):
            trial.idle_log = tmp_path / f"idle-{n}.log"
            trial.idle = start_worker_process(
                local_aws, trial.queues.url, trial.events, concurrency=3, log=trial.idle_log, **SETTINGS
            )
        assert wait_for(lambda: all("consuming" in t.log_text() for t in trials), timeout_s=30)
        time.sleep(0.5)  # their polls are in flight
        assert not [e for t in trials for e in events_of(t.events) if e[0] == "end"], "A was not busy at SIGTERM"
        for trial in trials:
            for process in trial.processes():
                process.send_signal(signal.SIGTERM)
        for trial in trials:
            assert [p.wait(timeout=40) for p in trial.processes()] == [0, 0]
    finally:
        for trial in trials:
            for process in trial.processes():
                process.kill()
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
