"""The chaos killer on fake processes: which worker, which signal, how often (no wall-clock waits)."""

from __future__ import annotations

import random
import signal

import pytest

from jobqueues.emulator.chaos.killer import Killer


class FakeProcess:
    def __init__(self, pid: int, exited: bool = False, gone: bool = False) -> None:
        self.pid = pid
        self.returncode: int | None = 0 if exited else None
        self.gone = gone  # exits between poll() and the signal
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.gone:
            raise ProcessLookupError(self.pid)
        self.signals.append(sig)


def test_each_tick_signals_one_live_worker_never_twice() -> None:
    fleet = [FakeProcess(1), FakeProcess(2, exited=True), FakeProcess(3), FakeProcess(4)]
    killer = Killer(lambda: fleet, interval_s=5, rng=random.Random(7), clock=lambda: 42.0)
    victims = [killer.tick() for _ in range(4)]
    signalled = [kill.pid for kill in victims if kill]
    assert sorted(signalled) == [1, 3, 4]  # each live one once; the exited one never
    assert victims[3] is None and killer.idle_ticks == 1
    assert fleet[1].signals == []
    assert all(len(process.signals) == 1 for process in fleet if process.pid != 2)
    assert {kill.at for kill in killer.kills} == {42.0}
    assert killer.sigkills + killer.sigterms == 3


def test_signals_are_half_kill_9_half_sigterm_and_reproducible() -> None:
    def run(seed: int) -> list[tuple[int, int]]:
        fleet = [FakeProcess(pid) for pid in range(400)]
        killer = Killer(lambda: fleet, interval_s=1, rng=random.Random(seed))
        for _ in range(400):
            killer.tick()
        return [(kill.pid, kill.signal) for kill in killer.kills]

    kills = run(3)
    assert kills == run(3)
    assert kills != run(4)
    sigkills = sum(sig == signal.SIGKILL for _, sig in kills)
    assert {sig for _, sig in kills} == {signal.SIGKILL, signal.SIGTERM}
    assert 150 < sigkills < 250  # binomial(400, 0.5): 5 sigma either way


def test_sigkill_share() -> None:
    fleet = [FakeProcess(pid) for pid in range(50)]
    killer = Killer(lambda: fleet, interval_s=1, rng=random.Random(1), sigkill_share=1.0)
    for _ in range(50):
        killer.tick()
    assert killer.sigkills == 50 and killer.sigterms == 0


def test_a_worker_gone_before_its_signal_is_not_counted() -> None:
    killer = Killer(lambda: [FakeProcess(9, gone=True)], interval_s=1, rng=random.Random(1))
    assert killer.tick() is None
    assert killer.kills == []


def test_run_ticks_once_per_interval_until_told_to_stop() -> None:
    waits: list[float] = []
    fleet = [FakeProcess(pid) for pid in range(10)]

    def wait(seconds: float) -> bool:  # the injected sleep: stop after the fourth interval
        waits.append(seconds)
        return len(waits) > 4

    killer = Killer(lambda: fleet, interval_s=15, rng=random.Random(2), wait=wait)
    killer.run()
    assert waits == [15] * 5
    assert len(killer.kills) == 4


def test_stop_ends_the_thread() -> None:
    killer = Killer(list, interval_s=3_600, rng=random.Random(1)).start()
    killer.stop(timeout_s=10)
    assert killer._thread is not None and not killer._thread.is_alive()
    assert killer.kills == [] and killer.idle_ticks == 0


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        Killer(list, interval_s=0, rng=random.Random(1))
