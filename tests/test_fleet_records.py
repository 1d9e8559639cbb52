"""The fault fleet's verdicts (support.fleet_records) on hand-written handler records: what counts as completed
twice, re-run after a kill, and two live handlers. Records: ``start|end id pid t handle slack``, ``settled id pid
t``."""

from __future__ import annotations

import pytest
from support.fake_dynamodb import FakeDynamoDB
from support.fakes import FakeClock
from support.fleet_records import completions, lapsed_records, overlapping, runs_of, unwritten_completions

from sqslease.idempotency import IdempotencySettings
from sqslease.idempotency_gate import IdempotencyGate
from sqslease.idempotency_store import IdempotencyStore
from sqslease.lease import Lease
from sqslease.message import Message
from sqslease.settings import LeaseSettings


def verdicts(lines: list[str], death: dict[int, float], killed: set[int]) -> tuple[list[str], list[str], list[str]]:
    runs = runs_of(lines, death)
    twice, after_kill, unwritten = completions(runs, killed).all
    assert unwritten == []
    return twice, after_kill, overlapping(runs)


def test_a_settled_success_run_to_success_again_is_completed_twice() -> None:
    # GIVEN j1 succeeded and was settled by worker 10, then (its delete lost) ran to success on worker 11
    lines = [
        "start j1 10 1.0 h1 3.0", "end j1 10 2.0 h1 2.0", "settled j1 10 2.1",
        "start j1 11 6.0 h2 3.0", "end j1 11 7.0 h2 2.0", "settled j1 11 7.1",
    ]  # fmt: skip
    # THEN it completed twice, with no overlap
    assert verdicts(lines, {}, set()) == (["j1"], [], [])


def test_a_success_killed_before_its_settle_and_run_again_is_a_rerun_after_a_kill() -> None:
    # GIVEN j1's handler returned on worker 10, which was killed -9 before settling it, and j1 ran again
    lines = ["start j1 10 1.0 h1 3.0", "end j1 10 2.0 h1 2.0", "start j1 11 6.0 h2 3.0", "end j1 11 7.0 h2 2.0"]
    # THEN it is not completed twice: its completion was never recorded
    assert verdicts(lines, {10: 2.05}, {10}) == ([], ["j1"], [])


def test_an_unsettled_success_whose_worker_lived_on_is_completed_twice() -> None:
    # GIVEN the same records, but worker 10 was never killed -9 (a SIGTERM, or still alive)
    lines = ["start j1 10 1.0 h1 3.0", "end j1 10 2.0 h1 2.0", "start j1 11 6.0 h2 3.0", "end j1 11 7.0 h2 2.0"]
    # THEN nothing excuses the second success
    assert verdicts(lines, {10: 2.05}, set()) == (["j1"], [], [])


def test_a_handler_killed_mid_job_and_run_again_completed_once() -> None:
    # GIVEN j1 was killed -9 mid-run on worker 10 (no end record), then ran to success on worker 11
    lines = ["start j1 10 1.0 h1 3.0", "start j1 11 6.0 h2 3.0", "end j1 11 7.0 h2 2.0", "settled j1 11 7.1"]
    # THEN one completion, and the dead run did not overlap the live one
    assert verdicts(lines, {10: 3.0}, {10}) == ([], [], [])


def test_a_run_that_starts_before_the_other_ends_is_an_overlap() -> None:
    # GIVEN j1 started on worker 11 while worker 10's run was live
    lines = ["start j1 10 1.0 h1 3.0", "start j1 11 1.5 h2 3.0", "end j1 10 2.0 h1 2.0", "end j1 11 3.0 h2 2.0"]
    assert verdicts(lines, {}, set()) == (["j1"], [], ["j1"])


def test_a_second_success_after_an_unwritten_completion_is_counted_apart() -> None:
    # GIVEN j1 succeeded on worker 10, whose log says its record could not be completed, and ran again (m2 is the
    # same message, received again)
    lines = [
        "start j1 10 1.0 h1 3.0 m1", "end j1 10 2.0 h1 2.0 m1", "settled j1 10 2.1",
        "start j1 11 6.0 h2 3.0 m1", "end j1 11 7.0 h2 2.0 m1", "settled j1 11 7.1",
    ]  # fmt: skip
    log = ["2026-11-25 WARNING sqslease message m1: its idempotency record could not be completed (unavailable): x"]
    # THEN it is counted apart from the jobs completed twice, and only when the log names its message
    runs = runs_of(lines, {})
    assert completions(runs, set(), unwritten_completions(log)).all == ([], [], ["j1"])
    assert completions(
        runs, set(), unwritten_completions(["message m9: its idempotency record could not be completed"])
    ).all == (["j1"], [], [])


def test_the_records_a_worker_logs_as_not_extended_are_counted_from_its_own_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a worker's gate whose three records lapsed under their handlers (one taken over since), logging it
    clock, wall = FakeClock(0.0), FakeClock(1_800_000_000.0)
    store = IdempotencyStore(
        FakeDynamoDB(wall), LeaseSettings(job_type="Fleet0"), IdempotencySettings(table="t"), clock=wall
    )
    gate = IdempotencyGate(store, clock=clock)
    leases = [Lease(f"h{i}", 0.0, 30.0) for i in range(3)]
    assert all(gate.admit(Message(f"j{i}", f"h{i}", "", "q", lease)) is None for i, lease in enumerate(leases))
    wall.now += 30
    assert store.begin("j1", wall() + 30).hold is not None  # another holder's now
    with caplog.at_level("ERROR", "sqslease"):
        assert gate.extend(gate.held([(lease, 60.0) for lease in leases])) == (0, 3)
    # THEN the fleet counts each record the line names, once however often it is logged
    lines = [record.getMessage() for record in caplog.records] * 2
    assert lapsed_records(lines) == {"Fleet0#j0", "Fleet0#j1", "Fleet0#j2"}
    assert lapsed_records(["1 idempotency records not extended (Fleet0#j9, ...): x"]) == {"Fleet0#j9"}
