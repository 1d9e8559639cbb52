"""The Lambda adapter's FIFO retries within the invocation (:mod:`sqslease.fifo_retry`).

A failed FIFO record with attempts left is retried in the invocation after the failure policy's delay, while that
delay and a run as long as the failed one fit before the deadline margin: SQS counts no receive for it, and the
later records of its group are neither released nor run before it. A record whose attempts are spent is sent to the
DLQ by the processor and reported done. A retry that does not fit is not waited for: the record is settled by the
failure policy and its group (or the rest of the batch) released, as without retries, each released record having
spent a receive. So the invocation absorbs the retries of a record only while it has time for them; the synth
warning ``jobqueues:fifoRetriesExceedLambdaTimeout`` names the ``max_receive_count`` whose retries fit in one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqslease.failure_policy import retry_delay
from sqslease.message import Message
from sqslease.processor import MessageProcessor, ProcessResult

logger = logging.getLogger("sqslease")


def retry_in_invocation(
    processor: MessageProcessor,
    message: Message,
    result: ProcessResult,
    run: Callable[[], ProcessResult],
    time_left: Callable[[], float],
    sleep: Callable[[float], None],
) -> ProcessResult:
    """Retry ``message``, whose run ended in ``result``, by ``run()`` while its result is held and the retry fits.

    :param time_left: seconds the invocation may still use (before its deadline margin).
    :param sleep: waits out the back-off, in seconds (``time.sleep``; a test's fake clock).
    :returns: the last run's result; never held (a retry that does not fit is settled by the failure policy).
    """
    while result.held:
        delay = retry_delay(processor.settings, message.receive_count)
        needed = delay + result.processing_ms / 1000  # the back-off, and a run as long as the one that failed
        if needed >= time_left():
            logger.warning(
                "message %s of group %s failed (receive %d): its retry in %.0f s does not fit before the invocation's "
                "deadline; released by the failure policy, with its group's later records",
                message.message_id,
                message.message_group_id,
                message.receive_count,
                delay,
            )
            processor.apply_failure_policy(message)
            return result._replace(held=False)
        sleep(delay)
        message.retries_in_process += 1
        result = run()
    return result
