"""``async def`` handlers: their coroutines run on one event loop thread, started on the first one.

The thread that called the handler waits for its coroutine's end, so a coroutine holds its handler slot (the
worker's concurrency, the Lambda adapter's one record at a time), its lease and its timeout exactly like a plain
handler. The task runs in a copy of the caller's context, so what a ``before`` hook made current (an
OpenTelemetry span) is current in the coroutine too. A timeout cancels the task (see :mod:`sqslease.attempt`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from sqslease.attempt import Attempt

logger = logging.getLogger("sqslease")


class AsyncHandlerError(TypeError):
    """The handler returned an awaitable that is not a coroutine (an ``asyncio.Future``, a ``Task`` of another
    loop, an object with ``__await__``): sqslease runs coroutines only, so the job never ran."""

    def __init__(self, handler: Callable[..., Any], returned: Any) -> None:
        name = getattr(handler, "__qualname__", None) or repr(handler)
        super().__init__(
            f"handler {name} returned a {type(returned).__name__}, an awaitable that is not a coroutine: sqslease "
            "runs async def handlers (coroutines) only; make it async def and await this inside"
        )


class AsyncLoop:
    """An event loop in a daemon thread (``sqslease-asyncio``), started on the first :meth:`run`."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def result(self, handler: Callable[..., Any], returned: Any, attempt: Attempt) -> Any:
        """What ``handler`` returned (not ``None``), awaited: a coroutine runs on the loop (:meth:`run`), another
        awaitable is refused (:class:`AsyncHandlerError`), anything else is the result."""
        if inspect.iscoroutine(returned):
            return self.run(returned, attempt)
        if inspect.isawaitable(returned):
            raise AsyncHandlerError(handler, returned)
        return returned

    def run(self, coroutine: Coroutine[Any, Any, Any], attempt: Attempt) -> Any:
        """Run ``coroutine`` on the loop and wait for it; returns its result or raises its exception
        (``asyncio.CancelledError`` once its timeout cancelled it)."""
        loop = self._started()
        context = contextvars.copy_context()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def start() -> None:
            task = loop.create_task(coroutine, context=context)
            task.add_done_callback(lambda ended: _settle(ended, done))
            attempt.on_cancel(lambda: loop.call_soon_threadsafe(task.cancel))

        loop.call_soon_threadsafe(start)
        return done.result()

    def stop(self, timeout: float = 1.0) -> None:
        """Cancel the tasks still running (the worker's drain is over, or the invocation returns) and stop the
        loop; a loop blocked by a coroutine that never yields is left behind (a daemon thread), logged."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(_cancel_all_and_stop, loop)
        thread.join(timeout)
        if thread.is_alive():
            logger.error(
                "the asyncio loop of the async handlers did not stop within %.1f s: a coroutine blocks it", timeout
            )
        else:
            loop.close()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="sqslease-asyncio", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop


def _settle(task: asyncio.Task[Any], done: concurrent.futures.Future[Any]) -> None:
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())
    else:
        done.set_result(task.result())


def _cancel_all_and_stop(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    if not tasks:
        loop.stop()
        return
    for task in tasks:
        task.cancel()
    # Stop once they ended: a cancellation runs the coroutine's cleanup (finally, async with) on the loop.
    asyncio.gather(*tasks, return_exceptions=True).add_done_callback(lambda _: loop.stop())
