"""Reading the EMF lines (one JSON object a message) a consumer wrote to a stream or to stdout."""

from __future__ import annotations

import io
import json


def emf_lines(text: str) -> list[dict]:
    """The EMF records in ``text`` (other lines, such as logs, are skipped)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def read_emf(stream: io.StringIO) -> list[dict]:
    """The EMF records written so far to ``stream`` (an ``EmfLogger``'s)."""
    return emf_lines(stream.getvalue())


def outcomes(stream: io.StringIO) -> dict[str, str]:
    """Message id -> Outcome of its last record."""
    return {record["MessageId"]: record["Outcome"] for record in read_emf(stream)}
