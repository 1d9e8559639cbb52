"""The ``profiles.json`` document jobstats writes, checked once for stack code (:class:`MeasuredProfiles`) and
``jobqueues drift`` alike, without the CDK: each check returns the problem in words, or ``None``.

Its profiles are per deployment, named ``STACK/JOB_TYPE`` (:func:`sqslease.emf.deployment_name`); a profile of
lines that name no stack is named by the job type alone. Version 1 (a profile per job type, every stack's samples
in it) is refused: regenerating it from the same logs is the fix, and the only one that tells stages apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sqslease.emf import deployment_name

SUPPORTED_SCHEMA_VERSION = 2
#: Version 1 held ``job_types``: one profile per job type, whatever stack its lines came from.
PER_JOB_TYPE_SCHEMA_VERSION = 1
PROFILES_FIELD = "deployments"
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
    if version == PER_JOB_TYPE_SCHEMA_VERSION:
        return (
            f"{source} is a schema_version {version} profiles document, whose profiles are per job type: they mix the "
            f"samples of every stack that runs one (a Dev and a Prod Stage); {REGENERATE} (schema_version "
            f"{SUPPORTED_SCHEMA_VERSION}: a profile per stack and job type)"
        )
    if version != SUPPORTED_SCHEMA_VERSION:
        return (
            f"{source} is not a jobstats profiles document of a supported version (schema_version {version!r}, "
            f"expected {SUPPORTED_SCHEMA_VERSION}): {REGENERATE}"
        )
    profiles = document.get(PROFILES_FIELD)
    if not isinstance(profiles, dict):
        found = "missing" if profiles is None else kind(profiles)
        return (
            f"{source} has no {PROFILES_FIELD} object ({found}), so it is not a jobstats profiles document: "
            f"{REGENERATE}"
        )
    return None


def profile_name(profiles: Mapping[str, Any], stack: str, job_type: str) -> str | None:
    """The name of the profile that measures job type ``job_type`` as stack ``stack`` deployed it: its own
    (``STACK/JOB_TYPE``), else one of lines that name no stack (``JOB_TYPE``: it may hold other stacks' samples
    too, which callers say); ``None`` when there is neither."""
    for name in (deployment_name(stack, job_type), job_type):
        if name in profiles:
            return name
    return None


def job_type_of(name: str, entry: Mapping[str, Any]) -> str:
    """The job type a profile measures: its ``job_type`` field, else the part of its name after the stack."""
    job_type = entry.get("job_type")
    return job_type if isinstance(job_type, str) else name.rpartition("/")[2]


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
