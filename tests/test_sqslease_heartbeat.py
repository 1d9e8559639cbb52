"""The heartbeat and the settler: deterministic unit tests on a scripted client and clock, and integration tests
against a real SQS endpoint (moto_server over HTTP)."""

from __future__ import annotations

import itertools
import logging
import threading
import time

import pytest
from support.fakes import FakeClock, FakeSQS
from support.moto_queues import make_queue, receive_all, receive_when_visible, send
from support.recording import CallRecorder
from support.waiting import wait_for

from jobqueues.emulator.server import LocalServer
from sqslease.heartbeat import Heartbeat
from sqslease.lease import LeaseState
from sqslease.lease_table import LeaseScheduler
from sqslease.retry import FatalSqsError
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

SETTINGS = LeaseSettings(visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.2, pull_forward=0)
SLOW = LeaseSettings(visibility_timeout=30, extension_threshold=5, heartbeat_interval=0.2, pull_forward=0)


def table(settings: LeaseSettings, deadlines: list[float], received_at: float = 0.0) -> tuple[LeaseScheduler, list]:
    """Leases received at ``received_at`` (the clock's time: a test on the real clock passes ``time.monotonic()``,
    or a machine up longer than ``max_total_lease`` finds every lease past its maximum)."""
    scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
    return scheduler, [scheduler.add(f"h{i}", received_at, d) for i, d in enumerate(deadlines)]


# -- unit: scripted client, injected clock ------------------------------------------------------------
def test_a_tick_never_waits_for_a_held_request() -> None:
    clock = FakeClock(0.0)
    held = threading.Event()
    sqs = FakeSQS(clock).script("ChangeMessageVisibilityBatch", held)
    scheduler, (first, second) = table(SLOW, [4.0, 8.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    try:
        first_tick = heartbeat.tick()  # the first lease's request is held
        assert not first_tick.rounds[0].done()  # the tick returned while its round's request is still held
        clock.now = 3.9  # (the first lease runs to 4.0: answered after that, its extension would not count)
        assert heartbeat.tick().wait(timeout=5).extended == 1  # the second lease's round ends meanwhile
        assert second.extensions == 1 and first.extensions == 0 and first.state is LeaseState.EXTENDING
        held.set()
        assert first_tick.wait(timeout=5).extended == 1
    finally:
        held.set()
        heartbeat.stop()


def test_throttled_retries_back_off_never_faster_and_stay_within_the_slack(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(0.0)
    sqs = FakeSQS(clock).script("ChangeMessageVisibilityBatch", *["throttle"] * 100)
    scheduler, (lease,) = table(SLOW, [4.8])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, "sqslease"):
        stats = heartbeat.tick().wait(timeout=5)
    heartbeat.stop()
    times = [at for at, _, _ in sqs.calls]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    interval = SLOW.heartbeat_interval
    assert gaps[0] >= interval and gaps[1] >= 2 * interval  # backs off: slower, doubling
    for gap, before in zip(gaps, times, strict=False):  # never faster than a tick while two ticks of slack remain
        assert gap >= min(interval, (4.8 - before) / 2) - 1e-9
    assert times[-1] < 4.8 and len(times) < 30  # bounded by the slack: the last try is before the lapse
    assert lease.lost and stats.lost == 1 and stats.throttled == len(times)
    messages = [r.getMessage() for r in caplog.records]
    at_risk = next(i for i, m in enumerate(messages) if "at risk" in m)
    assert at_risk < next(i for i, m in enumerate(messages) if "ran out" in m)  # logged before it lapsed


def test_a_round_that_starts_after_its_lease_ran_out_sends_nothing_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A round that starts late (a starved process, every request slot busy) must not extend a lease that already
    # ran out: another consumer may hold the message, and SQS can accept the old receipt handle.
    clock = FakeClock(0.0)
    sqs = FakeSQS(clock)
    scheduler, (late, fine) = table(SLOW, [4.8, 6.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    due = scheduler.take_due(1.5)
    assert due == [late, fine]
    clock.now = 5.0  # the round only now gets to send
    with caplog.at_level(logging.ERROR, "sqslease"):
        stats = heartbeat._round(due)
    heartbeat.stop()
    assert [entry["ReceiptHandle"] for _, _, entries in sqs.calls for entry in entries] == ["h1"]
    assert late.lost and not fine.lost and fine.extensions == 1
    assert stats.lost == 1 and stats.extended == 1
    assert any("ran out before its extension" in r.getMessage() for r in caplog.records)


STARVED = (
    "The heartbeat did not get to run in time: a thread kept the GIL (a handler computing and writing often), or "
    'the process had too little CPU; see docs/sqslease.md, "How leases are kept"'
)


def test_a_tick_that_comes_late_warns_while_its_leases_are_still_in_time(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN leases of a 5 s threshold on a 0.2 s tick: a tick on time leaves each at least 4.8 s when it extends it
    clock = FakeClock(0.0)
    sqs = FakeSQS(clock)
    scheduler, (short, later) = table(SLOW, [30.0, 31.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, "sqslease"):
        # WHEN the heartbeat's thread ticks only 3 s after the first lease came due (a handler kept the GIL)
        clock.now = 28.0
        stats = heartbeat.scheduled_tick().wait(timeout=5)
    heartbeat.stop()
    # THEN both are extended, and one warning counts the lease left with under half that (2.4 s), says what it
    # had left, and why
    assert stats.extended == 2 and short.extensions == 1 and later.extensions == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "heartbeat ran late: extending 1 of 2 leases (h0) with less than 2.40 s left (the least 2.000 s), where a "
        "tick on time leaves 4.80 s. " + STARVED
    ]


def test_a_round_that_sends_late_warns_though_its_tick_was_on_time(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a lease taken by a tick on time (25.2 s: 4.8 s left), its round's request sent only at 28.5 s (the round's
    # thread got the GIL late: a trial found DEBUG slacks under 1 s with no warning when only the tick was judged)
    clock = FakeClock(25.2)
    sqs = FakeSQS(clock)
    scheduler, _ = table(SLOW, [30.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    due = scheduler.take_due(clock.now)
    clock.now = 28.5
    with caplog.at_level(logging.WARNING, "sqslease"):
        stats = heartbeat._round(due, judged=True)
    heartbeat.stop()
    # THEN the round warns, with what the lease had left when its request went
    assert stats.extended == 1
    assert [r.getMessage() for r in caplog.records] == [
        "heartbeat ran late: extending 1 of 1 leases (h0) with less than 2.40 s left (the least 1.500 s), where a "
        "tick on time leaves 4.80 s. " + STARVED
    ]


def test_an_extension_answered_after_its_lease_ran_out_marks_the_lease_lost(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN two leases in one round, its request sent in time (the first has 1 s left), but answered only after
    # the first ran out (its thread starved of the GIL: a trial's observer received such a message again while the
    # worker logged nothing and counted it a success)
    clock = FakeClock(29.0)
    sqs = FakeSQS(clock).script("ChangeMessageVisibilityBatch", lambda: setattr(clock, "now", 30.5))
    scheduler, (gone, kept) = table(SLOW, [30.0, 33.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    due = scheduler.take_due(clock.now)
    with caplog.at_level(logging.ERROR, "sqslease"):
        stats = heartbeat._round(due)
    heartbeat.stop()
    # THEN the first is lost (it may have landed after its end: SQS accepts the old receipt handle all the same),
    # the second extended from when the request was sent, and one error says so
    assert gone.lost and gone.extensions == 0
    assert not kept.lost and kept.extensions == 1 and kept.deadline == 29.0 + SLOW.visibility_timeout
    assert (stats.lost, stats.extended) == (1, 1)
    assert [r.getMessage() for r in caplog.records] == [
        "extension of 1 leases (h0) answered 0.50 s after the first of them ran out: it may have landed too late, "
        "and the message be with another consumer; marked lost (not settled when its handler ends). " + STARVED
    ]


def test_a_tick_on_time_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a lease due at 25 s (its deadline 30 s, a 5 s threshold), and a tick 0.2 s after that: on time
    clock = FakeClock(25.2)
    sqs = FakeSQS(clock)
    scheduler, (lease,) = table(SLOW, [30.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, "sqslease"):
        stats = heartbeat.scheduled_tick().wait(timeout=5)
        # AND a tick with nothing due (the lease extended to 55.2 s) says nothing either: no lease was at risk
        clock.now = 40.0
        heartbeat.scheduled_tick()
    heartbeat.stop()
    assert stats.extended == 1 and lease.extensions == 1
    assert [r.getMessage() for r in caplog.records] == []


def test_transient_errors_and_timeouts_are_retried_within_the_round() -> None:
    clock = FakeClock(0.0)
    sqs = FakeSQS(clock).script("ChangeMessageVisibilityBatch", "error500", "timeout", "ok")
    scheduler, (lease,) = table(SLOW, [4.8])
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep)
    stats = heartbeat.tick().wait(timeout=5)
    heartbeat.stop()
    assert stats.requests == 3 and stats.extended == 1 and stats.lost == 0
    assert lease.state is LeaseState.ACTIVE and lease.extensions == 1
    assert clock.now < 1  # 5xx and timeouts retry quickly (0.05 s doubling), not at the throttle pace


def test_a_fatal_error_is_reported_once_and_never_retried() -> None:
    clock = FakeClock(0.0)
    sqs = FakeSQS(clock).script("ChangeMessageVisibilityBatch", "access_denied")
    scheduler, _leases = table(SLOW, [4.8] * 3)
    reported: list[FatalSqsError] = []
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW, clock=clock, sleep=clock.sleep, on_fatal=reported.append)
    heartbeat.tick().wait(timeout=5)
    clock.now = 10
    heartbeat.tick().wait(timeout=5)  # a fatal heartbeat sends nothing more
    heartbeat.stop()
    assert len(sqs.calls) == 1 and len(reported) == 1 and reported[0].code == "AccessDeniedException"


def test_extensions_stop_at_the_maximum_total_lease() -> None:
    settings = LeaseSettings(
        visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.2, pull_forward=0, max_total_lease=2.5
    )
    clock = FakeClock(1.1)
    sqs = FakeSQS(clock)
    scheduler, (lease,) = table(settings, [2.0])
    heartbeat = Heartbeat(sqs, "q", scheduler, settings, clock=clock, sleep=clock.sleep)
    heartbeat.tick().wait(timeout=5)  # 1.1 s in: only 1 s more may be asked (2.5 s in all)
    clock.now = 2.1
    stats = heartbeat.tick().wait(timeout=5)  # at the limit: kept, never extended again
    heartbeat.stop()
    assert [entries[0]["VisibilityTimeout"] for _, _, entries in sqs.calls] == [1]
    assert stats.limit_reached == 1 and not lease.lost


def test_a_lease_is_extended_while_its_delete_is_held_and_a_failed_delete_is_retried() -> None:
    held = threading.Event()
    sqs = FakeSQS().script("DeleteMessageBatch", "error500", held)  # fails, then its retry is held
    scheduler, (lease,) = table(SLOW, [3], received_at=time.monotonic())  # 3 s left: due now
    settler = Settler(sqs, "q", scheduler)
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW)
    try:
        future = settler.delete(lease)
        assert wait_for(lambda: len(sqs.of("DeleteMessageBatch")) == 2, timeout_s=5)
        assert heartbeat.tick().wait(timeout=5).extended == 1  # the delete is in flight: the lease is still held
        held.set()
        assert future.result(timeout=5) is True
    finally:
        held.set()
        settler.close(timeout=5)
        heartbeat.stop()
    assert len(sqs.of("DeleteMessageBatch")) == 2 and lease.state is LeaseState.DELETED


def test_a_release_waits_for_the_extension_in_flight_on_the_sender_thread_not_the_handler() -> None:
    held = threading.Event()
    extension_answered_first: list[bool] = []  # when the release went out, whether the extension was answered
    sqs = FakeSQS().script("ChangeMessageVisibilityBatch", held, lambda: extension_answered_first.append(held.is_set()))
    scheduler, (lease,) = table(SLOW, [3], received_at=time.monotonic())  # 3 s left: due now
    waits: list[bool | None] = []  # the sender's looks at the lease: None while the extension is in flight
    change_ready = scheduler.change_ready
    scheduler.change_ready = lambda lease: waits.append(change_ready(lease)) or waits[-1]  # type: ignore[method-assign]
    settler = Settler(sqs, "q", scheduler)
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW)
    try:
        tick = heartbeat.tick()
        assert wait_for(lambda: sqs.calls, timeout_s=5)  # the extension is in flight
        future = settler.change_visibility(lease, 0)
        assert not tick.rounds[0].done() and not future.done()  # the caller never waits for the extension
        assert wait_for(lambda: None in waits, timeout_s=10)  # the sender thread waits for it instead
        assert len(sqs.calls) == 1  # and the release is not sent before the extension's answer
        held.set()
        assert tick.wait(timeout=5).extended == 1 and future.result(timeout=5) is True
        assert extension_answered_first == [True]
    finally:
        held.set()
        settler.close(timeout=5)
        heartbeat.stop()
    assert [entries[0]["VisibilityTimeout"] for _, _, entries in sqs.calls] == [30, 0]
    assert lease.state is LeaseState.RELEASED


def test_the_heartbeat_thread_backs_off_when_throttled() -> None:
    # Real time, real thread: throttling used to make ticks faster (interval x uniform(0.5, 1)).
    sqs = FakeSQS().script("ChangeMessageVisibilityBatch", *["throttle"] * 1000)
    scheduler = LeaseScheduler(SLOW.extension_threshold, SLOW.pull_forward)
    scheduler.add("h", time.monotonic() - 25.2, 30)  # due now, 4.8 s of slack
    heartbeat = Heartbeat(sqs, "q", scheduler, SLOW).start()
    assert wait_for(lambda: len(sqs.calls) >= 3, timeout_s=30)  # a first try and two retries
    heartbeat.stop()
    times = [at for at, _, _ in sqs.calls]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) >= 2 and min(gaps) >= 0.95 * SLOW.heartbeat_interval, gaps


# -- integration: moto_server --------------------------------------------------------------------------
#: Extensions of 30 s, asked 1 s before a lease ends: the leases scheduled on a FakeClock fall due when the test
#: moves it, and an extension outlasts any wait of the test (moto, unlike SQS, extends a lapsed lease too).
EXTEND_30 = LeaseSettings(visibility_timeout=30, extension_threshold=1, heartbeat_interval=0.2, pull_forward=0)


def received_leases(
    local_aws: LocalServer, count: int, vt: int = 2, clock: FakeClock | None = None
) -> tuple[str, LeaseScheduler, list]:
    """``count`` messages received with a ``vt`` s lease, scheduled on ``clock`` (from 0) or the real clock."""
    queues = make_queue(local_aws, vt=vt)
    send(local_aws, queues.url, [f"m{i}" for i in range(count)])
    scheduler = LeaseScheduler(SETTINGS.extension_threshold, SETTINGS.pull_forward)
    sent_at = clock() if clock else time.monotonic()
    messages = receive_all(local_aws, queues.url, vt=vt)
    assert len(messages) == count
    leases = [scheduler.add(m["ReceiptHandle"], sent_at, vt) for m in messages]
    return queues.url, scheduler, leases


def test_eleven_plus_due_leases_go_out_in_correctly_sized_batches(local_aws: LocalServer) -> None:
    clock = FakeClock(0.0)
    received = time.monotonic()
    url, scheduler, leases = received_leases(local_aws, 25, clock=clock)
    recorder = CallRecorder()
    sqs = recorder.attach(local_aws.client("sqs"))
    heartbeat = Heartbeat(sqs, url, scheduler, EXTEND_30, clock=clock, sleep=clock.sleep)
    clock.now = 1.1  # all 25 are now within the 1 s threshold
    stats = heartbeat.tick().wait(timeout=10)
    heartbeat.stop()
    calls = recorder.of("ChangeMessageVisibilityBatch")
    assert stats.due == 25 and stats.requests == 3 and stats.extended == 25
    assert sorted(len(c.params["Entries"]) for c in calls) == [5, 10, 10]
    for call in calls:  # positional ids, never message ids
        assert [e["Id"] for e in call.params["Entries"]] == [str(i) for i in range(len(call.params["Entries"]))]
    assert [c.params["Entries"][0]["VisibilityTimeout"] for c in calls] == [30] * 3
    # past the original 2 s visibility timeout (a deadline of moto's, in real time): still invisible, extended
    assert wait_for(lambda: time.monotonic() > received + 2.5, timeout_s=10)
    assert receive_all(local_aws, url) == []
    assert all(lease.extensions == 1 for lease in leases)


def test_invalid_receipt_handle_marks_only_that_lease_lost(local_aws: LocalServer) -> None:
    clock = FakeClock(0.0)
    url, scheduler, leases = received_leases(local_aws, 3, clock=clock)
    bogus = scheduler.add("not-a-receipt-handle", clock(), 2)
    heartbeat = Heartbeat(local_aws.client("sqs"), url, scheduler, EXTEND_30, clock=clock, sleep=clock.sleep)
    clock.now = 1.1  # all 4 are now within the 1 s threshold
    stats = heartbeat.tick().wait(timeout=10)
    heartbeat.stop()
    assert stats.requests == 1 and stats.extended == 3 and stats.lost == 1
    assert bogus.lost and not any(lease.lost for lease in leases)


def test_heartbeat_thread_keeps_a_message_invisible_until_stopped(local_aws: LocalServer) -> None:
    # End to end on the real clock: the heartbeat thread's own ticks against moto's own clock.
    received = time.monotonic()
    url, scheduler, (lease,) = received_leases(local_aws, 1)
    heartbeat = Heartbeat(local_aws.client("sqs"), url, scheduler, SETTINGS).start()
    # more than twice the 2 s visibility timeout, on extensions: still invisible
    assert wait_for(lambda: lease.extensions >= 3 and time.monotonic() > received + 4.5, timeout_s=30)
    assert receive_all(local_aws, url) == []
    heartbeat.stop()
    assert not lease.lost
    found, _ = receive_when_visible(local_aws, url, timeout_s=15)
    assert len(found) == 1  # it lapses once extensions stop
