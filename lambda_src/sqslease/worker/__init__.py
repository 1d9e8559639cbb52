"""Long-polling consumer for ECS/Fargate and any long-running worker.

    python -m sqslease.worker --queue-url URL --handler package.module:function [--concurrency N]
        [--visibility-timeout S --extension-threshold S ... any setting as --kebab-case]

Every option is a setting of :class:`sqslease.config.ConsumerConfig` (its lease and idempotency settings included),
also read from its environment variable (``SQSLEASE_QUEUE_URL``...); the command line wins. EMF lines go
to stdout, logs to stderr. With ``ECS_AGENT_URI`` set (ECS does), the task is protected from scale-in while it
holds leases.

Shutdown (SIGTERM/SIGINT): send no new receive; wait for the long poll in flight (it answers within
``poll_wait``) rather than abandon it, since SQS would still hide what it finds; keep extending running
handlers until they finish or ``shutdown_grace`` ends. A message received before the signal but not started has
spent its receive: a handler that comes free runs it, until ``poll_wait`` + 1 s after the signal (capped by
``shutdown_grace``), when what is still unstarted is released (visibility 0, batched). By then the long polls
of the other workers signalled at the same moment have ended, so none of them can take a released message it
may have no handler for. What the poll in flight brings after the signal is never started: it is released then too.
Budget: a drain costs a message that did not run at most the one receive that
brought it to the draining worker; so with maxReceiveCount >= 2 no drain sends an unfailed message to the
DLQ. When the grace ends, the handlers still running are released. Deletes are confirmed (or retried) and
releases confirmed (or, once one may have landed, left to their lease) before the heartbeat stops.

A handler that raises anything (``SystemExit`` and ``KeyboardInterrupt`` included) or returns an awaitable that is
not a coroutine fails that message only (see :mod:`sqslease.processor`). An ``async def`` handler's coroutine runs
on the worker's event loop thread (:mod:`sqslease.async_loop`), holding its handler slot until it ends.

A handler still running at ``max_processing_time`` has failed (:mod:`sqslease.handler_pool`, EMF ``timed_out``);
its message stays leased until the handler returns (then the failure policy settles it), so it runs nowhere else
meanwhile. An ``async def`` handler's task is cancelled. A plain handler's thread cannot be stopped: the worker
stops receiving, drains as on SIGTERM (the other handlers finish within ``shutdown_grace``), settles the hung
handler's message by the failure policy as the drain's last step, and exits with status 3 for ECS to start a
fresh task; the hung thread's late result is ignored (logged). So is a cancelled task that still runs
``ASYNC_CANCEL_GRACE_S`` (5 s) later.

Idempotency (exactly-once completion, docs/sqslease.md): with an idempotency table configured (or a store
passed), each message claims its DynamoDB record before its handler runs, the heartbeat moves the records with the
leases, and a success completes the record before the delete. A DynamoDB error no retry can fix stops the worker
like a fatal SQS error.

Exit status: 0 after a shutdown; 1 after a fatal SQS error (access denied, missing queue, unusable KMS key),
logged on one line, so that ECS restarts the task and alarms fire; 2 for a bad option or environment (one
line naming the option and the fix); 3 after a hung handler, once drained. Without a configured region
(``AWS_REGION``, ``AWS_DEFAULT_REGION``, a profile) the region is the queue URL's
(``https://sqs.REGION.amazonaws.com/...``).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from sqslease.async_loop import AsyncLoop
from sqslease.attempt import Attempt
from sqslease.drain import drain
from sqslease.emf import EmfLogger
from sqslease.fifo_retry import worker_retries
from sqslease.handler_pool import HandlerPool, handlers_receive, runs_inline
from sqslease.heartbeat import Heartbeat
from sqslease.hooks import MessageHooks
from sqslease.idempotency import KeyFunction, message_id_key
from sqslease.idempotency_gate import IdempotencyGate, idempotency_gate
from sqslease.idempotency_store import IdempotencyStore
from sqslease.lease_table import LeaseScheduler
from sqslease.payload_pointer import PayloadStore
from sqslease.processor import Handler, MessageProcessor
from sqslease.receiver import Receiver
from sqslease.retry import FatalSqsError
from sqslease.rules import DEFAULT_WORKER_CONCURRENCY
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.task_protection import TaskProtection

logger = logging.getLogger("sqslease")

#: Handlers running at once (``sqslease.rules.DEFAULT_WORKER_CONCURRENCY``; the name ``sqslease.worker.cli`` imports).
DEFAULT_CONCURRENCY = DEFAULT_WORKER_CONCURRENCY
#: Seconds a drained worker waits for the deletions of its last payload objects (a task is killed at its stopTimeout).
PAYLOAD_FLUSH_S = 2.0


class HandlerHungError(RuntimeError):
    """A handler ran past ``max_processing_time`` and did not end: the worker drained and stops (exit status 3)."""


class Worker:
    """Receives, runs and settles messages of one queue.

    :param sqs: the boto3 SQS client for lease requests (extend, delete, release); see
        :func:`sqslease.clients.make_clients` for one with the right timeouts.
    :param queue_url: the queue to consume. A ``.fifo`` queue runs one message per group at a time.
    :param handler: ``handler(body, message)``, a plain function or an ``async def`` one; raising (any
        ``BaseException``) means failure.
    :param settings: lease and failure settings.
    :param concurrency: handlers running at once. Default 4 (``sqslease.rules.DEFAULT_WORKER_CONCURRENCY``).
    :param emf: where the per-message EMF lines go. Default stdout.
    :param clock: monotonic clock (tests).
    :param receive_sqs: client for long polls (its own connection pool). Default ``sqs``.
    :param control_sqs: client for the in-flight governor and DLQ sends. Default ``sqs``.
    :param ecs_agent_uri: ``ECS_AGENT_URI``: enables ECS task scale-in protection. Default none.
    :param hooks: called before and after each message (:mod:`sqslease.hooks`), after those the settings name.
        Default none.
    :param idempotency: the idempotency store (exactly-once completion, see docs/sqslease.md). Default: the one
        ``SQSLEASE_IDEMPOTENCY_*`` describe, built here, or none (off) without ``SQSLEASE_IDEMPOTENCY_TABLE``.
    :param key: ``key(body, message) -> str``, what makes two messages the same job (idempotency on only).
        Default: the function ``settings.idempotency_key`` names, else the ``MessageId``.
    :param payloads: reads the payloads of pointer messages (:mod:`sqslease.payload_pointer`) and deletes them after
        their messages' deletes. Default: a store of its own, deleting by ``settings.delete_payloads``.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handler: Handler,
        settings: LeaseSettings,
        concurrency: int = DEFAULT_CONCURRENCY,
        emf: EmfLogger | None = None,
        clock: Callable[[], float] = time.monotonic,
        receive_sqs: Any = None,
        control_sqs: Any = None,
        ecs_agent_uri: str | None = None,
        hooks: Iterable[MessageHooks] = (),
        idempotency: IdempotencyStore | None = None,
        key: KeyFunction = message_id_key,
        payloads: PayloadStore | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        gate = idempotency_gate(settings, concurrency, idempotency, key, clock)
        self.sqs = sqs
        self.receive_sqs = receive_sqs or sqs
        self.control_sqs = control_sqs or sqs
        self.queue_url = queue_url
        self.settings = settings
        self.concurrency = concurrency
        self.clock = clock
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        self.heartbeat = Heartbeat(
            sqs, queue_url, self.scheduler, settings, clock, on_fatal=self._on_fatal, idempotency=gate
        )
        emf = emf or EmfLogger()
        # A success's line is held until its delete is sent: one write a request, not one a message
        self.settler = Settler(
            sqs, queue_url, self.scheduler, on_fatal=self._on_fatal, clock=clock, before_deletes=emf.flush
        )
        self._stopping = threading.Event()
        self._signalled = False  # set by a signal handler, which takes no lock (_on_signal)
        self.processor = self._processor(handler, emf, hooks, gate, payloads)
        #: Handlers that ran past ``max_processing_time`` and did not end.
        self.hung: list[Attempt] = []
        self.handlers = HandlerPool(
            self.processor,
            self.settler,
            fifo=queue_url.endswith(".fifo"),
            stopping=self._stopping,
            clock=clock,
            on_hung=self._on_hung,
        )
        self.receiver = self._receiver()
        self.fatal: FatalSqsError | None = None
        self.protection = (
            TaskProtection(ecs_agent_uri, self._holding, settings.task_protection_minutes) if ecs_agent_uri else None
        )

    def _processor(
        self,
        handler: Handler,
        emf: EmfLogger,
        hooks: Iterable[MessageHooks],
        gate: IdempotencyGate | None,
        payloads: PayloadStore | None,
    ) -> MessageProcessor:
        return MessageProcessor(
            handler,
            self.settler,
            self.settings,
            self.control_sqs,
            emf,
            queue_name=self.queue_url.rstrip("/").rsplit("/", 1)[-1],
            hooks=hooks,
            loop=AsyncLoop(),
            idempotency=gate,
            on_fatal=self._on_fatal,
            fifo_retry=worker_retries(self.settings, self.queue_url, holding=lambda: not self._stopping.is_set()),
            payloads=payloads,
            deferred_lines=True,
        )

    def _receiver(self) -> Receiver:
        return Receiver(
            sqs=self.sqs,
            receive_sqs=self.receive_sqs,
            control_sqs=self.control_sqs,
            queue_url=self.queue_url,
            settings=self.settings,
            scheduler=self.scheduler,
            handlers=self.handlers,
            processor=self.processor,
            concurrency=self.concurrency,
            stopping=self._stopping,
            on_fatal=self._on_fatal,
            clock=self.clock,
        )

    @property
    def processed(self) -> int:
        """Messages whose handler ended (however it ended)."""
        return self.handlers.processed

    # -- lifecycle --------------------------------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Consume until :meth:`shutdown` (or SIGTERM/SIGINT), then drain and return.

        Raises :class:`FatalSqsError` after a fatal SQS error, without draining: the leases it held run out.
        Raises :class:`HandlerHungError` after the drain that followed a hung handler.
        """
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
        logger.info("consuming %s with %d handlers", self.queue_url, self.concurrency)  # before a receive can fail
        self.heartbeat.start()
        fifo = self.handlers.fifo
        receive = self.receiver.receive_for_handler if handlers_receive(self.concurrency, fifo) else None
        self.handlers.start(self.concurrency, inline=runs_inline(self.concurrency, fifo), receive=receive)
        self.receiver.start()
        if self.protection is not None:
            self.protection.start()
        while not self._stopping.wait(0.2):
            if self._signalled:
                self.shutdown()
        try:
            if self.fatal is not None:
                self._abort()
                raise self.fatal
            drain(
                self.handlers,
                self.receiver,
                settings=self.settings,
                settler=self.settler,
                heartbeat=self.heartbeat,
                processor=self.processor,
                protection=self.protection,
                clock=self.clock,
            )
            self.processor.loop.stop()
            self.processor.payloads.flush(PAYLOAD_FLUSH_S)  # what is left, the lifecycle of its bucket expires
        finally:
            self.processor.emf.flush()  # every line held: a delete not sent (its lease lost, the close's time out)
        if self.hung:
            raise HandlerHungError(
                f"{len(self.hung)} handler(s) still running past max_processing_time "
                f"({self.settings.max_processing_time:g} s): message(s) "
                + ", ".join(attempt.message.message_id for attempt in self.hung)
            )

    def _on_signal(self, signum: int, frame: object) -> None:
        """SIGTERM, SIGINT: only a flag, which :meth:`run`'s loop turns into :meth:`shutdown`. A handler runs on the
        main thread between two of its steps, possibly inside ``Event.wait`` with the stop event's lock held:
        setting that event here would wait for the lock its own thread holds, for ever."""
        self._signalled = True

    def shutdown(self) -> None:
        """Stop receiving now; :meth:`run` drains and returns."""
        if not self._stopping.is_set():
            logger.info("shutdown requested: no more receives, draining")
            self._stopping.set()

    def _on_fatal(self, error: FatalSqsError) -> None:
        if self.fatal is None:
            self.fatal = error
            logger.critical("fatal: %s (queue %s); no retry can fix this, exiting", error, self.queue_url)
        self._stopping.set()

    def _on_hung(self, attempt: Attempt) -> None:
        self.hung.append(attempt)
        logger.critical(
            "the handler of message %s still runs past max_processing_time (%g s) and a thread cannot be stopped: "
            "draining, then exiting (status 3) for a fresh worker",
            attempt.message.message_id,
            self.settings.max_processing_time,
        )
        self.shutdown()

    def _holding(self) -> bool:
        return len(self.scheduler) > 0

    def _abort(self) -> None:
        self.handlers.close()
        self.heartbeat.stop()
        self.settler.close(timeout=1)
        self.processor.loop.stop()
        if self.protection is not None:
            self.protection.stop()
