"""ECS task scale-in protection while a worker holds leases.

The ECS agent serves ``PUT $ECS_AGENT_URI/task-protection/v1/state``: ``{"ProtectionEnabled": true,
"ExpiresInMinutes": n}`` protects the task from scale-in for n minutes (1-2880), ``{"ProtectionEnabled":
false}`` clears it. A worker turns it on when it starts holding leases, renews it at half time while it still
does, and clears it once it has held none for ``idle_s`` seconds. Failures are logged, never raised: scale-in
protection is an optimisation, the leases are the guarantee.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

logger = logging.getLogger("sqslease")

PATH = "/task-protection/v1/state"
REQUEST_TIMEOUT_S = 2
CHECK_INTERVAL_S = 1.0
IDLE_S = 5.0


class TaskProtection:
    """Keeps the protection state in line with ``holding()``.

    :param agent_uri: the value of ``ECS_AGENT_URI``.
    :param holding: returns True while the worker holds leases.
    :param minutes: ``ExpiresInMinutes`` of each protection (1-2880). Default 60.
    :param idle_s: clear the protection after this many seconds without leases. Default 5.
    :param check_interval: seconds between checks. Default 1.
    :param clock: monotonic clock in seconds.
    """

    def __init__(
        self,
        agent_uri: str,
        holding: Callable[[], bool],
        minutes: int = 60,
        idle_s: float = IDLE_S,
        check_interval: float = CHECK_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 1 <= minutes <= 2880:
            raise ValueError(f"ExpiresInMinutes must be 1-2880, got {minutes}")
        self.url = agent_uri.rstrip("/") + PATH
        self.holding = holding
        self.minutes = minutes
        self.idle_s = idle_s
        self.check_interval = check_interval
        self.clock = clock
        self.protected_until: float | None = None  # monotonic; None: not protected (as far as we know)
        self._idle_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> None:
        """One step: protect, renew or clear as needed."""
        now = self.clock()
        if self.holding():
            self._idle_since = None
            renew_at = None if self.protected_until is None else self.protected_until - self.minutes * 30
            if renew_at is None or now >= renew_at:
                if self._put({"ProtectionEnabled": True, "ExpiresInMinutes": self.minutes}):
                    self.protected_until = now + self.minutes * 60
            return
        if self.protected_until is None:
            return
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since >= self.idle_s:
            self.clear()

    def clear(self) -> None:
        """Turn protection off (when idle, and at shutdown)."""
        if self.protected_until is not None and self._put({"ProtectionEnabled": False}):
            self.protected_until = None

    def _put(self, body: dict[str, object]) -> bool:
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), method="PUT", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                response.read()
            return True
        except (urllib.error.URLError, OSError, ValueError) as error:
            logger.warning("ECS task protection %s failed: %s", body, error)
            return False

    def start(self) -> TaskProtection:
        self._thread = threading.Thread(target=self._run, name="sqslease-task-protection", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.check_interval):
            try:
                self.check()
            except Exception:  # never crash the worker over protection
                logger.exception("ECS task protection check failed")

    def stop(self) -> None:
        """Stop checking and clear the protection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.clear()
