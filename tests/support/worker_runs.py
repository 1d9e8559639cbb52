"""A :class:`sqslease.worker.Worker` run to its end in a thread, keeping what :meth:`Worker.run` raised (a hung
handler's :class:`sqslease.worker.HandlerHungError`, a fatal SQS error)."""

from __future__ import annotations

import threading

from sqslease.worker import Worker

#: The thread :meth:`Worker.run` runs on, and with it the drain (for ``FakeClock.await_reads``).
RUN_THREAD = "worker-run"


class WorkerRun:
    """``worker.run()`` in a daemon thread; :meth:`join` waits for it and returns what it raised, if anything."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.raised: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=RUN_THREAD, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run(install_signal_handlers=False)
        except BaseException as error:
            self.raised = error

    def join(self, timeout_s: float = 30) -> BaseException | None:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "worker did not stop"
        return self.raised

    def stop(self) -> BaseException | None:
        self.worker.shutdown()
        return self.join()
