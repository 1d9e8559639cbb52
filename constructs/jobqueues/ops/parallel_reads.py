"""The thread pool the commands read AWS with, several requests at once (queue attributes, stack templates)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

#: Requests a command has in flight at once.
MAX_PARALLEL_READS = 8


@contextmanager
def read_pool() -> Iterator[ThreadPoolExecutor]:
    """A pool of :data:`MAX_PARALLEL_READS` threads, waited for on leaving. On Ctrl-C (or any error) the reads not
    started are dropped and the pool is not waited for: ``status --watch`` on 40 queues of a slow endpoint ended
    only once every read had been answered. Reads under way end with their own timeouts (:mod:`.timeouts`)."""
    pool = ThreadPoolExecutor(max_workers=MAX_PARALLEL_READS)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
