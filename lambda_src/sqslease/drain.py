"""The worker's drain after SIGTERM/SIGINT: spend no receive twice (see :mod:`sqslease.worker`, "Shutdown").

In order: wait for the long poll in flight (what it brings is held unstarted); let handlers that come free run the
messages received before the drain until the release point (``poll_wait`` + :data:`DRAIN_POLL_MARGIN_S` after the
signal, capped by ``shutdown_grace``); release what is still unstarted, and hide the FIFO messages parked for a retry
in process for what is left of their delay; wait for the running handlers until the grace ends, then release theirs;
confirm the deletes and releases before the heartbeat stops. The messages of timed-out handlers still running (hung)
were held meanwhile; they are settled by the failure policy last, as the worker exits. With idempotency, a running
message released at the grace's end has its record deleted first, so that the consumer that receives it next runs it
at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqslease.clients import RECEIVE_READ_MARGIN_S
from sqslease.handler_pool import HandlerPool
from sqslease.heartbeat import Heartbeat
from sqslease.processor import MessageProcessor
from sqslease.receiver import Receiver
from sqslease.settings import LeaseSettings
from sqslease.settle import Settler
from sqslease.task_protection import TaskProtection

logger = logging.getLogger("sqslease")

#: Seconds a long poll of another worker signalled at the same moment may answer after its wait: a drain releases
#: unstarted messages only once ``poll_wait`` plus this has passed, so no such poll can take them.
DRAIN_POLL_MARGIN_S = 1.0
DRAIN_LOOK_S = 0.05  # how often a drain looks whether handlers took the unstarted messages


def drain(
    handlers: HandlerPool,
    receiver: Receiver,
    *,
    settings: LeaseSettings,
    settler: Settler,
    heartbeat: Heartbeat,
    processor: MessageProcessor,
    protection: TaskProtection | None,
    clock: Callable[[], float],
) -> None:
    """Drain one worker whose receiving just stopped; returns when its leases are settled or the grace ended.

    :param receiver: the receive loop (its poll in flight is waited for, not abandoned).
    """
    started = clock()
    grace_ends = started + settings.shutdown_grace
    handlers.release_at = min(grace_ends, started + settings.poll_wait + DRAIN_POLL_MARGIN_S)
    # The poll in flight is waited for, not abandoned: SQS would go on with it and hide what it finds. It
    # answers within poll_wait, or times out (the receive client's read timeout).
    answered_by = min(grace_ends, started + settings.poll_wait + RECEIVE_READ_MARGIN_S)
    if not receiver.wait_for_poll(timeout=max(0.0, answered_by - clock())):
        logger.warning(
            "abandoning a long poll still unanswered: a message it receives stays hidden for %.0f s",
            settings.first_lease,
        )
    # Handlers that come free meanwhile run what was received. Releasing earlier could hand a message to
    # a poll of another worker drained at the same moment, which might have no handler for it.
    while handlers.waiting() and clock() < handlers.release_at:
        time.sleep(DRAIN_LOOK_S)
    unstarted = handlers.take_unstarted()  # handlers take nothing new
    if unstarted:
        logger.info("releasing %d messages not yet started", len(unstarted))
        settler.release_all([m.lease for m in unstarted], timeout=max(1.0, grace_ends - clock()))
        for message in unstarted:
            processor.record_released(message)
    handlers.release_parked()
    handlers.join(until=grace_ends)
    still_running = handlers.still_running()
    if still_running:
        logger.warning("grace period over: releasing %d messages still being handled", len(still_running))
        if processor.idempotency is not None:  # their records first: the next consumer takes over at once
            for message in still_running:
                processor.idempotency.fail(message.lease, message.message_id)
        settler.release_all([m.lease for m in still_running], timeout=1)
    # Timed-out handlers still running held their leases: released now (failure policy), as the process exits.
    handlers.release_timed_out()
    # The heartbeat keeps holding leases until their deletes and releases are confirmed.
    settler.close(timeout=max(1.0, grace_ends - clock()))
    heartbeat.stop()
    if protection is not None:
        protection.stop()
    logger.info("stopped after processing %d messages", handlers.processed)
