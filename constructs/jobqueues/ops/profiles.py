"""jobstats' ``profiles.json`` as ``jobqueues drift`` reads it: each profile by name (``STACK/JOB_TYPE``), checked
as stack code's ``MeasuredProfiles`` checks it, and the profiles of stacks outside those searched."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from jobqueues.ops.errors import BadInput
from jobqueues.profiles_document import PROFILES_FIELD, REGENERATE, count_problem, document_problem, kind, p99_problem


def load_profiles(path: Path) -> dict[str, dict[str, Any]]:
    """Profile name (``STACK/JOB_TYPE``) -> profile entry of a jobstats ``profiles.json``; a :class:`BadInput`
    (exit status 2, apart from drift's 1) naming the file (and the profile and field) and what is wrong with it, as
    stack code's ``MeasuredProfiles`` words it."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{path} not found: run `python -m jobstats profile LOGS --out {path}` first") from None
    except (OSError, ValueError) as error:
        raise BadInput(f"{path} is not valid JSON ({error}): {REGENERATE}") from None
    problem = document_problem(document, str(path))
    if problem is not None:
        raise BadInput(problem)
    profiles: dict[str, Any] = document[PROFILES_FIELD]
    for name, entry in profiles.items():
        if not isinstance(entry, dict):
            raise BadInput(f"{path}: profile {name!r} is {kind(entry)}, not an object: {REGENERATE}")
        problem = p99_problem(entry) or count_problem(entry, "recommended_max_receive_count")
        problem = problem or count_problem(entry, "count")
        if problem is not None:
            raise BadInput(f"{path}, profile {name!r}: {problem}: {REGENERATE}, or correct the field")
    return profiles


def profiles_outside(profiles: Mapping[str, Any], searched: Collection[str] | None) -> list[str]:
    """The profiles (``STACK/JOB_TYPE``) of stacks outside ``searched`` (``--stack``; ``None``: every stack was
    searched), sorted: neither compared nor "not deployed". A profile that names no stack may be any stack's."""
    if searched is None:
        return []
    return sorted(name for name in profiles if "/" in name and name.rsplit("/", 1)[0] not in searched)
