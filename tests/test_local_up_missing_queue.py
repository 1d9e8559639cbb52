"""``jobqueues local up`` on an app whose adopted queue the emulator lacks (no stack creates it): the status table
says so on that row, and the run goes on, where it ended at once on SQS's "The specified queue does not exist",
naming no queue (found by a docs-only trial)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rich.console import Console
from support.existing_queues import ExistingQueues

from jobqueues.cli.local_view import status_table
from jobqueues.emulator.consumers.runner import ConsumerRunner, Row
from jobqueues.ops.discovery import JobType

ENDPOINT = "http://localhost:4566/123456789012"


class Emulator:
    def __init__(self, sqs: ExistingQueues) -> None:
        self.sqs = sqs

    def client(self, service: str) -> Any:
        return self.sqs if service == "sqs" else object()


def test_a_row_of_a_queue_that_does_not_exist_says_so_and_the_others_are_read(tmp_path: Path) -> None:
    # GIVEN an adopted job type whose queue and DLQ the emulator lacks, beside one whose queues exist
    billing = JobType("Billing", "S", "S/Billing", f"{ENDPOINT}/legacy-billing", f"{ENDPOINT}/legacy-billing-dlq")
    emails = JobType("Emails", "S", "S/Emails", f"{ENDPOINT}/S-Emails", f"{ENDPOINT}/S-Emails-dlq")
    runner = ConsumerRunner(
        Emulator(ExistingQueues("S-Emails", "S-Emails-dlq")),  # type: ignore[arg-type]
        [billing, emails],
        tmp_path,
        tmp_path / "logs",
    )
    # WHEN the table's rows are read
    missing, present = runner._depths(billing), runner._depths(emails)
    # THEN the missing one says which of its queues do not exist (short: a table cell; local deploy's note names
    # them), and the other has its counts
    assert missing.consumer == "none; queue and DLQ missing", missing
    assert (missing.visible, missing.dead_lettered) == (0, None) and missing.queue_missing
    assert (present.consumer, present.visible, present.dead_lettered) == ("none", 2, 2)
    # AND the table shows "-" for what it could not read, never 0 (as `jobqueues status` does)
    console = Console(width=200, record=True, color_system=None)
    console.print(status_table(SimpleNamespace(rows=lambda: [missing, present])))  # type: ignore[arg-type]
    cells = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[3:6]] for line in rows_of(console)}
    assert cells == {"Billing": ["-", "-", "-"], "Emails": ["2", "0", "2"]}


def test_a_consumer_whose_dead_letter_queue_is_missing_still_shows_its_work() -> None:
    # GIVEN a Lambda job and an ECS job whose DLQs are missing (their consumer cells say so), their queues there
    rows = [
        Row("Thumbnails", "lambda; DLQ missing", visible=1, invocations=7),
        Row("Render", "ecs; DLQ missing", workers=2, draining=1),
    ]
    # WHEN the table is printed
    console = Console(width=200, record=True, color_system=None)
    console.print(status_table(SimpleNamespace(rows=lambda: rows)))  # type: ignore[arg-type]
    # THEN their local column is their invocations and workers, as without the note
    local = {line.split("│")[1].strip(): line.split("│")[6].strip() for line in rows_of(console)}
    assert local == {"Thumbnails": "7 invocations", "Render": "2 workers, 1 draining"}


def rows_of(console: Console) -> list[str]:
    """The table's body lines (a job type's row each)."""
    return [line for line in console.export_text().splitlines() if line.startswith("│") and "job type" not in line]
