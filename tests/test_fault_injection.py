"""Fault injection: worker processes behind a proxy that throttles, fails, delays, holds and drops SQS and DynamoDB
requests and lets deleted messages come back, killed with kill -9 and SIGTERM at random, on hundreds of jobs, many
of them longer than the lease (:mod:`support.fleet`).

One run, two queues with the same faults and kills: one consumed with idempotency on, one without. Checked from
the handlers' own records (:mod:`support.fleet_records` defines the terms), on each queue:

- no message lost: every job ended at least once, and the queue and its DLQ end empty;
- no message ran on two live handlers at once (a handler is live from its start to its end, or to its
  process's death: the kill -9, or the exit observed);
- duplicate runs stay within kills x concurrency (plus, without idempotency, one per message brought back);
- with idempotency, no job completed twice; without it, some are (so the check can fail): each lane's first delete
  is always lost, so a message whose run completed comes back to each.

``run_fleet`` is shared with ``bench/fault_bench.py`` (the long, repeated runs). The heartbeat-off control must fail it.
"""

from __future__ import annotations

import pytest
from support.fleet import FleetConfig, FleetReport, run_fleet

from jobqueues.emulator.server import LocalServer

__all__ = ["FleetConfig", "FleetReport", "run_fleet"]

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

#: Per queue: 60 jobs on 2 workers x 3 handlers; 20 % of SQS and of DynamoDB requests faulted, 20 % of deletes lost.
IDEMPOTENCY_FLEET = FleetConfig(
    jobs=60, workers=2, idempotent=(True, False), redeliver_rate=0.2, deadline_s=120, random_state=1
)


def test_fault_injection_fleet_completes_no_job_twice_with_idempotency(local_aws: LocalServer) -> None:
    # GIVEN two queues behind the same faults and kills, one consumed with idempotency on
    # WHEN the fleet runs until every job ended and both queues are empty
    with_idempotency, without = run_fleet(local_aws, IDEMPOTENCY_FLEET)
    summary = f"{with_idempotency.summary()}\n{without.summary()}"
    print(summary)
    # THEN neither loses a message, runs one on two live handlers or exceeds its duplicate budget
    assert with_idempotency.violations() == [], summary
    assert without.violations() == [], summary
    assert with_idempotency.ended == with_idempotency.jobs and without.ended == without.jobs, summary
    # AND with idempotency no job completed twice, though deleted messages came back to it too
    assert with_idempotency.completed_twice == [], summary + "\n" + "\n".join(with_idempotency.details)
    assert with_idempotency.redelivered > 0 and without.redelivered > 0, summary  # (the first delete, at least)
    # AND without it some did: the check can fail (a message whose delete was lost comes back and runs again)
    assert without.completed_twice, summary
    # AND the faults really happened: kills, and > 10 % of each service's requests (20 % asked)
    assert sum(r.kills + r.sigterms for r in (with_idempotency, without)) >= 4, summary
    assert with_idempotency.faults / with_idempotency.requests > 0.1, summary
    assert with_idempotency.dynamodb_faults / with_idempotency.dynamodb_requests > 0.1, summary
    assert without.dynamodb_requests == 0, summary


def test_heartbeat_off_control_fails_the_same_checks(local_aws: LocalServer) -> None:
    # The control: the same fleet and faults without the heartbeat, and free handlers to pick up what lapses. Each
    # job runs until another handler has taken it over (its 4 s lease lapsed; 60 s at most), however long that takes
    # on a loaded machine: its two runs overlap, every time.
    config = FleetConfig(
        jobs=6, long_share=1.0, long_s=(60, 60), until_rerun=True, workers=2, concurrency=6, kill_every_s=1_000,
        heartbeat=False, deadline_s=90,
    )  # fmt: skip
    [report] = run_fleet(local_aws, config)
    print(report.summary())
    assert report.overlaps, report.summary()
    assert any("two live handlers" in problem for problem in report.violations())
