"""The demo reads its workers' EMF logs while they write them: a line still being written is not read yet, and the
long job's numbers are read once its ``success`` line is there, not once its handler's ledger says it ended (a
worker writes the line just before the message's delete, up to 20 ms after its handler returned). An old flake: the
demo read the long job's extensions as 0 when its handler had ended and its line was not yet written."""

from __future__ import annotations

import json
from pathlib import Path

from jobqueues.emulator.demo.harness import Harness


def harness(tmp_path: Path) -> Harness:
    """A harness with its logs only (no emulator): what reading the logs needs."""
    demo = object.__new__(Harness)
    demo.emf_dir = tmp_path / "emf"
    demo.emf_dir.mkdir()
    demo.ledger = tmp_path / "ledger.jsonl"
    return demo


def line(message_id: str, outcome: str = "success") -> str:
    return json.dumps({"JobType": "Transcode", "MessageId": message_id, "Outcome": outcome, "Extensions": 2})


def test_a_line_still_being_written_is_not_read_and_the_success_waits_for_its_line(tmp_path: Path) -> None:
    # GIVEN the long job's ledger (its handler ended) and a worker's log whose last line is half written
    demo = harness(tmp_path)
    demo.ledger.write_text(json.dumps({"id": "long-1", "message_id": "m-long", "event": "end"}) + "\n")
    log = demo.emf_dir / "worker-1.log"
    log.write_text(line("m-other") + "\n" + line("m-long")[:30])
    # WHEN the demo reads: THEN the whole line is read, the half one is not (and raises nothing)
    assert [record["MessageId"] for record in demo.emf_lines()] == ["m-other"]
    assert not demo.emf_success("Transcode", "long-1")
    # AND once the line is whole, the long job's success is there, with its extensions
    log.write_text(line("m-other") + "\n" + line("m-long") + "\n")
    assert demo.emf_success("Transcode", "long-1")
    assert demo.emf_sum("Transcode", "Extensions", None, job_id="long-1") == 2


def test_a_failure_line_is_no_success(tmp_path: Path) -> None:
    demo = harness(tmp_path)
    demo.ledger.write_text(json.dumps({"id": "long-1", "message_id": "m-long"}) + "\n")
    (demo.emf_dir / "worker-1.log").write_text(line("m-long", "failure") + "\n")
    assert not demo.emf_success("Transcode", "long-1")
