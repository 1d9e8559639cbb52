"""Letting the GIL go between messages a one-handler worker runs back to back, so that its other threads run.

A thread waiting for the GIL is woken each time the running thread lets it go, and its wait for the interpreter's
switch interval (5 ms) starts again. A thread that lets the GIL go only for a moment (the write of its batch's EMF
lines, every 10 messages) takes it back before the woken thread runs, so that thread never asks for it: it waits
until the running thread blocks, woken for nothing at every write (related: the "convoy effect", CPython
bpo-7946). With short messages and a queue that answers at once, a one-handler worker's delete sender was starved
so for whole runs, at 1.5-2 us a message of the worker's CPU (docs/benchmarks.md, "The GIL let go").

So a pool with no handler thread (one handler on a standard queue: its receiver's thread runs the messages) lets
the GIL go for :data:`YIELD_S` before a message's start once :data:`YIELD_EVERY_S` passed since the last time, if
it ran messages meanwhile (:meth:`sqslease.handler_pool.HandlerPool._handle`). A pool of handler threads does not:
the threads it would let in are its other handlers, woken for the same messages, and spreading short messages
over them cost more than it saved.
"""

from __future__ import annotations

import time

#: Seconds between two yields of a pool running messages back to back: the interpreter's own switch interval
#: (``sys.getswitchinterval()``). A start more than twice this after the last yield was due follows a wait (the
#: threads blocked meanwhile, and others ran): it is not delayed.
YIELD_EVERY_S = 0.005
#: Seconds the GIL is let go: long enough for a woken thread to take it (``time.sleep(0)`` returns before it can).
YIELD_S = 0.0001


def yield_gil() -> None:
    """Let the GIL go for :data:`YIELD_S` seconds."""
    time.sleep(YIELD_S)
