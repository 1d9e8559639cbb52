"""The cold path's partial rows: for a block of decoded lines (:mod:`jobstats.decode`), with numpy, the rows
:func:`jobstats.stats.partial_aggregate` computes in Spark, field for field (nulls where Spark's sums have no value
to add); and :func:`merge_rows`, which adds up the rows of one file's blocks.

The malformed-line rules are :data:`jobstats.rules.BOUNDS`, the table Spark's path evaluates. Durations go into
buckets by ``floor(log10(ms) x 500)`` in both, with their platform's ``log10``: a value within a few ulps of a
bucket's edge could land on either side in the two (the 0.2305 % bound holds on either side).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from jobstats.decode import Columns
from jobstats.histogram import BUCKETS_PER_DECADE, MIN_MS, RECEIVE_COUNT_CAP, RECEIVES_PER_CELL
from jobstats.rules import BOUNDS, NO_JOB_TYPE, Bound
from jobstats.schema import FAILURE_OUTCOMES
from jobstats.stats import DAY_MS, PARTIAL_KEYS
from sqslease.emf import UNRUN_OUTCOMES

#: Sums that are null when no line added to them (Spark's ``sum`` of nothing), and the maps.
NULLABLE_SUMS = ("failures", "redeliveries", "extensions", "lease_lost", "sum_us")
COUNTS = ("count", "released")
MINIMUMS = ("min_ms", "first_ms", "queue_min_ms")
MAXIMUMS = ("max_ms", "last_ms", "queue_max_ms")
MAPS = ("cells", "queue_cells")

Coded = tuple[np.ndarray, list[Any]]  # per line, the index of its value in the list of distinct values


def aggregate(columns: Columns, file: str) -> list[dict[str, Any]]:
    """The partial rows of ``columns`` (lines of ``file``): one per malformed reason, one per day, stack, job type
    and queue of the records."""
    coded = {path: _codes(values) for path, values in columns.texts.items()}
    reason = reasons(columns, coded)
    rows = [
        _row(file, {"reason": int(r)}, count=int(n))
        for r, n in zip(*np.unique(reason[reason >= 0], return_counts=True), strict=True)
    ]
    records = np.flatnonzero(reason < 0)
    if len(records):
        rows.extend(_record_rows(columns, coded, records, file))
    return rows


def reasons(columns: Columns, coded: dict[str, Coded]) -> np.ndarray:
    """Per line, the index of the first malformed reason that applies, or -1 (a record)."""
    reason = np.full(columns.size, -1, dtype=np.int64)
    for index in sorted(BOUNDS, reverse=True):  # the first reason that applies is written last
        for bound in BOUNDS[index]:
            reason[_violated(bound, columns, coded)] = index
    reason[_per_line(coded["JobType"], lambda job: job is None or job == "")] = NO_JOB_TYPE
    return reason


def _violated(bound: Bound, columns: Columns, coded: dict[str, Coded]) -> np.ndarray:
    if bound.field in coded:
        null = _per_line(coded[bound.field], lambda value: value is None)
        return null if bound.required else np.zeros(columns.size, dtype=bool)
    values = columns.numbers[bound.field]
    null = np.isnan(values)  # a decoded line has no NaN of its own: NaN is a missing value
    bad = null.copy() if bound.required else np.zeros(columns.size, dtype=bool)
    inside = np.ones(columns.size, dtype=bool)
    if bound.low is not None:
        inside &= values >= bound.low
    if bound.high is not None:
        inside &= values <= bound.high
    return bad | (~null & ~inside)


def _record_rows(columns: Columns, coded: dict[str, Coded], lines: np.ndarray, file: str) -> list[dict]:
    """One row per (day, stack, job type, queue) of the well-formed ``lines``."""
    outcome = coded["Outcome"][0][lines], coded["Outcome"][1]
    ran = ~_per_line(outcome, lambda value: value in UNRUN_OUTCOMES)
    success = _per_line(outcome, lambda value: value == "success")
    number = {path: values[lines] for path, values in columns.numbers.items()}
    receives = np.nan_to_num(number["ReceiveCount"], nan=1.0)
    timestamp = number["_aws.Timestamp"].astype(np.int64)  # within the bounds: whole and exact
    day = np.floor(number["_aws.Timestamp"] / DAY_MS).astype(np.int64)
    keys = list(zip(day.tolist(), *(_key_texts(coded[path], lines) for path in ("Stack", "JobType", "Queue"))))
    group, group_keys = _codes(keys)
    sizes = len(group_keys)
    ms = number["ProcessingTime"]
    queue_ms = number["QueueTime"]
    queued = ran & ~np.isnan(queue_ms)
    capped = np.minimum(receives, RECEIVE_COUNT_CAP)
    cell = _bucket(ms) * RECEIVES_PER_CELL + np.where(success, capped, 0).astype(np.int64)
    stats: dict[str, Any] = {
        "count": _sum(group, ran, sizes),
        "released": _sum(group, ~ran, sizes),
        "failures": _sum(group, _per_line(outcome, lambda value: value in FAILURE_OUTCOMES), sizes),
        "redeliveries": _sum(group, (receives > 1) & ran, sizes),
        "extensions": _sum(group, np.nan_to_num(number["Extensions"]).astype(np.int64) * ran, sizes),
        "lease_lost": _sum(group, np.nan_to_num(number["LeaseLost"]).astype(np.int64) * ran, sizes),
        "sum_us": _sum(group, np.where(ran, np.rint(ms * 1000), 0).astype(np.int64), sizes),
        "min_ms": _extreme(np.minimum, group, ms, ran, sizes),
        "max_ms": _extreme(np.maximum, group, ms, ran, sizes),
        "first_ms": _extreme(np.minimum, group, timestamp, None, sizes),
        "last_ms": _extreme(np.maximum, group, timestamp, None, sizes),
        "queue_min_ms": _extreme(np.minimum, group, queue_ms, queued, sizes),
        "queue_max_ms": _extreme(np.maximum, group, queue_ms, queued, sizes),
        "cells": _maps(group[ran], cell[ran], sizes),
        "queue_cells": _maps(group[queued], _bucket(queue_ms[queued]), sizes),
    }
    any_ran = stats["count"] > 0
    rows = []
    for g, (row_day, stack, job_type, queue) in enumerate(group_keys):
        values = {name: (column[g] if isinstance(column, list) else column[g].item()) for name, column in stats.items()}
        for name in ("extensions", "lease_lost", "sum_us"):  # Spark sums over the lines that ran: none, null
            values[name] = values[name] if any_ran[g] else None
        keys = {"reason": None, "day": row_day, "stack": stack, "job_type": job_type, "queue": queue}
        rows.append(_row(file, keys, **values))
    return rows


def _row(file: str, keys: dict[str, Any], **values: Any) -> dict[str, Any]:
    """A partial row: ``keys`` (the rest of :data:`jobstats.stats.PARTIAL_KEYS` null), ``values``, the rest null
    (the counts 0, the maps empty): what Spark gives a group of malformed lines."""
    row: dict[str, Any] = {key: None for key in PARTIAL_KEYS} | {"file": file} | keys
    row |= {name: 0 for name in COUNTS} | {name: None for name in (*NULLABLE_SUMS, *MINIMUMS, *MAXIMUMS)}
    return row | {name: {} for name in MAPS} | values


def merge_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the same :data:`jobstats.stats.PARTIAL_KEYS` (one file's blocks) added into one, as Spark's
    aggregation of all their lines would give it."""
    merged: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[k] for k in PARTIAL_KEYS)
        into = merged.get(key)
        if into is None:
            merged[key] = {**row, **{name: dict(row[name]) for name in MAPS}}
            continue
        for name in (*COUNTS, *NULLABLE_SUMS):
            into[name] = _combine(sum, into[name], row[name])
        for name in MINIMUMS:
            into[name] = _combine(min, into[name], row[name])
        for name in MAXIMUMS:
            into[name] = _combine(max, into[name], row[name])
        for name in MAPS:
            for cell, count in row[name].items():
                into[name][cell] = into[name].get(cell, 0) + count
    return list(merged.values())


def _combine(fold: Any, a: Any, b: Any) -> Any:
    present = [v for v in (a, b) if v is not None]
    return fold(present) if present else None


def _codes(values: list[Any]) -> Coded:
    """Per value, the index of its first occurrence's rank among the distinct values; and those values."""
    index: dict[Any, int] = {}
    first = np.fromiter(map(index.setdefault, values, itertools.count()), dtype=np.int64, count=len(values))
    positions, codes = np.unique(first, return_inverse=True)
    return codes.reshape(-1), [values[p] for p in positions.tolist()]


def _per_line(coded: Coded, test: Any) -> np.ndarray:
    """``test`` of each line's value, evaluated once per distinct value."""
    codes, distinct = coded
    return np.array([bool(test(value)) for value in distinct], dtype=bool)[codes]


def _key_texts(coded: Coded, lines: np.ndarray) -> list[Any]:
    """The values of ``lines``, an empty text as null (a ``Stack`` of ``""`` is none)."""
    codes, distinct = coded
    normalized = [value if value != "" else None for value in distinct]
    return [normalized[c] for c in codes[lines].tolist()]


def _bucket(ms: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.floor(np.log10(np.maximum(ms, MIN_MS)) * BUCKETS_PER_DECADE).astype(np.int64)


def _sum(group: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    total = np.zeros(size, dtype=np.int64)
    np.add.at(total, group, values.astype(np.int64))
    return total


def _extreme(fold: np.ufunc, group: np.ndarray, values: np.ndarray, mask: np.ndarray | None, size: int) -> list:
    """Per group, the ``fold`` (minimum or maximum) of ``values`` where ``mask``; None where there are none."""
    if mask is not None:
        group, values = group[mask], values[mask]
    out = np.zeros(size, dtype=values.dtype)
    seen = np.zeros(size, dtype=bool)
    seen[group] = True
    if len(group):
        firsts = np.unique(group, return_index=True)[1]
        out[group[firsts]] = values[firsts]
        fold.at(out, group, values)
    return [value if present else None for value, present in zip(out.tolist(), seen.tolist(), strict=True)]


def _maps(group: np.ndarray, keys: np.ndarray, size: int) -> list[dict[int, int]]:
    """Per group, ``key -> lines``."""
    maps: list[dict[int, int]] = [{} for _ in range(size)]
    if len(group):
        pairs, counts = np.unique(np.stack([group, keys]), axis=1, return_counts=True)
        for g, key, count in zip(*pairs.tolist(), counts.tolist(), strict=True):
            maps[g][key] = count
    return maps
