"""A :class:`sqslease.worker.Worker` running in a thread of the test process, with its EMF lines kept."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator
from typing import Any

from jobqueues.emulator.server import LocalServer
from sqslease.emf import EmfLogger
from sqslease.message import Message
from sqslease.settings import LeaseSettings
from sqslease.worker import Worker
from support.emf import read_emf

#: Leases of 30 s on the fake clock, the first 10 s, extended 5 s before they end; 1 s polls.
LEASES_30S = {"visibility_timeout": 30, "extension_threshold": 5, "heartbeat_interval": 0.2, "wait_time": 1}
#: Leases of 300 s from the receive on: the clock moves by a minute at once, and no lease falls due meanwhile.
LEASES_300S = {
    "visibility_timeout": 300,
    "receive_visibility_timeout": 300,
    "extension_threshold": 5,
    "heartbeat_interval": 0.2,
    "wait_time": 1,
}
#: Short leases for tests: 2 s visibility timeout, extended 1 s before it ends, 1 s long polls.
FAST = {"visibility_timeout": 2, "extension_threshold": 1, "heartbeat_interval": 0.2, "wait_time": 1}
#: For a lease that must outlive its visibility timeout on moto_server: extended with 3 s of its 4 left, so that a
#: heartbeat thread starved for up to 3 s on a loaded machine still keeps it (with 1 s of 2 left, a CI run beside
#: other work once lost one 0.43 s late, as the runtime then logs).
ROOMY = {**FAST, "visibility_timeout": 4, "extension_threshold": 3}


@contextlib.contextmanager
def running_worker(
    server: Any,
    url: str,
    handler: Callable[[str, Message], None],
    concurrency: int = 2,
    client: Any = None,
    clock: Callable[[], float] | None = None,
    hook_objects: tuple[Any, ...] = (),
    worker_args: dict[str, Any] | None = None,
    stream: Any = None,
    **settings: Any,
) -> Iterator[Worker]:
    """A worker on ``client`` (default: a client of ``server``, the moto_server; or ``server`` itself when it is
    a :class:`support.fakes.FakeSQS`) with :data:`FAST` settings updated by ``settings``; shut down (drained) on
    leaving, within 30 s. ``worker_args``: more ``Worker`` arguments (``idempotency``, ``key``). ``stream``: where
    its EMF lines go (default: a ``StringIO``, :func:`emf_records` reads it), or their ``EmfLogger``."""
    emf = io.StringIO() if stream is None else stream
    worker = Worker(
        client or (server.client("sqs") if isinstance(server, LocalServer) else server),
        url,
        handler,
        LeaseSettings(**{**FAST, **settings}),
        concurrency=concurrency,
        emf=emf if isinstance(emf, EmfLogger) else EmfLogger(emf),
        hooks=hook_objects,
        **({"clock": clock} if clock is not None else {}),
        **(worker_args or {}),
    )
    worker.emf_lines = emf  # type: ignore[attr-defined]
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.shutdown()
        thread.join(timeout=30)
        assert not thread.is_alive(), "worker did not stop"


def emf_records(worker: Worker) -> list[dict]:
    """The EMF records a worker of :func:`running_worker` wrote so far."""
    return read_emf(worker.emf_lines)  # type: ignore[attr-defined]
