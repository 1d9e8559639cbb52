"""The runs in the consumers' EMF lines: one per line of a message, with when it ran and who wrote it (for the
chaos report, :mod:`jobqueues.emulator.chaos.report`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: An EMF line: the text a consumer wrote (lines that are not JSON objects are skipped) or its parsed object.
EmfLine = str | Mapping[str, Any]


@dataclass(frozen=True)
class Run:
    """One EMF line of one message: ``start_ms``/``end_ms`` in ms since the epoch; ``stream``: who wrote it;
    ``record``: the line's fields that say whose it is (``JobType``, ``Stack``, ``Queue``)."""

    message_id: str
    job_type: str
    outcome: str
    start_ms: float
    end_ms: float
    stream: str
    record: Mapping[str, Any] = field(default_factory=dict)


def parse_runs(emf_lines_by_stream: Mapping[str, Iterable[EmfLine]]) -> list[Run]:
    """The runs in the consumers' EMF lines, by log stream (one per process). Lines that are not sqslease EMF
    lines (other log lines, objects without MessageId or Outcome) are skipped."""
    runs = []
    for stream, lines in emf_lines_by_stream.items():
        for line in lines:
            record = _record(line)
            if record is None:
                continue
            end = float(record["_aws"]["Timestamp"])
            runs.append(
                Run(
                    message_id=str(record["MessageId"]),
                    job_type=str(record.get("JobType", "")),
                    outcome=str(record["Outcome"]),
                    start_ms=end - float(record.get("ProcessingTime", 0)),
                    end_ms=end,
                    stream=stream,
                    record={k: record[k] for k in ("JobType", "Stack", "Queue") if k in record},
                )
            )
    return runs


def _record(line: EmfLine) -> Mapping[str, Any] | None:
    if isinstance(line, str):
        text = line.strip()
        if not text.startswith("{"):
            return None
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        line = parsed
    try:
        line["_aws"]["Timestamp"]
    except (KeyError, TypeError):
        return None
    return line if "MessageId" in line and "Outcome" in line else None
