"""Local-only settings for the consumers of ``jobqueues local up`` (``--env``).

The consumers get their *deployed* environment (the task definition's container variables, the function's
variables), never the shell's: a setting that exists only on a developer's machine (a local database URL, a
feature flag) is passed with ``--env NAME=VALUE`` (every consumer) or ``--env JOB_TYPE:NAME=VALUE`` (the
consumer of one job type, ``JOB_TYPE`` or ``STACK/JOB_TYPE``). A job type's own value wins over an every-consumer
one, and both win over everything else, the deployed variables and what ``local up`` sets itself (the emulator's
endpoint and credentials, ``PYTHONPATH``): ``--env AWS_ENDPOINT_URL=...`` does point a consumer elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from jobqueues.ops.discovery import Discovery
from jobqueues.ops.errors import BadInput

#: A variable name as a shell takes it.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LocalEnv:
    """The ``--env`` values: for every consumer, and per job type as named (``JOB_TYPE`` or ``STACK/JOB_TYPE``)."""

    every: dict[str, str] = field(default_factory=dict)
    by_job_type: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_env(values: Iterable[str]) -> LocalEnv:
    """``NAME=VALUE`` and ``JOB_TYPE:NAME=VALUE`` values (the later of two for one name wins); a ``ValueError``
    saying what a value should look like."""
    parsed = LocalEnv()
    for value in values:
        target, equals, setting = value.partition("=")
        job_type, colon, name = target.rpartition(":")
        if not equals or not NAME.fullmatch(name) or (colon and not job_type):
            raise ValueError(
                f"{value!r} is not NAME=VALUE (every consumer) or JOB_TYPE:NAME=VALUE (one job type's consumer)"
            )
        (parsed.by_job_type.setdefault(job_type, {}) if colon else parsed.every)[name] = setting
    return parsed


def environments(local: LocalEnv, found: Discovery, consumed: Iterable[str]) -> dict[str, dict[str, str]]:
    """Each consumed job type's (``STACK/JOB_TYPE``) local settings; :class:`BadInput` (or ``NotFound``, naming
    the job types) for a job type that is unknown or has no consumer run locally: the setting would do nothing."""
    consumed = set(consumed)
    result = {name: dict(local.every) for name in consumed}
    for named, settings in local.by_job_type.items():
        job = found.find(named)
        if job.name not in consumed:
            raise BadInput(
                f"--env {named}:...: {job.name} has no consumer that runs locally; consumers: "
                f"{', '.join(sorted(consumed)) or 'none'}"
            )
        result[job.name].update(settings)
    return result
