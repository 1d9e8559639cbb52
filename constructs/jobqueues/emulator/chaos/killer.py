"""Periodic kill -9 and SIGTERM of the local workers: the crashes and scale-ins a fleet sees on ECS."""

from __future__ import annotations

import logging
import random
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

logger = logging.getLogger("jobqueues.emulator.chaos")


class Process(Protocol):
    """What the killer needs of a worker process (``subprocess.Popen`` is one)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int) -> None: ...


@dataclass(frozen=True)
class Kill:
    """One signal sent: ``at`` on the killer's clock (monotonic seconds by default)."""

    at: float
    pid: int
    signal: int


class Killer:
    """Every ``interval_s`` seconds, sends one live worker ``SIGKILL`` (share ``sigkill_share``, default 0.5) or
    ``SIGTERM`` (the rest), the worker and the signal drawn from ``rng``.

    ``workers()`` (the runner's) lists the worker processes now; the killer skips those that exited or that it
    already signalled (a worker draining after SIGTERM is left to finish). Starting replacements is the runner's
    job (its scaling policy). ``wait(seconds)`` waits between ticks and returns True when the killer should stop
    (default: an internal event that :meth:`stop` sets); ``clock`` stamps :attr:`kills`. Both are injectable for
    tests, which can also call :meth:`tick` directly.
    """

    def __init__(
        self,
        workers: Callable[[], Sequence[Process]],
        interval_s: float,
        rng: random.Random,
        sigkill_share: float = 0.5,
        wait: Callable[[float], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.workers = workers
        self.interval_s = interval_s
        self.rng = rng
        self.sigkill_share = sigkill_share
        self.clock = clock
        self.kills: list[Kill] = []
        self.idle_ticks = 0  # ticks that found no live worker
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._signalled: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def sigkills(self) -> int:
        with self._lock:
            return sum(kill.signal == signal.SIGKILL for kill in self.kills)

    @property
    def sigterms(self) -> int:
        with self._lock:
            return sum(kill.signal == signal.SIGTERM for kill in self.kills)

    def tick(self) -> Kill | None:
        """Signal one live worker now; None if there was none."""
        live = [process for process in self.workers() if process.poll() is None and process.pid not in self._signalled]
        if not live:
            self.idle_ticks += 1
            return None
        victim = live[self.rng.randrange(len(live))]
        sig = signal.SIGKILL if self.rng.random() < self.sigkill_share else signal.SIGTERM
        try:
            victim.send_signal(sig)
        except ProcessLookupError:  # it exited between poll() and the signal
            return None
        kill = Kill(self.clock(), victim.pid, sig)
        with self._lock:
            self._signalled.add(victim.pid)
            self.kills.append(kill)
        logger.info("chaos: %s worker pid %d", "kill -9" if sig == signal.SIGKILL else "SIGTERM", victim.pid)
        return kill

    def run(self) -> None:
        """Tick every ``interval_s`` until ``wait`` says stop (the first tick after one interval)."""
        while not self._wait(self.interval_s):
            self.tick()

    def start(self) -> Killer:
        """Run on a daemon thread."""
        self._thread = threading.Thread(target=self.run, name="chaos-killer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5) -> None:
        """Stop ticking (waits up to ``timeout_s`` for a tick under way)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
