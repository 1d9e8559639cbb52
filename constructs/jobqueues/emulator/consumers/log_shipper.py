"""The local consumers' output, line by line, to the emulator's CloudWatch Logs and to local files.

Each consumer process (an ECS worker, a Lambda execution environment) writes its stdout and stderr (EMF lines
and logs) to one pipe; :meth:`LogShipper.attach` reads it on a thread, appends each line to a file under the
logs directory (and each EMF line, a JSON object, to the same name under ``emf/``, which jobstats reads without
the logging lines around them), and queues it for its log stream. A flusher sends each stream's queued lines with
``PutLogEvents`` every :data:`FLUSH_INTERVAL_S` seconds, at most :data:`MAX_BATCH_EVENTS` events per call, so that
``jobqueues dlq list`` finds a message's last error in the deployed log group, as on AWS.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger("jobqueues.emulator.consumers")

#: Seconds between two sends of the queued lines.
FLUSH_INTERVAL_S = 1.0
#: Events per ``PutLogEvents`` (CloudWatch Logs takes up to 10,000 and 1 MiB; lines are short).
MAX_BATCH_EVENTS = 500
#: The subdirectory of the logs directory with the EMF lines alone (``python -m jobstats profile DIR/emf``).
EMF_DIR = "emf"
#: Characters of a line kept in an event (CloudWatch Logs takes 256 KiB per event).
MAX_EVENT_CHARS = 200_000


@dataclass
class _Stream:
    group: str
    name: str
    local: IO[str]
    emf_path: Path  # opened with the first EMF line: jobstats reads an empty file as a foreign log
    local_emf: IO[str] | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)
    last_ms: int = 0
    emf: list[str] = field(default_factory=list)


class LogShipper:
    """Ships lines to CloudWatch Logs (``logs``: a boto3 client on the emulator) and to ``logs_dir``.

    :param clock_ms: milliseconds since the epoch, for the events' timestamps (injectable for tests).
    """

    def __init__(self, logs: Any, logs_dir: Path, clock_ms: Callable[[], int] | None = None) -> None:
        self.logs = logs
        self.logs_dir = logs_dir
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.shipped = 0
        self.errors = 0
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._groups: set[str] = set()
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="log-shipper", daemon=True)
        self._flusher.start()

    def attach(self, source: IO[bytes], group: str, stream: str, local_name: str) -> None:
        """Read ``source`` (a pipe's reading end) until end of file on a thread: each line to ``logs_dir /
        local_name`` and to log stream ``stream`` of group ``group`` (both created if missing)."""
        self._create(group, stream)
        path = self.local_path(local_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = _Stream(group, stream, path.open("a", encoding="utf-8"), self.logs_dir / EMF_DIR / local_name)
        with self._lock:
            self._streams[group, stream] = entry
        reader = threading.Thread(target=self._read, args=(source, entry), name=f"log-{stream}", daemon=True)
        reader.start()
        self._readers.append(reader)

    def local_path(self, local_name: str) -> Path:
        """The file a stream attached as ``local_name`` is copied to."""
        return self.logs_dir / local_name

    def emf_lines_by_stream(self) -> dict[str, list[str]]:
        """Log stream -> the lines it shipped that look like EMF (JSON objects), for the chaos report."""
        with self._lock:
            return {s.name: list(s.emf) for s in self._streams.values()}

    def close(self, timeout_s: float = 10) -> None:
        """Wait for the readers to reach end of file (their processes ended), send what is left, stop."""
        deadline = time.monotonic() + timeout_s
        for reader in self._readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        self._stop.set()
        self._flusher.join(timeout_s)
        self.flush()
        with self._lock:
            for entry in self._streams.values():
                entry.local.close()
                if entry.local_emf is not None:
                    entry.local_emf.close()

    # -- internals ------------------------------------------------------------------------------------
    def _create(self, group: str, stream: str) -> None:
        exists = self.logs.exceptions.ResourceAlreadyExistsException
        if group not in self._groups:
            try:
                self.logs.create_log_group(logGroupName=group)  # Lambda creates its default group on first use
            except exists:
                pass
            self._groups.add(group)
        try:
            self.logs.create_log_stream(logGroupName=group, logStreamName=stream)
        except exists:
            pass

    def _read(self, source: IO[bytes], entry: _Stream) -> None:
        with source:
            for raw in source:
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                with self._lock:
                    entry.local.write(line + "\n")
                    entry.local.flush()
                    if not line:
                        continue
                    # Timestamps never go back within a stream: PutLogEvents wants them in order.
                    entry.last_ms = max(entry.last_ms, self.clock_ms())
                    entry.pending.append({"timestamp": entry.last_ms, "message": line[:MAX_EVENT_CHARS]})
                    if is_emf(line):
                        entry.emf.append(line)
                        if entry.local_emf is None:
                            entry.emf_path.parent.mkdir(parents=True, exist_ok=True)
                            entry.local_emf = entry.emf_path.open("a", encoding="utf-8")
                        entry.local_emf.write(line + "\n")
                        entry.local_emf.flush()

    def _flush_loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL_S):
            self.flush()

    def flush(self) -> None:
        """Send every stream's queued lines now."""
        with self._lock:
            batches = [(s, s.pending) for s in self._streams.values() if s.pending]
            for entry, _ in batches:
                entry.pending = []
        for entry, events in batches:
            for start in range(0, len(events), MAX_BATCH_EVENTS):
                chunk = events[start : start + MAX_BATCH_EVENTS]
                try:
                    self.logs.put_log_events(logGroupName=entry.group, logStreamName=entry.name, logEvents=chunk)
                    self.shipped += len(chunk)
                except Exception as error:  # the local copy keeps them; one failed batch must not stop the others
                    self.errors += 1
                    logger.warning("PutLogEvents to %s %s failed: %s", entry.group, entry.name, error)


def is_emf(line: str) -> bool:
    """An EMF line: one JSON object with CloudWatch's ``_aws`` metadata. Not any line that opens with ``{``: an
    OpenTelemetry console exporter's span, for one, spreads a JSON object over many lines, the first just ``{``."""
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        document = json.loads(line)
    except ValueError:
        return False
    return isinstance(document, dict) and "_aws" in document
