"""Files that repeat another file's records, counted once.

``jobqueues local up`` keeps each consumer's output (its EMF lines among its logging lines) in the logs directory
and the same EMF lines again under its ``emf/`` folder: jobstats given the whole directory would count every
message twice. Two files hold the same records when their well-formed partial rows are equal: every statistic of
the lines that parsed (counts, microsecond sums, extremes, first and last timestamps, the histogram cells), per
day, stack, job type and queue. Lines of different runs differ at least in their timestamps and durations; two
files of one run's lines are copies. Pure Python, on the partial rows (cached ones too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any


def duplicate_files(rows_by_file: Mapping[str, list[dict[str, Any]]]) -> dict[str, str]:
    """``copy -> the file kept`` for every file whose records another file holds too. Of files with the same
    records the one kept has the fewest malformed lines (``emf/`` rather than the log around it), then the first
    URI. Files without a record are no copies."""
    # Only files that agree on a few totals per key can be copies: the whole rows are compared for those alone.
    by_totals: dict[frozenset, list[str]] = defaultdict(list)
    for uri, rows in rows_by_file.items():
        by_totals[_totals(rows)].append(uri)
    alike = [uri for totals, uris in by_totals.items() if totals and len(uris) > 1 for uri in uris]
    kept: dict[tuple, str] = {}
    copies: dict[str, str] = {}
    for uri in sorted(alike, key=lambda u: (_malformed(rows_by_file[u]), u)):
        records = _records(rows_by_file[uri])
        original = kept.setdefault(records, uri)
        if original != uri:
            copies[uri] = original
    return dict(sorted(copies.items()))


def _totals(rows: list[dict[str, Any]]) -> frozenset:
    """Per key of the well-formed rows, the lines and their first and last timestamps: equal in copies."""
    keys = ("day", "stack", "job_type", "queue", "count", "released", "first_ms", "last_ms")
    return frozenset(tuple(row[key] for key in keys) for row in rows if row["reason"] is None)


def _records(rows: list[dict[str, Any]]) -> tuple:
    """The well-formed rows of a file, without its name, in a canonical order."""
    frozen = (
        tuple(sorted((key, _frozen(value)) for key, value in row.items() if key != "file"))
        for row in rows
        if row["reason"] is None
    )
    return tuple(sorted(frozen, key=repr))


def _frozen(value: Any) -> Any:
    return tuple(sorted(value.items())) if isinstance(value, dict) else value


def _malformed(rows: list[dict[str, Any]]) -> int:
    return sum(row["count"] for row in rows if row["reason"] is not None)
