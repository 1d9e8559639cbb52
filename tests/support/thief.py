"""A second consumer, straight to the server: whatever it receives while a worker holds the lease has lapsed."""

from __future__ import annotations

import threading

from jobqueues.emulator.server import LocalServer


class Thief:
    """A second consumer, straight to the server: receives whatever becomes visible (and keeps it hidden).

    Anything it gets while a worker still handles (or has finished) the message is a lapsed lease.
    """

    def __init__(self, server: LocalServer, url: str, hold_s: int = 60) -> None:
        self.sqs = server.client("sqs")
        self.url = url
        self.hold_s = hold_s
        self.stolen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thief", daemon=True)

    def __enter__(self) -> Thief:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            found = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10, VisibilityTimeout=self.hold_s)
            self.stolen += [m["Body"] for m in found.get("Messages", [])]
