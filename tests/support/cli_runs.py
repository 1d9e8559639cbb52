"""A ``jobqueues`` command run through its console script, its output read as it comes (the ``local`` tests)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from emulator_fixtures import OPS_APP_DIR

from jobqueues.emulator.server import Emulator
from support import waiting

JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def as_from_a_terminal() -> None:
    """A ``preexec_fn``: the command gets Ctrl-C as one started from a terminal does (SIGINT's default action, not
    blocked), whatever the test process's own disposition. A child inherits SIGINT ignored or blocked, and the test
    process's can be either by then: a test run found a pytest process with SIGINT ignored after other tests (what
    set it is not known), and a command started from it ignored the Ctrl-C its test sent."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@dataclass
class Run:
    """A ``jobqueues`` process and the lines of its stdout so far."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None  # reads the process's output into ``lines``

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait(self, timeout_s: float) -> int:
        """The exit status, once the process ended and its output was read to its end (its last lines too)."""
        status = self.process.wait(timeout=timeout_s)
        assert self.reader is not None
        self.reader.join(timeout_s)
        assert not self.reader.is_alive(), "the process's output was not read to its end"
        return status

    def wait_for_line(self, needle: str, timeout_s: float) -> None:
        until(lambda: needle in self.text() or self.process.poll() is not None, timeout_s, f"line {needle!r}")
        assert needle in self.text(), self.text()


def start(*args: str, cwd: Path = OPS_APP_DIR, env: dict[str, str] | None = None) -> Run:
    process = subprocess.Popen(
        [str(JOBQUEUES), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    run = Run(process)

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            run.lines.append(line.rstrip("\n"))

    run.reader = threading.Thread(target=read, daemon=True)
    run.reader.start()
    return run


#: Polls a running `local up` every 0.2 s (its predicates read the emulator).
until = functools.partial(waiting.until, interval_s=0.2)


def depth(emulator: Emulator, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = emulator.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(v) for v in attributes.values())
