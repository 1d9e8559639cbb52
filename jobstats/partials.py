"""The cold path's partial rows: for a block of decoded lines (:mod:`jobstats.decode`), with numpy, the rows
:func:`jobstats.stats.partial_aggregate` computes in Spark, field for field (nulls where Spark's sums have no value
to add); and :func:`merge_rows`, which adds up the rows of one file's blocks.

The malformed-line rules are :data:`jobstats.rules.BOUNDS`, the table Spark's path evaluates. Durations go into
buckets by ``floor(log10(ms) x 500)`` in both, with their platform's ``log10``: a value within a few ulps of a
bucket's edge could land on either side in the two (the 0.2305 % bound holds on either side).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
#: Sums over the lines that ran: null for a group where none ran.
RUN_SUMS = ("extensions", "lease_lost", "sum_us")


def aggregate(columns: Columns, file: str) -> list[dict[str, Any]]:
    """The partial rows of ``columns`` (lines of ``file``): one per malformed reason, one per day, stack, job type
    and queue of the records."""
    reason = reasons(columns)
    rows = [
        _row(file, {"reason": int(r)}, count=int(n))
        for r, n in zip(*np.unique(reason[reason >= 0], return_counts=True), strict=True)
    ]
    records = np.flatnonzero(reason < 0)
    if len(records):
        rows.extend(_record_rows(columns, records, file))
    return rows


def reasons(columns: Columns) -> np.ndarray:
    """Per line, the index of the first malformed reason that applies, or -1 (a record)."""
    reason = np.full(columns.size, -1, dtype=np.int64)
    for index in sorted(BOUNDS, reverse=True):  # the first reason that applies is written last
        for bound in BOUNDS[index]:
            reason[_violated(bound, columns)] = index
    reason[_per_line(columns, "JobType", lambda job: job is None or job == "")] = NO_JOB_TYPE
    return reason


def _violated(bound: Bound, columns: Columns) -> np.ndarray:
    if bound.field in columns.text_fields:
        null = _per_line(columns, bound.field, lambda value: value is None)
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


def _per_line(columns: Columns, path: str, test: Callable[[Any], bool]) -> np.ndarray:
    """``test`` of each line's ``path`` value, evaluated once per distinct value."""
    return np.array([bool(test(value)) for value in columns.texts(path)], dtype=bool)[columns.labels]


def _record_rows(columns: Columns, lines: np.ndarray, file: str) -> list[dict]:
    """One row per (day, stack, job type, queue) of the well-formed ``lines``."""
    number = {path: values[lines] for path, values in columns.numbers.items()}
    outcome = {name: _per_line(columns, "Outcome", test)[lines] for name, test in _OUTCOME_TESTS.items()}
    ran, success = outcome["ran"], outcome["success"]
    receives = np.nan_to_num(number["ReceiveCount"], nan=1.0)
    day = np.floor(number["_aws.Timestamp"] / DAY_MS).astype(np.int64)
    group, keys = _groups(columns, lines, day)
    size = len(keys)
    ms, queue_ms = number["ProcessingTime"], number["QueueTime"]
    queued = ran & ~np.isnan(queue_ms)
    capped = np.where(success, np.minimum(receives, RECEIVE_COUNT_CAP), 0).astype(np.int64)
    stats: dict[str, Any] = {
        "count": _count(group, ran, size),
        "released": _count(group, ~ran, size),
        "failures": _count(group, outcome["failure"], size),
        "redeliveries": _count(group, (receives > 1) & ran, size),
        "extensions": _sum(group, np.nan_to_num(number["Extensions"]) * ran, size),
        "lease_lost": _sum(group, np.nan_to_num(number["LeaseLost"]) * ran, size),
        "sum_us": _sum(group, np.where(ran, np.rint(ms * 1000), 0), size),
        "min_ms": _extreme(np.minimum, group, ms, ran, size),
        "max_ms": _extreme(np.maximum, group, ms, ran, size),
        "first_ms": _extreme(np.minimum, group, number["_aws.Timestamp"], None, size, whole=True),
        "last_ms": _extreme(np.maximum, group, number["_aws.Timestamp"], None, size, whole=True),
        "queue_min_ms": _extreme(np.minimum, group, queue_ms, queued, size),
        "queue_max_ms": _extreme(np.maximum, group, queue_ms, queued, size),
        "cells": _maps(group[ran], _bucket(ms[ran]) * RECEIVES_PER_CELL + capped[ran], size),
        "queue_cells": _maps(group[queued], _bucket(queue_ms[queued]), size),
    }
    rows = []
    for g, (row_day, stack, job_type, queue) in enumerate(keys):
        values = {name: column[g] for name, column in stats.items()}
        values |= {name: None for name in RUN_SUMS if not values["count"]}  # Spark's sum of no line that ran
        names = {"reason": None, "day": row_day, "stack": stack, "job_type": job_type, "queue": queue}
        rows.append(_row(file, names, **values))
    return rows


_OUTCOME_TESTS: dict[str, Callable[[Any], bool]] = {
    "ran": lambda outcome: outcome not in UNRUN_OUTCOMES,
    "success": lambda outcome: outcome == "success",
    "failure": lambda outcome: outcome in FAILURE_OUTCOMES,
}


def _groups(columns: Columns, lines: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Per line, its group; and each group's (day, stack, job type, queue), an empty stack as none."""
    fields = [columns.texts(path) for path in ("Stack", "JobType", "Queue")]
    names = [(stack or None, job_type, queue) for stack, job_type, queue in zip(*fields, strict=True)]
    named = {name: i for i, name in enumerate(dict.fromkeys(names))}  # "" and None: one stack
    label = np.array([named[name] for name in names], dtype=np.int64)[columns.labels[lines]]
    first_day = int(day.min())
    groups, group = np.unique((day - first_day) * len(named) + label, return_inverse=True)
    by_label = list(named)
    keys = [(first_day + int(g) // len(named), *by_label[int(g) % len(named)]) for g in groups]
    return group.reshape(-1), keys


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
        for names, fold in (((*COUNTS, *NULLABLE_SUMS), sum), (MINIMUMS, min), (MAXIMUMS, max)):
            for name in names:
                present = [v for v in (into[name], row[name]) if v is not None]
                into[name] = fold(present) if present else None
        for name in MAPS:
            for cell, count in row[name].items():
                into[name][cell] = into[name].get(cell, 0) + count
    return list(merged.values())


def _bucket(ms: np.ndarray) -> np.ndarray:
    return np.floor(np.log10(np.maximum(ms, MIN_MS)) * BUCKETS_PER_DECADE).astype(np.int64)


def _count(group: np.ndarray, where: np.ndarray, size: int) -> list[int]:
    return np.bincount(group[where], minlength=size).tolist()


def _sum(group: np.ndarray, values: np.ndarray, size: int) -> list[int]:
    """Exact integer sums (float64 sums of microseconds could round past 2^53)."""
    total = np.zeros(size, dtype=np.int64)
    np.add.at(total, group, values.astype(np.int64))
    return total.tolist()


def _extreme(
    fold: np.ufunc, group: np.ndarray, values: np.ndarray, where: np.ndarray | None, size: int, whole: bool = False
) -> list[Any]:
    """Per group, the ``fold`` (minimum or maximum) of ``values`` where ``where``, as int when ``whole``; None
    for a group without one."""
    if where is not None:
        group, values = group[where], values[where]
    out = np.full(size, np.inf if fold is np.minimum else -np.inf)
    fold.at(out, group, values)
    present = np.bincount(group, minlength=size) > 0
    return [(int(v) if whole else v) if p else None for v, p in zip(out.tolist(), present.tolist(), strict=True)]


def _maps(group: np.ndarray, keys: np.ndarray, size: int) -> list[dict[int, int]]:
    """Per group, ``key -> lines``."""
    maps: list[dict[int, int]] = [{} for _ in range(size)]
    if len(group):
        low = int(keys.min())
        span = int(keys.max()) - low + 1
        pairs, counts = np.unique(group * span + (keys - low), return_counts=True)
        for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
            maps[pair // span][pair % span + low] = count
    return maps
