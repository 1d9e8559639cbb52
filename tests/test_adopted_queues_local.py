"""A queue adopted with ``JobQueue.from_queue_attributes`` is no resource of its stack, so a local deploy does not
create it: ``jobqueues local deploy`` (and ``local up``) says so, with the command that creates it in the emulator,
instead of leaving its consumer to fail on a queue that does not exist."""

from __future__ import annotations

from support.existing_queues import ExistingQueues

from jobqueues.emulator.adopted_queues import adopted_queue_notes
from jobqueues.ops.discovery import JobType

ENDPOINT = "http://localhost:4566"


def job(
    name: str, queue: str, *, adopted: bool, fifo: bool = False, dlq: str | None = None, vt: float | None = None
) -> JobType:
    return JobType(
        name,
        "Legacy",
        f"Legacy/{name}",
        f"{ENDPOINT}/123456789012/{queue}",
        None if dlq is None else f"{ENDPOINT}/123456789012/{dlq}",
        adopted=adopted,
        fifo=fifo,
        visibility_timeout_s=vt,
    )


def test_an_adopted_queue_the_emulator_lacks_is_a_note_with_the_command_that_creates_it() -> None:
    # GIVEN a declared job type (its stack created its queue), an adopted one whose queue exists, and two adopted
    # ones whose queues do not: a standard queue with a DLQ that is missing too, and a FIFO queue
    job_types = [
        job("Declared", "Legacy-Declared", adopted=False),
        job("Present", "present-queue", adopted=True),
        job("Billing", "legacy-billing", adopted=True, dlq="legacy-billing-dlq", vt=300),
        job("Ledger", "ledger.fifo", adopted=True, fifo=True),
    ]
    # WHEN the notes are made against the emulator's queues
    notes = adopted_queue_notes(job_types, ExistingQueues("present-queue", "Legacy-Declared"), ENDPOINT)
    # THEN each missing adopted queue has one note, with the command that creates it as declared (its VT, FIFO)
    assert notes == [
        "note: Legacy/Billing adopts queue legacy-billing (JobQueue.from_queue_attributes), which no stack creates: "
        "create it before its consumer runs: aws --endpoint-url http://localhost:4566 sqs create-queue --queue-name "
        "legacy-billing --attributes VisibilityTimeout=300 (and its dead-letter queue legacy-billing-dlq)",
        "note: Legacy/Ledger adopts queue ledger.fifo (JobQueue.from_queue_attributes), which no stack creates: "
        "create it before its consumer runs: aws --endpoint-url http://localhost:4566 sqs create-queue --queue-name "
        "ledger.fifo --attributes FifoQueue=true",
    ]


def test_nothing_is_said_when_every_adopted_queue_is_there() -> None:
    found = [job("Present", "present-queue", adopted=True, dlq="present-dlq")]
    assert adopted_queue_notes(found, ExistingQueues("present-queue", "present-dlq"), ENDPOINT) == []
