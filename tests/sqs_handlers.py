"""Handlers that worker subprocesses import in tests (``python -m sqslease.worker --handler sqs_handlers:...``)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import ClassVar

from sqslease.message import Message


def _log(event: str, message: Message) -> None:
    path = os.environ.get("TEST_EVENTS_FILE")
    if path:
        with Path(path).open("a") as f:
            f.write(f"{event} {message.body} {message.receive_count} {time.monotonic():.3f}\n")


def fleet_job(body: str, message: Message) -> None:
    """``{"id": ..., "seconds": ..., "until_rerun": ...}``: records ``start|end id pid monotonic handle slack
    message_id`` (one atomic append per line): the receipt handle's first 16 characters (as sqslease logs it), the
    lease's slack in seconds and the message id. Runs ``seconds``; with ``until_rerun``, until the job has started
    twice (another handler took it over: its lease lapsed), ``seconds`` at most."""
    job = json.loads(body)
    _fleet_record("start", job["id"], message)
    if job.get("until_rerun"):
        _until_started_twice(job["id"], job["seconds"])
    else:
        time.sleep(job["seconds"])
    _fleet_record("end", job["id"], message)


def _until_started_twice(job: str, at_most_s: float) -> None:
    events, deadline = Path(os.environ["TEST_EVENTS_FILE"]), time.monotonic() + at_most_s
    while time.monotonic() < deadline:
        if sum(line.split()[:2] == ["start", job] for line in events.read_text().splitlines()) >= 2:
            return
        time.sleep(0.05)


def _fleet_record(kind: str, job: str, message: Message) -> None:
    lease, now = message.lease, time.monotonic()
    slack = lease.deadline - now
    _append(f"{kind} {job} {os.getpid()} {now:.4f} {lease.receipt_handle[:16]} {slack:.3f} {message.message_id}\n")


class FleetSettled:
    """Hooks (``sqs_handlers:FleetSettled``) that record ``settled id pid monotonic`` once the worker has settled a
    :func:`fleet_job` run that succeeded: its idempotency record completed (when on) and its delete sent. A run with
    an ``end`` record and no ``settled`` one was cut off (kill -9) between its handler's return and its settle."""

    def before(self, message: Message) -> None:
        pass

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        if outcome == "success":
            _append(f"settled {json.loads(message.body)['id']} {os.getpid()} {time.monotonic():.4f}\n")


def _append(line: str) -> None:
    # O_APPEND writes of one short line are atomic across processes: no interleaving.
    fd = os.open(os.environ["TEST_EVENTS_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def slow_job(body: str, message: Message) -> None:
    """Sleeps ``SLOW_JOB_SECONDS`` (default 5), recording start and end. With ``SLOW_JOB_UNTIL_FILE`` it runs
    until that file exists instead (at most 120 s): a test decides when it ends, whatever the machine's load."""
    _log("start", message)
    until = os.environ.get("SLOW_JOB_UNTIL_FILE")
    if until:
        deadline = time.monotonic() + 120
        while not os.path.exists(until) and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        time.sleep(float(os.environ.get("SLOW_JOB_SECONDS", "5")))
    _log("end", message)


def hang_job(body: str, message: Message) -> None:
    """Never returns in time: sleeps ``HANG_JOB_SECONDS`` (default 600), recording its start (a hung handler)."""
    _log("start", message)
    time.sleep(float(os.environ.get("HANG_JOB_SECONDS", "600")))


class RecordedHooks:
    """Hooks named by import path in tests (``sqs_handlers:RecordedHooks``): every call, in ``CALLS``."""

    CALLS: ClassVar[list[tuple[str, str, str | None]]] = []  # (before|after, message id, outcome)

    def before(self, message: Message) -> None:
        self.CALLS.append(("before", message.message_id, None))

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        self.CALLS.append(("after", message.message_id, outcome))


def order_key(body: str, message: Message) -> str:
    """An idempotency key from the body (``SQSLEASE_IDEMPOTENCY_KEY=sqs_handlers:order_key``): its ``order_id``."""
    return str(json.loads(body)["order_id"])


#: Bodies :func:`recorded_job` ran, in order.
RECORDED_RUNS: list[str] = []


def recorded_job(body: str, message: Message) -> None:
    """A handler that records each body it runs in :data:`RECORDED_RUNS`."""
    RECORDED_RUNS.append(body)


def poison_job(body: str, message: Message) -> None:
    """Records ``start|end body receive_count monotonic``; a body that begins with ``poison`` fails every time."""
    _log("start", message)
    if body.startswith("poison"):
        raise RuntimeError(f"{body} fails every time")
    _log("end", message)


def payload_digest(body: str, message: Message) -> None:
    """Records ``payload MESSAGE_ID SHA256 BYTES POINTER_SIZE``: what a handler was handed of a payload kept in S3
    (``POINTER_SIZE``: its pointer's size attribute, ``-`` for an ordinary message)."""
    data = body.encode()
    size = "-" if message.pointer is None else str(message.pointer.size)
    _append(f"payload {message.message_id} {hashlib.sha256(data).hexdigest()} {len(data)} {size}\n")


def printing_job(body: str, message: Message) -> None:
    """Prints a long line (``print``: its text, then its newline, two writes to stdout) and succeeds; a body ending in
    7 first prints text a strict UTF-8 stdout cannot encode (an unpaired surrogate), whose print fails alone."""
    if body.endswith("7"):
        try:
            print(f"caf\udce9 {body}")
        except UnicodeEncodeError:
            pass
    print(f"handling {body} " + "x" * 300)
