"""The report on the user's own handlers after a chaos run: per deployment (``STACK/JOB_TYPE``), messages lost, run
twice, run on two live handlers at once, and never received. Pure functions of the consumers' EMF lines, what the
proxy saw, and the queues' end state.

Definitions (docs/cli.md, ``--chaos``):

- a message's **deployment** is the one whose queue handed it out (the proxy saw it), else the one whose queue its
  lines name, else its lines' stack and job type (:mod:`jobqueues.emulator.deployments`): a Dev and a Prod Stage's
  messages of one job type are two rows;

- a **run** is an EMF line with an Outcome other than ``released`` (those never ran); it lasted
  ``[end - ProcessingTime, end]``, ``end`` being ``_aws.Timestamp`` (ms, when processing ended). A process killed
  mid-handler writes no line: its run is not counted anywhere (a kill is not a live handler);
- **ran twice**: more than one ``success`` line for one MessageId;
- **ran on two live handlers at once**: two runs of one MessageId whose intervals overlap by more than
  ``tolerance_ms`` (default 1 ms: the timestamps' resolution), written by different processes or by one (a
  worker with concurrency > 1 can run a message whose lease lapsed on two of its handlers at once: seen with
  the heartbeat off);
- **lost**: received by a consumer (the proxy saw the server hand it out, or a consumer wrote a line for it),
  never completed (no ``success`` line), not dead-lettered (not among the DLQ's ids at the end, no
  ``dead_lettered`` line) and not still in its queue at the end;
- **never received**: still in its queue at the end and never handed to a consumer: not received before the stop
  (sent shortly before it, or while its consumer was busy or not yet scaled out), or **stuck** when its consumer
  stopped receiving (a local Lambda poller that failed: ``stopped_receiving``); the report says which.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobqueues.emulator.chaos.ledger import Observations
from jobqueues.emulator.chaos.runs import Run
from jobqueues.emulator.deployments import deployment_of, queue_deployments
from sqslease.emf import UNRUN_OUTCOMES


@dataclass(frozen=True)
class QueueState:
    """One deployment's queues at the end of the run: its name (``STACK/JOB_TYPE``), the message ids still in its
    source queue (visible, in flight or delayed) and in its dead-letter queue (a copy sqslease dead-lettered counts
    by its ``sqslease.source_message_id``)."""

    name: str
    queue_url: str
    queued: frozenset[str] = frozenset()
    dead_lettered: frozenset[str] = frozenset()


@dataclass(frozen=True)
class JobTypeReport:
    """One deployment (``name``: ``STACK/JOB_TYPE``). Counts are of distinct message ids; the tuples list them,
    sorted. ``still_queued`` counts every message left in its queue, received or not."""

    name: str
    received: int
    completed: int
    dead_lettered: int
    still_queued: int
    lost: tuple[str, ...] = ()
    ran_twice: tuple[str, ...] = ()
    two_live_handlers: tuple[str, ...] = ()
    never_received: tuple[str, ...] = ()
    #: Why its consumer stopped receiving (``None``: it did not; its never-received messages were only not
    #: received before the stop).
    stopped_receiving: str | None = None

    def never_received_why(self) -> str:
        """What is known of its never-received messages: stuck, or not received before the stop."""
        if self.stopped_receiving is not None:
            return f"stuck: its consumer stopped receiving: {self.stopped_receiving}"
        return "not received before the stop"


@dataclass(frozen=True)
class ChaosReport:
    """Per deployment, and what chaos did: SQS requests and their faults by kind, kill -9 and SIGTERM sent."""

    job_types: tuple[JobTypeReport, ...]
    sqs_requests: int = 0
    faults: Mapping[str, int] = field(default_factory=dict)
    kills: int = 0
    sigterms: int = 0

    @property
    def lost(self) -> int:
        return sum(len(row.lost) for row in self.job_types)

    @property
    def ran_twice(self) -> int:
        return sum(len(row.ran_twice) for row in self.job_types)

    @property
    def two_live_handlers(self) -> int:
        return sum(len(row.two_live_handlers) for row in self.job_types)

    @property
    def never_received(self) -> int:
        return sum(len(row.never_received) for row in self.job_types)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` (stable keys)."""
        return {
            "sqs_requests": self.sqs_requests,
            "faults": dict(self.faults),
            "kills": self.kills,
            "sigterms": self.sigterms,
            "job_types": [
                {
                    "name": row.name,
                    "received": row.received,
                    "completed": row.completed,
                    "dead_lettered": row.dead_lettered,
                    "still_queued": row.still_queued,
                    "lost": list(row.lost),
                    "ran_twice": list(row.ran_twice),
                    "two_live_handlers": list(row.two_live_handlers),
                    "never_received": list(row.never_received),
                }
                for row in self.job_types
            ],
        }

    def format(self, examples: int = 3) -> str:
        """The report for the terminal: a table, then up to ``examples`` message ids of each problem."""
        faulted = sum(self.faults.values())
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.faults.items())) or "none"
        share = 100 * faulted / self.sqs_requests if self.sqs_requests else 0.0
        lines = [
            f"chaos: {faulted} of {self.sqs_requests} SQS requests faulted ({share:.1f} %: {kinds}); "
            f"{self.kills} kill -9, {self.sigterms} SIGTERM",
            f"{'stack/job type':<32} {'received':>8} {'completed':>9} {'DLQ':>5} {'queued':>6} {'lost':>5} "
            f"{'ran twice':>9} {'two live handlers':>17} {'never received':>14}",
        ]
        for row in self.job_types:
            lines.append(
                f"{row.name:<32} {row.received:>8} {row.completed:>9} {row.dead_lettered:>5} {row.still_queued:>6} "
                f"{len(row.lost):>5} {len(row.ran_twice):>9} {len(row.two_live_handlers):>17} "
                f"{len(row.never_received):>14}"
            )
        problems = ("lost", "ran twice", "two live", "never received")
        for row in self.job_types:
            lists = (row.lost, row.ran_twice, row.two_live_handlers, row.never_received)
            for label, ids in zip(problems, lists, strict=True):
                if ids:
                    why = f" ({row.never_received_why()})" if label == "never received" else ""
                    more = " ..." * (len(ids) > examples)
                    lines.append(f"  {row.name} {label}: {', '.join(ids[:examples])}{more}{why}")
        lines.append(
            "lost: received, never completed, not in the DLQ nor in its queue. ran twice: more than one success "
            "(a handler killed mid-job runs again: handlers must be idempotent). two live handlers: two runs of "
            "one message overlapping in time (a lease that lapsed). never received: left in its queue, not handed "
            "to a consumer before the stop (its line says when its consumer had stopped receiving)."
        )
        return "\n".join(lines)


def build_report(
    runs: Sequence[Run],
    observations: Observations,
    final_state: Sequence[QueueState],
    *,
    faults: Mapping[str, int] | None = None,
    sqs_requests: int = 0,
    kills: int = 0,
    sigterms: int = 0,
    tolerance_ms: float = 1.0,
    stopped_receiving: Mapping[str, str] | None = None,
) -> ChaosReport:
    """The report (definitions in the module docstring). A message's row is the deployment whose queue handed it
    out (``final_state``), else the one whose queue its lines name, else its lines' stack and job type, else the
    name of the queue that handed it out. ``stopped_receiving``: deployment -> why its consumer stopped receiving
    (its never-received messages are then stuck). Default: none did."""
    runs_of: dict[str, list[Run]] = collections.defaultdict(list)
    for run in runs:
        runs_of[run.message_id].append(run)
    rows = _rows(runs_of, _deployments(runs_of, observations, final_state), final_state, tolerance_ms)
    return ChaosReport(
        job_types=tuple(
            JobTypeReport(
                name=name,
                received=len(row["received"]),
                completed=len(row["completed"]),
                dead_lettered=len(row["dead_lettered"]),
                still_queued=len(row["queued"]),
                lost=tuple(sorted(row["lost"])),
                ran_twice=tuple(sorted(row["ran_twice"])),
                two_live_handlers=tuple(sorted(row["two_live"])),
                never_received=tuple(sorted(row["never_received"])),
                stopped_receiving=(stopped_receiving or {}).get(name),
            )
            for name, row in sorted(rows.items())
        ),
        sqs_requests=sqs_requests,
        faults=dict(faults or {}),
        kills=kills,
        sigterms=sigterms,
    )


def _deployments(
    runs_of: Mapping[str, Sequence[Run]], observations: Observations, final_state: Sequence[QueueState]
) -> dict[str, str]:
    """Message id -> its row (see :func:`build_report`), for every message received or written about."""
    by_queue = queue_deployments((state.name, state.queue_url) for state in final_state)
    deployment: dict[str, str] = {}
    for message_id, message_runs in runs_of.items():
        deployment[message_id] = deployment_of(message_runs[0].record, by_queue) or ""
    for message_id, queue in observations.received.items():
        deployment[message_id] = by_queue.get(queue) or deployment.get(message_id) or queue
    return deployment


def _rows(
    runs_of: Mapping[str, Sequence[Run]],
    deployment: Mapping[str, str],
    final_state: Sequence[QueueState],
    tolerance_ms: float,
) -> dict[str, dict[str, set[str]]]:
    """Deployment -> what befell its messages: ``received``, ``completed``, ``ran_twice``, ``dead_lettered``,
    ``queued``, ``lost``, ``two_live``, ``never_received`` -> the message ids (definitions in the module
    docstring); every deployment of ``final_state`` has its row."""
    queued = {message_id for state in final_state for message_id in state.queued}
    in_dlq = {message_id for state in final_state for message_id in state.dead_lettered}
    rows: dict[str, dict[str, set[str]]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for state in final_state:  # every message left in a queue, received or not: one never received is stuck
        for message_id in state.queued:
            if message_id not in deployment:
                rows[state.name]["never_received"].add(message_id)
                rows[state.name]["queued"].add(message_id)
    for message_id, name in deployment.items():
        row = rows[name]
        message_runs = runs_of.get(message_id, [])
        successes = sum(run.outcome == "success" for run in message_runs)
        dead = message_id in in_dlq or any(run.outcome == "dead_lettered" for run in message_runs)
        row["received"].add(message_id)
        if successes:
            row["completed"].add(message_id)
        if successes > 1:
            row["ran_twice"].add(message_id)
        if dead:
            row["dead_lettered"].add(message_id)
        if message_id in queued:
            row["queued"].add(message_id)
        if not successes and not dead and message_id not in queued:
            row["lost"].add(message_id)
        if _two_live(message_runs, tolerance_ms):
            row["two_live"].add(message_id)
    for state in final_state:
        rows[state.name]  # a deployment that received nothing still gets its row
    return rows


def _two_live(runs: Sequence[Run], tolerance_ms: float) -> bool:
    ran = [run for run in runs if run.outcome not in UNRUN_OUTCOMES]  # released, or stopped by idempotency
    return any(
        min(a.end_ms, b.end_ms) - max(a.start_ms, b.start_ms) > tolerance_ms for a, b in itertools.combinations(ran, 2)
    )
