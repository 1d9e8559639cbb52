"""Long-polling consumer for ECS/Fargate and any long-running worker.

    python -m sqslease.worker --queue-url URL --handler package.module:function [--concurrency N]

Environment equivalents: ``SQSLEASE_QUEUE_URL``, ``SQSLEASE_HANDLER``, ``SQSLEASE_CONCURRENCY``, plus every
``SQSLEASE_*`` lease setting (see :class:`sqslease.settings.LeaseSettings`). EMF lines go to stdout, logs
to stderr.

Shutdown (SIGTERM/SIGINT): stop receiving at once, release messages not yet started (visibility 0,
batched), keep extending running handlers until they finish or ``shutdown_grace`` ends, then release the
rest. No message stays invisible for a full lease after a shutdown.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from sqslease.emf import EmfLogger
from sqslease.heartbeat import Heartbeat
from sqslease.message import Message
from sqslease.processor import Handler, MessageProcessor, import_object
from sqslease.retry import THROTTLING_CODES, error_code
from sqslease.scheduler import LeaseScheduler
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler

logger = logging.getLogger("sqslease")

RECEIVE_ATTRIBUTES = ["ApproximateReceiveCount", "SentTimestamp", "MessageGroupId", "ApproximateFirstReceiveTimestamp"]
GOVERNOR_CHECK_INTERVAL_S = 10


class Worker:
    """Receives, runs and settles messages of one queue.

    :param sqs: a boto3 SQS client.
    :param queue_url: the queue to consume.
    :param handler: ``handler(body, message)``; raising means failure.
    :param settings: lease and failure settings.
    :param concurrency: handlers running at once. Default 4.
    :param emf: where the per-message EMF lines go. Default stdout.
    :param clock: monotonic clock (tests).
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        handler: Handler,
        settings: LeaseSettings,
        concurrency: int = 4,
        emf: EmfLogger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.sqs = sqs
        self.queue_url = queue_url
        self.settings = settings
        self.concurrency = concurrency
        self.clock = clock
        self.scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        self.heartbeat = Heartbeat(sqs, queue_url, self.scheduler, settings, clock)
        self.settler = Settler(sqs, queue_url, self.scheduler)
        self.processor = MessageProcessor(
            handler, self.settler, settings, sqs, emf, queue_name=queue_url.rstrip("/").rsplit("/", 1)[-1]
        )
        self._ready: queue.Queue[Message] = queue.Queue()
        self._running = 0
        self._running_lock = threading.Lock()
        self._stopping = threading.Event()
        self._handlers: list[threading.Thread] = []
        self.processed = 0

    # -- lifecycle --------------------------------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Consume until :meth:`shutdown` (or SIGTERM/SIGINT), then drain and return."""
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda signum, frame: self.shutdown())
        self.heartbeat.start()
        self._handlers = [
            threading.Thread(target=self._handle_loop, name=f"sqslease-handler-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        for thread in self._handlers:
            thread.start()
        receiver = threading.Thread(target=self._receive_loop, name="sqslease-receiver", daemon=True)
        receiver.start()
        logger.info("consuming %s with %d handlers", self.queue_url, self.concurrency)
        while not self._stopping.wait(0.2):
            pass
        self._drain(receiver)

    def shutdown(self) -> None:
        """Stop receiving now; :meth:`run` drains and returns."""
        if not self._stopping.is_set():
            logger.info("shutdown requested: no more receives, draining")
            self._stopping.set()

    def _drain(self, receiver: threading.Thread) -> None:
        grace_ends = self.clock() + self.settings.shutdown_grace
        self._release_unstarted()
        for _ in self._handlers:
            self._ready.put(_STOP)  # type: ignore[arg-type]
        # A long poll in flight may still return messages: they are released as they arrive.
        receiver.join(timeout=max(0.0, grace_ends - self.clock()))
        for thread in self._handlers:
            thread.join(timeout=max(0.0, grace_ends - self.clock()))
        self._release_unstarted()
        leftovers = [lease for lease in self.scheduler if not lease.settled]
        if leftovers:
            logger.warning("grace period over: releasing %d messages still being handled", len(leftovers))
            self.settler.release_all(leftovers)
        self.heartbeat.stop()
        self.settler.close()
        logger.info("stopped after processing %d messages", self.processed)

    def _release_unstarted(self) -> None:
        unstarted: list[Message] = []
        while True:
            try:
                message = self._ready.get_nowait()
            except queue.Empty:
                break
            if message is not _STOP:
                unstarted.append(message)
        if unstarted:
            logger.info("releasing %d messages not yet started", len(unstarted))
            self.settler.release_all([m.lease for m in unstarted])

    # -- receiving --------------------------------------------------------------------------------
    def _receive_loop(self) -> None:
        failures = 0
        next_governor_check = 0.0
        paused_by_governor = False
        while not self._stopping.is_set():
            capacity = self._capacity()
            if capacity <= 0:
                time.sleep(0.02)
                continue
            now = self.clock()
            if now >= next_governor_check:
                paused_by_governor = self._queue_over_limit()
                next_governor_check = now + GOVERNOR_CHECK_INTERVAL_S
            if paused_by_governor:
                self._stopping.wait(1)
                continue
            sent_at = self.clock()
            try:
                response = self.sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=min(10, capacity),
                    WaitTimeSeconds=self.settings.wait_time,
                    VisibilityTimeout=int(self.settings.visibility_timeout),
                    MessageSystemAttributeNames=RECEIVE_ATTRIBUTES,
                    MessageAttributeNames=["All"],
                )
                failures = 0
            except Exception as error:
                failures += 1
                code, _ = error_code(error)
                delay = min(20.0, 0.2 * 2**failures) * random.uniform(0.5, 1.0)
                level = logging.WARNING if code in THROTTLING_CODES else logging.ERROR
                logger.log(level, "ReceiveMessage failed (%s: %s); retrying in %.1f s", code, error, delay)
                self._stopping.wait(delay)
                continue
            messages = [
                Message.from_sqs(
                    raw,
                    self.queue_url,
                    self.scheduler.add(raw["ReceiptHandle"], sent_at, self.settings.visibility_timeout),
                )
                for raw in response.get("Messages", [])
            ]
            if self._stopping.is_set() and messages:
                # Received after shutdown began: hand them straight back.
                self.settler.release_all([m.lease for m in messages])
                break
            for message in messages:
                self._ready.put(message)

    def _capacity(self) -> int:
        """How many more messages to receive: enough to keep every handler busy, one batch ahead at most."""
        if len(self.scheduler) >= self.settings.max_in_flight:
            return 0
        with self._running_lock:
            outstanding = self._running + self._ready.qsize()
        return min(2 * self.concurrency - outstanding, self.settings.max_in_flight - len(self.scheduler))

    def _queue_over_limit(self) -> bool:
        """In-flight governor: long-polling consumers never see OverLimit, so look before receiving."""
        try:
            attributes = self.sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
            )["Attributes"]
        except Exception as error:
            logger.warning("in-flight check failed (%s); receiving anyway", error)
            return False
        in_flight = int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0))
        if in_flight >= self.settings.queue_in_flight_limit:
            logger.warning(
                "queue has %d in-flight messages (limit %d of the 120,000 quota): pausing receives",
                in_flight,
                self.settings.queue_in_flight_limit,
            )
            return True
        return False

    # -- handling ---------------------------------------------------------------------------------
    def _handle_loop(self) -> None:
        while True:
            message = self._ready.get()
            if message is _STOP:
                return
            if self._stopping.is_set():
                self._ready.put(message)  # leave it for the release of unstarted messages
                return
            with self._running_lock:
                self._running += 1
            try:
                self.processor.process(message)
            except Exception:  # process() settles and logs handler errors; this is a bug in sqslease
                logger.exception("processing message %s failed unexpectedly", message.message_id)
            finally:
                with self._running_lock:
                    self._running -= 1
                    self.processed += 1


_STOP: Any = object()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sqslease.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--queue-url", default=os.environ.get("SQSLEASE_QUEUE_URL"))
    parser.add_argument("--handler", default=os.environ.get("SQSLEASE_HANDLER"), help="package.module:function")
    parser.add_argument("--concurrency", type=int, default=int(os.environ.get("SQSLEASE_CONCURRENCY", "4")))
    parser.add_argument("--log-level", default=os.environ.get("SQSLEASE_LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if not args.queue_url or not args.handler:
        parser.error("--queue-url and --handler (or SQSLEASE_QUEUE_URL and SQSLEASE_HANDLER) are required")
    try:
        settings = LeaseSettings.from_env()
        handler = import_object(args.handler)
    except ValueError as error:
        parser.error(str(error))
    if not callable(handler):
        parser.error(f"--handler {args.handler!r} is not callable")

    import boto3

    worker = Worker(boto3.client("sqs"), args.queue_url, handler, settings, args.concurrency)
    worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
