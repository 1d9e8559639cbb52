"""The worker's handler threads: run received messages, one message per FIFO group at a time.

A worker of one handler on a standard queue has no handler thread: its receiver's thread runs each batch it received
(:func:`runs_inline`, :meth:`HandlerPool.run_inline`), and counts as the pool's thread for the watchdog and the drain.
A worker of several on a standard queue receives on its handler threads, each that finds nothing to run polling
(:func:`handlers_receive`).

A FIFO message that fails is parked for its retry in process, or its group's later messages released
(:mod:`sqslease.handler_groups`).

With ``max_processing_time`` set, a watchdog thread times out handlers still running then (see
:mod:`sqslease.attempt`): the message has failed, and its handler thread no longer counts as running it. Its lease
stays held (the heartbeat extends it) until the handler returns, or until :meth:`HandlerPool.release_timed_out`
as the worker exits; then the failure policy settles it. A thread cannot be stopped, so a timed-out plain handler
is *hung*; an ``async def`` one is cancelled and hung only if it still runs
:data:`sqslease.rules.ASYNC_CANCEL_GRACE_S` later. ``on_hung`` is told of each hung handler (the worker then
drains and exits, see :mod:`sqslease.worker`). A message whose lease cap (``max_total_lease`` from its receive)
can no longer cover ``max_processing_time`` and a visibility timeout when a handler takes it is released unstarted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqslease.attempt import Attempt
from sqslease.fifo import ReadyQueue
from sqslease.gil_yield import YIELD_EVERY_S, yield_gil
from sqslease.handler_timeouts import HandlerTimeouts
from sqslease.lease import LeaseState
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

_LOST = LeaseState.LOST  # looked up once: read for every message it runs
JOIN_LOOK_S = 0.1  # how often a drain waiting for a handler looks whether it timed out


class HandlerPool(HandlerTimeouts):
    """Received messages waiting for a handler, the handler threads, and the messages they run.

    :param processor: runs one message and settles it.
    :param settler: releases the later messages of a failed FIFO group.
    :param fifo: one message per ``MessageGroupId`` at a time (a FIFO queue).
    :param stopping: set when the worker stops receiving (a drain begins).
    :param clock: monotonic clock in seconds.
    :param on_hung: called (on the watchdog thread) with each timed-out handler that did not end. Default: none.
    """

    def __init__(
        self,
        processor: MessageProcessor,
        settler: Settler,
        fifo: bool,
        stopping: threading.Event,
        clock: Callable[[], float],
        on_hung: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.processor = processor
        self.settler = settler
        self.fifo = fifo
        self.clock = clock
        self.on_hung = on_hung
        self.max_processing_time = processor.settings.max_processing_time
        #: A message's end is counted with the next start on its thread (:meth:`_handle`): a standard queue with no
        #: timeout, whose end has no group to finish, no retry to hold and no watchdog to race.
        self._ends_later = not fifo and self.max_processing_time is None
        self._stopping = stopping
        self._ready = ReadyQueue(fifo=fifo, clock=clock)
        self._running: dict[threading.Thread, Attempt] = {}
        self._timed_out: dict[threading.Thread, Attempt] = {}  # still running, their message settled
        self._reported: set[int] = set()  # ids of the hung attempts told to on_hung
        self._watchdog_stop = threading.Event()
        self._running_lock = threading.Lock()
        self._held_back: list[Message] = []  # FIFO messages kept from release until the drain releases (below)
        self._parked_at_drain: list[tuple[Message, float]] = []  # failed FIFO messages whose retry was to come
        self._released = False  # the drain released what was not started
        #: When (clock) the drain releases: no poll drained with this one is open then. Set by the drain.
        self.release_at = 0.0
        # The receiver waiting for room (wait_for_room): set once at most this many messages are outstanding.
        self._room = threading.Event()
        self._room_at = -1
        self._threads: list[threading.Thread] = []
        self.inline = False  # no handler thread: the receiver's runs each batch (runs_inline)
        self.receive: Callable[[], bool] | None = None  # a handler with nothing to run receives (handlers_receive)
        self._when_busy: threading.Event | None = None  # set once every handler runs, room ahead (wake_when_busy)
        self.processed = 0
        self._yield_at = 0.0  # when (clock) a message's start next lets the GIL go (sqslease.gil_yield)
        self._yield_gil: Callable[[], None] = yield_gil

    def start(self, concurrency: int, *, inline: bool = False, receive: Callable[[], bool] | None = None) -> None:
        """Start ``concurrency`` handler threads, or none with ``inline`` (the worker's choice, :func:`runs_inline`):
        the receiver's thread then runs the messages (:meth:`run_inline`). Default False. ``receive``: called by a
        handler that finds nothing to run (:func:`handlers_receive`), True to look at the ready queue again, False
        to wait for a hand-over. Default none: handlers wait for the receiver."""
        self.inline, self.receive = inline, receive
        if not inline:  # the threads it would let in are its other handlers, woken for the same messages
            self._yield_at = float("inf")
        self._threads = (
            []
            if self.inline
            else [
                threading.Thread(target=self._handle_loop, name=f"sqslease-handler-{i}", daemon=True)
                for i in range(concurrency)
            ]
        )
        for thread in self._threads:
            thread.start()
        if self.max_processing_time is not None:
            interval = min(1.0, self.max_processing_time / 10)
            threading.Thread(target=self._watch, args=(interval,), name="sqslease-watchdog", daemon=True).start()

    def put(self, messages: list[Message], relay: bool = False) -> bool:
        """Queue received messages for the handlers (``relay``: wake one waiting handler more, to poll next). Once a
        drain began, none is started: they are held back for the drain's release (see :mod:`sqslease.drain`). False
        (nothing taken) once :meth:`take_unstarted` ran."""
        if self._stopping.is_set():
            with self._running_lock:
                if self._released:
                    return False
                self._held_back += messages
            return True
        return self._ready.put(messages, relay)

    def outstanding(self) -> int:
        """Messages running or waiting for a handler. No lock (it is read before every receive): each count is read
        atomically, and a lock made no snapshot of the two either (a message taken is in neither until it starts)."""
        return len(self._running) + len(self._ready)

    def wait_for_room(self, at_most: int, timeout: float) -> None:
        """Wait until at most ``at_most`` messages are outstanding (a handler ending one wakes this), or
        ``timeout`` seconds. The receiver waits here rather than looking every ``timeout``: a look per 20 ms kept
        the handlers of short jobs idle for most of the 20 ms and spent CPU on idle wakes."""
        with self._running_lock:
            if len(self._running) + len(self._ready) <= at_most:
                return
            self._room.clear()
            self._room_at = at_most
        self._room.wait(timeout)
        self._room_at = -1

    def wake_when_busy(self, event: threading.Event) -> None:
        """Set ``event`` once, when every handler runs a message with room for more ahead (handlers that receive:
        none is left to poll, so the receiver receives the batch ahead)."""
        with self._running_lock:
            if self._all_busy():
                event.set()  # busy already
            else:
                self._when_busy = event

    def _all_busy(self) -> bool:
        """Every handler runs a message, and there is room for more ahead (``_running_lock`` held)."""
        running = len(self._running)
        return running >= len(self._threads) and running + len(self._ready) < 2 * len(self._threads)

    def waiting(self) -> bool:
        """Whether received messages still wait for a handler (or, FIFO, for the drain's release)."""
        if not self.fifo:  # each read atomically: no group's hold to wait out (below)
            return bool(len(self._ready) or self._held_back)
        with self._running_lock:  # not between a failed FIFO head's group leaving the ready queue and its hold
            return bool(len(self._ready) or self._held_back)

    def take_unstarted(self) -> list[Message]:
        """Close: handlers take nothing new (they end after their message). Returns every message not started;
        the parked ones wait for :meth:`release_parked`."""
        with self._running_lock:
            waiting, parked = self._ready.close()
            unstarted = waiting + self._held_back
            self._parked_at_drain += parked
            self._held_back = []
            self._released = True
        return unstarted

    def close(self) -> None:
        """Stop at once (a fatal error): waiting and parked messages are dropped, their leases left to run out."""
        self._ready.close()
        self._watchdog_stop.set()

    def join(self, until: float) -> None:
        """Wait for the handler threads to end, until ``until`` (clock) at most; timed-out ones are not waited for."""
        for thread in self._threads:
            ends = time.monotonic() + max(0.0, until - self.clock())
            while thread.is_alive() and (left := min(ends - time.monotonic(), until - self.clock())) > 0:
                with self._running_lock:
                    if thread in self._timed_out:
                        break
                thread.join(timeout=min(JOIN_LOOK_S, left))  # in slices: it may time out meanwhile
        self._watchdog_stop.set()

    def still_running(self) -> list[Message]:
        """Messages whose handler runs and that are not settled (a timed-out one is)."""
        with self._running_lock:
            return [attempt.message for attempt in self._running.values()]

    def runs_on(self, thread: threading.Thread) -> None:
        """The thread of an inline pool (the receiver's), which :meth:`join` waits for as for a handler thread."""
        self._threads = [thread]

    def run_inline(self) -> None:
        """Inline pool, on the receiver's thread: run what was received until nothing is left (or the drain took
        it). Nothing when the pool has handler threads."""
        if not self.inline:
            return
        me, now = threading.current_thread(), self.clock()  # for parked retries only, which a standard queue has not
        take, handle, ended = self._ready.take, self._handle, None  # bound once: read for every message
        while (message := take(now)) is not None:
            ended = handle(message, me, ended)
        if ended is not None:  # counted before the receiver polls again: its room
            self._ended(ended, me)

    def _handle_loop(self) -> None:
        me, receive = threading.current_thread(), self.receive
        ended: Attempt | None = None  # run here, its end left for the next start to count (_handle)
        # Handlers that receive (a standard queue: no group to mark, no parked retry) take as ReadyQueue.take does.
        waiting = self._ready.standard_items() if receive is not None else None
        handle = self._handle
        while True:
            message = None
            if waiting:
                try:
                    message = waiting.popleft()
                except IndexError:  # another handler took the last one meanwhile
                    pass
            if message is None and ended is not None:  # counted before this thread polls or waits: its room
                self._ended(ended, me)
                ended = None
            while message is None and receive is not None and receive():  # receive here (no wake of the receiver)
                message = self._ready.take(0.0)  # and run the first
            if message is None:
                message = self._ready.get()
                if message is None:
                    return
            ended = handle(message, me, ended)

    def _handle(self, message: Message, me: threading.Thread, previous: Attempt | None = None) -> Attempt | None:
        """Run one message taken from the ready queue on this thread (``me``), and count and settle its end.

        On a standard queue without ``max_processing_time`` its end is left to the caller, returned: the next
        :meth:`_handle` on this thread counts it as ``previous`` under the lock it takes to start its own message (one
        lock a message, not two), or the caller does (:meth:`_ended`) before it waits or polls. Else None."""
        now, lease = self.clock(), message.lease
        if now >= self._yield_at:  # the worker's other threads get the GIL (sqslease.gil_yield)
            if now < self._yield_at + YIELD_EVERY_S:  # ran messages since, rather than wait
                self._yield_gil()
            self._yield_at = now + YIELD_EVERY_S
        if lease.state is _LOST or lease.deadline <= now:  # lost, or run out: not through Lease.lost (a call less)
            if previous is not None:
                self._ended(previous, me)
            # Its lease ran out while it waited (prefetched, or parked for a retry): SQS may have handed it to
            # another consumer, and its group's later messages must not overtake it. Released, they come back
            # after it.
            logger.warning("message %s: its lease ran out before it could run; not run", message.message_id)
            self.settler.scheduler.lapsed(message.lease)
            self._finished(message, failed=True)
            return None
        if self.max_processing_time is not None and self._lease_too_short(message):
            return None  # (no end left to count with max_processing_time: previous is None)
        attempt = Attempt(message, now)
        with self._running_lock:
            if previous is not None:  # ended with no timeout (_ends_later): counted here, its entry replaced below
                self.processed += 1
                if self._room_at >= 0:
                    self._wake_room(len(self._running) - 1)
            self._running[me] = attempt
            # (a running count short of the handlers, the usual case, tells at once: no call)
            if self._when_busy is not None and len(self._running) >= len(self._threads) and self._all_busy():
                self._when_busy.set()  # no handler left to poll: the receiver receives the batch ahead
                self._when_busy = None
        failed, held, late = True, False, False
        try:
            result = self.processor.process(message, attempt)
            failed, held = result.retry, result.held
        except BaseException:  # process() settles and logs handler errors; this is a bug in sqslease
            logger.exception("processing message %s failed unexpectedly", message.message_id)
        finally:
            if not self._ends_later:
                late = self._ended(attempt, me)
        if self._ends_later:  # no group to finish, no retry to hold, no timeout: only its end to count
            return attempt
        if held:
            self._retry_later(message)
        elif not late:  # a timed-out message's group was finished by its timeout
            self._finished(message, failed)
        return None

    def _ended(self, attempt: Attempt, me: threading.Thread) -> bool:
        """``attempt``'s handler on ``me`` returned: :meth:`_end`, under the lock."""
        with self._running_lock:
            return self._end(attempt, me)

    def _end(self, attempt: Attempt, me: threading.Thread) -> bool:
        """``attempt``'s handler on ``me`` returned (``_running_lock`` held): it no longer runs; counted unless its
        timeout counted it (then True: late). Wakes the receiver waiting for room, once."""
        late = attempt.timed_out_at is not None  # its timeout settled it and counted it
        if self._timed_out and self._timed_out.get(me) is attempt:
            del self._timed_out[me]
        if self._running.get(me) is attempt:
            del self._running[me]
        if not late:
            self.processed += 1
        if self._room_at >= 0:
            self._wake_room(len(self._running))
        return late

    def _wake_room(self, running: int) -> None:
        """Wake the receiver waiting for room once ``running`` messages run and the ready ones leave it
        (``_running_lock`` held)."""
        if running + len(self._ready) <= self._room_at:
            self._room_at = -1  # one wake: the handlers ending messages before the receiver runs set none
            self._room.set()


def runs_inline(concurrency: int, fifo: bool) -> bool:
    """Whether a worker's handler runs on its receiver's thread: one handler on a standard queue, where a thread of
    its own buys no concurrency and its hand-offs cost more CPU than its work (``bench/runtime_bench.py``). A FIFO
    queue keeps it: a parked retry comes due while the receiver may be in a long poll."""
    return concurrency == 1 and not fifo


def handlers_receive(concurrency: int, fifo: bool) -> bool:
    """Whether a handler that finds nothing to run receives on its own thread (:meth:`sqslease.receiver.Receiver.
    receive_for_handler`), the receiver's thread polling only when no handler can (no room, the governor, a failed
    receive's backoff, every handler running): several handlers on a standard queue. No wake of the receiver a
    receive, and the first message of each receive runs without a hand-off (``bench/runtime_bench.py``). A FIFO
    queue keeps its receiver: a parked retry comes due while a handler could be in a long poll."""
    return concurrency > 1 and not fifo
