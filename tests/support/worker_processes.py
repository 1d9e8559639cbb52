"""``python -m sqslease.worker`` as a child process, and the event lines its test handlers write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jobqueues.emulator.server import LocalServer

ROOT = Path(__file__).resolve().parent.parent.parent
#: The sqslease sources worker processes run. Point SQSLEASE_SRC at another copy (e.g. a previous release) to
#: run these tests against it.
SQSLEASE_SRC = Path(os.environ.get("SQSLEASE_SRC", ROOT / "lambda_src"))


def start_worker_process(
    server: LocalServer,
    url: str,
    events: Path,
    quiet: bool = False,
    endpoint: str | None = None,
    handler: str = "sqs_handlers:slow_job",
    concurrency: int = 1,
    args: list[str] | None = None,
    log: Path | None = None,
    **env: str,
) -> subprocess.Popen[bytes]:
    """``python -m sqslease.worker`` running ``handler`` against ``server`` (or ``endpoint``, e.g. a proxy).

    Long polls of 1 s and a heartbeat every 0.2 s unless ``env`` says otherwise; the handlers of
    ``tests/sqs_handlers.py`` append their events to ``events``.
    """
    environment = {
        **os.environ,
        **server.env(),
        **({"AWS_ENDPOINT_URL": endpoint} if endpoint else {}),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(SQSLEASE_SRC)]),
        "TEST_EVENTS_FILE": str(events),
        "SQSLEASE_WAIT_TIME": "1",
        "SQSLEASE_HEARTBEAT_INTERVAL": "0.2",
        **env,
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sqslease.worker",
            "--queue-url",
            url,
            "--handler",
            handler,
            "--concurrency",
            str(concurrency),
            *(args or []),
        ],
        env=environment,
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=log.open("ab") if log else subprocess.DEVNULL if quiet else subprocess.PIPE,
    )


def events_of(path: Path) -> list[list[str]]:
    """The handler event lines (``start|end body receive_count monotonic``), split."""
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []
