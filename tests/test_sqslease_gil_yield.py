"""The handler pool lets the GIL go between messages it runs back to back (``sqslease.gil_yield``), on the pool's
clock: once each ``YIELD_EVERY_S`` of messages started without a wait between them, and not for the first message
after a quiet spell. And a standard queue's ready queue, taken from without its lock, hands each message out once:
to a handler, or to the drain's close."""

from __future__ import annotations

import io
import threading

from support.fakes import FakeSQS

from sqslease.emf import EmfLogger
from sqslease.fifo import ReadyQueue
from sqslease.gil_yield import YIELD_EVERY_S
from sqslease.handler_pool import HandlerPool
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.processor import MessageProcessor
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
STEP_S = 0.002  # each message's run, on the test's clock


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def inline_pool(clock: Clock, ran: list[str]) -> tuple[HandlerPool, list[float], LeaseScheduler]:
    """An inline pool (one handler on a standard queue) whose handler moves ``clock`` on by ``STEP_S``, and the clock's
    times at which it let the GIL go."""
    scheduler = LeaseScheduler()
    sqs = FakeSQS()
    settler = Settler(sqs, URL, scheduler, linger=60)

    def handler(body: str, message: Message) -> None:
        ran.append(body)
        clock.now += STEP_S

    processor = MessageProcessor(
        handler, settler, LeaseSettings(job_type="Yields"), sqs, EmfLogger(io.StringIO()), queue_name="jobs"
    )
    pool = HandlerPool(processor, settler, fifo=False, stopping=threading.Event(), clock=clock)
    yields: list[float] = []
    pool._yield_gil = lambda: yields.append(clock.now)
    pool.start(1, inline=True)
    pool.runs_on(threading.current_thread())
    return pool, yields, scheduler


def messages(scheduler: LeaseScheduler, count: int, first: int = 0) -> list[Message]:
    return [
        Message(f"m{i}", f"rh-{i}", f"b{i}", URL, scheduler.add(f"rh-{i}", 0.0, 10_000))
        for i in range(first, first + count)
    ]


def test_a_pool_running_messages_back_to_back_lets_the_gil_go_once_each_interval() -> None:
    # GIVEN an inline pool, each message taking 2 ms of its clock
    clock, ran = Clock(100.0), []
    pool, yields, scheduler = inline_pool(clock, ran)
    pool.put(messages(scheduler, 12))
    # WHEN it runs 12 messages back to back (starts at 100.000, 100.002, ... 100.022)
    pool.run_inline()
    # THEN it let the GIL go before the first start at least 5 ms after the first, and each 5 ms after that
    assert len(ran) == 12
    assert YIELD_EVERY_S == 0.005
    assert [round(at, 3) for at in yields] == [100.006, 100.012, 100.018]
    pool.settler.close(timeout=5)


def test_the_first_message_after_a_quiet_spell_is_not_delayed() -> None:
    # GIVEN an inline pool that ran 3 messages
    clock, ran = Clock(100.0), []
    pool, yields, scheduler = inline_pool(clock, ran)
    pool.put(messages(scheduler, 3))
    pool.run_inline()
    # WHEN it runs the next 3 after a second with nothing to run
    clock.now += 1.0
    pool.put(messages(scheduler, 3, first=3))
    pool.run_inline()
    # THEN it never let the GIL go: neither first start followed messages run back to back
    assert len(ran) == 6 and yields == []
    pool.settler.close(timeout=5)


def test_a_standard_ready_queue_closed_after_takes_hands_back_exactly_the_messages_not_taken() -> None:
    # GIVEN a standard queue's ready queue with 5 messages, 2 taken (without its lock)
    scheduler = LeaseScheduler()
    ready = ReadyQueue()
    ready.put(messages(scheduler, 5))
    taken = [ready.take(0.0), ready.take(0.0)]
    # WHEN the drain closes it
    waiting, parked = ready.close()
    # THEN it hands back the 3 not taken, in order; a take then finds nothing, and a put is refused
    assert [m.body for m in taken if m is not None] == ["b0", "b1"]
    assert [m.body for m in waiting] == ["b2", "b3", "b4"] and parked == []
    assert ready.take(0.0) is None and len(ready) == 0
    assert ready.put(messages(scheduler, 1, first=5)) is False
