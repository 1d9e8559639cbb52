"""The ``profiles.json`` document jobstats writes, checked once for stack code (:class:`MeasuredProfiles`) and
``jobqueues drift`` alike, without the CDK: each check returns the problem in words, or ``None``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SUPPORTED_SCHEMA_VERSION = 1
REGENERATE = "regenerate it with `python -m jobstats profile`"
P99_FIELD = "recommended_processing_p99_s"


def kind(value: object) -> str:
    """``a str``, ``an int``: the type of a JSON value, for messages."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def document_problem(document: object, source: str) -> str | None:
    """What makes ``document`` (read from ``source``) not a profiles document of the supported version: the whole
    message, or ``None``."""
    if not isinstance(document, dict):
        return f"{source} is {kind(document)}, not a jobstats profiles document (a JSON object): {REGENERATE}"
    version = document.get("schema_version")
    if version != SUPPORTED_SCHEMA_VERSION:
        return (
            f"{source} is not a jobstats profiles document of a supported version (schema_version {version!r}, "
            f"expected {SUPPORTED_SCHEMA_VERSION}): {REGENERATE}"
        )
    job_types = document.get("job_types")
    if not isinstance(job_types, dict):
        found = "missing" if job_types is None else kind(job_types)
        return f"{source} has no job_types object ({found}), so it is not a jobstats profiles document: {REGENERATE}"
    return None


def p99_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with a job type entry's recommended p99 (a positive number of seconds, or null when jobstats
    refused to recommend), or ``None``."""
    if P99_FIELD not in entry:
        return f"has no {P99_FIELD} (a number of seconds, or null when refused)"
    p99_s = entry[P99_FIELD]
    if p99_s is None:
        return None
    if isinstance(p99_s, bool) or not isinstance(p99_s, int | float):
        return f"{P99_FIELD}={p99_s!r} is {kind(p99_s)}, not a number of seconds, e.g. 1.5"
    if not 0 < p99_s < math.inf:
        return f"{P99_FIELD}={p99_s!r} is not positive: a p99 is a positive number of seconds"
    return None


def count_problem(entry: Mapping[str, Any], field: str) -> str | None:
    """What is wrong with a whole-number field (``count``, ``recommended_max_receive_count``), or ``None``;
    absent or null is no problem."""
    value = entry.get(field)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        return f"{field}={value!r} is {kind(value)}, not a whole number"
    return None


def recommended_p99_s(entry: Mapping[str, Any]) -> float | None:
    """The recommended p99 in seconds of an entry :func:`p99_problem` passed; ``None`` when refused."""
    p99_s = entry.get(P99_FIELD)
    return None if p99_s is None else float(p99_s)
