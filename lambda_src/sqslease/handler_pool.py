"""The worker's handler threads: run received messages, one message per FIFO group at a time.

A FIFO message that fails sends its group's later messages back to the queue (released unrun, see
:mod:`sqslease.fifo`). During a drain they are held back instead, and released with the other unstarted
messages at the drain's release point (see :mod:`sqslease.drain`): released earlier, they could meet the long poll
of another worker drained at the same moment, which might have no handler for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqslease.fifo import ReadyQueue
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")


class HandlerPool:
    """Received messages waiting for a handler, the handler threads, and the messages they run.

    :param processor: runs one message and settles it.
    :param settler: releases the later messages of a failed FIFO group.
    :param fifo: one message per ``MessageGroupId`` at a time (a FIFO queue).
    :param stopping: set when the worker stops receiving (a drain begins).
    :param clock: monotonic clock in seconds.
    """

    def __init__(
        self,
        processor: MessageProcessor,
        settler: Settler,
        fifo: bool,
        stopping: threading.Event,
        clock: Callable[[], float],
    ) -> None:
        self.processor = processor
        self.settler = settler
        self.clock = clock
        self._stopping = stopping
        self._ready = ReadyQueue(fifo=fifo)
        self._running: dict[int, Message] = {}
        self._running_lock = threading.Lock()
        self._held_back: list[Message] = []  # FIFO messages kept from release until the drain releases (below)
        self._released = False  # the drain released what was not started
        #: When (clock) the drain releases: no poll drained with this one is open then. Set by the drain.
        self.release_at = 0.0
        self._threads: list[threading.Thread] = []
        self.processed = 0

    def start(self, concurrency: int) -> None:
        """Start ``concurrency`` handler threads."""
        self._threads = [
            threading.Thread(target=self._handle_loop, name=f"sqslease-handler-{i}", daemon=True)
            for i in range(concurrency)
        ]
        for thread in self._threads:
            thread.start()

    def put(self, messages: list[Message]) -> bool:
        """Queue received messages for the handlers. False (nothing queued) once :meth:`take_unstarted` ran."""
        return self._ready.put(messages)

    def outstanding(self) -> int:
        """Messages running or waiting for a handler."""
        with self._running_lock:
            return len(self._running) + len(self._ready)

    def waiting(self) -> bool:
        """Whether received messages still wait for a handler (or, FIFO, for the drain's release)."""
        return bool(len(self._ready) or self._held_back)

    def take_unstarted(self) -> list[Message]:
        """Close: handlers take nothing new (they end after their message). Returns every message not started."""
        with self._running_lock:
            unstarted = self._ready.close() + self._held_back
            self._held_back = []
            self._released = True
        return unstarted

    def close(self) -> None:
        """Stop at once (a fatal error): waiting messages are dropped, their leases left to run out."""
        self._ready.close()

    def join(self, until: float) -> None:
        """Wait for the handler threads to end, until ``until`` (clock) at most."""
        for thread in self._threads:
            thread.join(timeout=max(0.0, until - self.clock()))

    def still_running(self) -> list[Message]:
        with self._running_lock:
            return list(self._running.values())

    def _handle_loop(self) -> None:
        while True:
            message = self._ready.get()
            if message is None:
                return
            with self._running_lock:
                self._running[id(message)] = message
            failed = True
            try:
                failed = self.processor.process(message).retry
            except BaseException:  # process() settles and logs handler errors; this is a bug in sqslease
                logger.exception("processing message %s failed unexpectedly", message.message_id)
            finally:
                with self._running_lock:
                    del self._running[id(message)]
                    self.processed += 1
                later = self._ready.done(message, failed)
            if later:
                self._release_later(message, later)

    def _release_later(self, message: Message, later: list[Message]) -> None:
        # FIFO: the group's later messages must not run before this one succeeds.
        logger.info(
            "message group %s: message %s failed; releasing %d later messages of the group",
            message.message_group_id,
            message.message_id,
            len(later),
        )
        with self._running_lock:
            # Draining: released with the unstarted ones, once no poll drained with this one is open.
            hold = self._stopping.is_set() and not self._released
            if hold:
                self._held_back += later
        if not hold:
            if self._stopping.is_set():  # ready is closed: this thread has nothing else to do
                time.sleep(max(0.0, self.release_at - self.clock()))
            for other in later:
                self.settler.change_visibility(other.lease, 0)
                self.processor.record_released(other)
