"""ECS task scale-in protection against a stub of the ECS agent endpoint (a real local HTTP server)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.fakes import FakeClock
from support.moto_queues import make_queue, send
from support.waiting import wait_for
from support.worker_processes import events_of, start_worker_process

from jobqueues.emulator.server import LocalServer
from sqslease.task_protection import PATH, TaskProtection

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)


@contextmanager
def agent_stub(fail_first: int = 0) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``PUT /task-protection/v1/state``: records each body; answers 500 to the first ``fail_first``."""
    received: list[dict[str, Any]] = []
    failures = [fail_first]

    class Agent(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            ok = self.path == PATH and failures[0] <= 0
            failures[0] -= 1
            received.append({**body, "_path": self.path, "_status": 200 if ok else 500})
            payload = json.dumps({"protection": {"ProtectionEnabled": body.get("ProtectionEnabled")}}).encode()
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("localhost", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_a_worker_is_protected_while_it_holds_leases_and_cleared_when_idle(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    queues = make_queue(local_aws, vt=30)
    events = tmp_path / "events"
    with agent_stub(fail_first=1) as (uri, received):
        process = start_worker_process(
            local_aws,
            queues.url,
            events,
            ECS_AGENT_URI=uri,
            SLOW_JOB_SECONDS="3",
            SQSLEASE_TASK_PROTECTION_MINUTES="15",
        )
        try:
            # idle, it asks nothing (its first request, below, is the protection the job needs: the stub's 500);
            # that an idle check sends nothing is pinned on a clock of its own below
            send(local_aws, queues.url, ["job"])
            assert wait_for(lambda: any(r["_status"] == 200 for r in received), timeout_s=10)
            assert wait_for(lambda: [e[0] for e in events_of(events)] == ["start", "end"], timeout_s=15)
            assert wait_for(lambda: received[-1].get("ProtectionEnabled") is False, timeout_s=10)  # idle again
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0
        finally:
            process.kill()
    stderr = process.stderr.read().decode()
    assert received[0] == {"ProtectionEnabled": True, "ExpiresInMinutes": 15, "_path": PATH, "_status": 500}
    assert received[1] == {"ProtectionEnabled": True, "ExpiresInMinutes": 15, "_path": PATH, "_status": 200}
    assert received[-1] == {"ProtectionEnabled": False, "_path": PATH, "_status": 200}
    assert "ECS task protection" in stderr and "500" in stderr  # the failure was logged, the job still ran


def test_protection_is_renewed_at_half_time_and_never_crashes_the_caller() -> None:
    clock = FakeClock(0.0)
    holding = [True]
    with agent_stub() as (uri, received):
        idle = TaskProtection(uri, lambda: False, minutes=2, idle_s=5, clock=clock)
        idle.check()
        clock.now = 30
        idle.check()  # never protected, holding nothing: no call
        assert received == []
        clock.now = 0
        protection = TaskProtection(uri, lambda: holding[0], minutes=2, idle_s=5, clock=clock)
        protection.check()
        clock.now = 59
        protection.check()  # less than half of 2 min elapsed: no call
        clock.now = 61
        protection.check()  # renewed
        holding[0] = False
        protection.check()
        clock.now = 67
        protection.check()  # idle for 6 s: cleared
    assert [r.get("ProtectionEnabled") for r in received] == [True, True, False]
    down = TaskProtection("http://localhost:9", lambda: True, clock=clock)  # nothing listens there
    down.check()
    assert down.protected_until is None
