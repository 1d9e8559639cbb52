"""Queues adopted with ``JobQueue.from_queue_attributes`` that the emulator does not hold: no stack creates them (in
AWS their owner does), so after a local deploy their consumers would fail on a queue that does not exist.
``jobqueues local deploy`` and ``local up`` print a note for each, with the command that creates it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from jobqueues.ops.discovery import JobType
from jobqueues.ops.queues import queue_attributes, queue_name


def adopted_queue_notes(job_types: Sequence[JobType], sqs: Any, endpoint: str) -> list[str]:
    """One note per adopted job type whose queue, or dead-letter queue, ``sqs`` (a boto3 client of the emulator at
    ``endpoint``) does not hold; none when they are all there."""
    notes = []
    for job in job_types:
        if not job.adopted or job.queue_url is None:
            continue
        queue_missing = _missing(sqs, job.queue_url)
        dlq = job.dead_letter_queue_url
        dlq_missing = dlq is not None and _missing(sqs, dlq)
        if not (queue_missing or dlq_missing):
            continue
        attributes = ["FifoQueue=true"] if job.fifo else []
        create = f"aws --endpoint-url {endpoint} sqs create-queue --queue-name"
        if queue_missing:
            name = queue_name(job.queue_url)
            also = f" (and its dead-letter queue {queue_name(dlq)})" if dlq is not None and dlq_missing else ""
            what = f"queue {name}"
            if job.visibility_timeout_s is not None:  # as declared: drift compares the queue's VT with it
                attributes.append(f"VisibilityTimeout={math.ceil(job.visibility_timeout_s)}")
        else:
            assert dlq is not None
            name, also = queue_name(dlq), ""
            what = f"dead-letter queue {name}"
        given = f" --attributes {','.join(attributes)}" if attributes else ""
        notes.append(
            f"note: {job.name} adopts {what} (JobQueue.from_queue_attributes), which no stack creates: create it "
            f"before its consumer runs: {create} {name}{given}{also}"
        )
    return notes


def _missing(sqs: Any, url: str) -> bool:
    return queue_attributes(sqs, url, ["QueueArn"]) is None
