"""Local-only settings for the consumers of ``jobqueues local up`` (``--env``).

The consumers get their *deployed* environment (the task definition's container variables, the function's
variables), never the shell's: a setting that exists only on a developer's machine (a local database URL, a
feature flag) is passed with ``--env NAME=VALUE`` (every consumer) or ``--env JOB_TYPE:NAME=VALUE`` (the
consumers of one job type: ``JOB_TYPE`` for every stack that deploys it, a ``Dev`` and a ``Prod`` Stage alike, or
``STACK/JOB_TYPE`` for one). A job type's own value wins over an every-consumer one, ``STACK/JOB_TYPE``'s over
``JOB_TYPE``'s, and all win over everything else, the deployed variables and what ``local up`` sets itself (the
emulator's endpoint and credentials, ``PYTHONPATH``): ``--env AWS_ENDPOINT_URL=...`` does point a consumer
elsewhere. ``local up`` checks the names against the synthesized app, before it deploys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from jobqueues.ops.assembly import stack_artifacts
from jobqueues.ops.discovery import Discovery, StackTemplate, discover_templates
from jobqueues.ops.errors import BadInput, NotFound
from jobqueues.ops.unknown_names import split_name

#: A variable name as a shell takes it.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LocalEnv:
    """The ``--env`` values: for every consumer, and per job type as named (``JOB_TYPE`` or ``STACK/JOB_TYPE``)."""

    every: dict[str, str] = field(default_factory=dict)
    by_job_type: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_env(values: Iterable[str]) -> LocalEnv:
    """``NAME=VALUE`` and ``JOB_TYPE:NAME=VALUE`` values (the later of two for one name wins); a :class:`BadInput`
    naming the value and what it should look like."""
    parsed = LocalEnv()
    for value in values:
        target, equals, setting = value.partition("=")
        job_type, colon, name = target.rpartition(":")
        if not equals or not name or (colon and not job_type):
            raise BadInput(
                f"--env {value!r}: not NAME=VALUE (every consumer) or JOB_TYPE:NAME=VALUE (one job type's consumer)"
            )
        if not NAME.fullmatch(name):
            raise BadInput(
                f"--env {value!r}: {name!r} is not a variable name (letters, digits and _, not starting with a digit)"
            )
        if colon and not _a_path(job_type):
            try:
                split_name(job_type)  # a name with an empty part is refused now, before anything starts
            except BadInput as error:
                raise BadInput(f"--env {value!r}: {error}") from None
        (parsed.by_job_type.setdefault(job_type, {}) if colon else parsed.every)[name] = setting
    return parsed


def _a_path(name: str) -> bool:
    """Whether ``name`` may be a construct path (``Dev/Billing/Invoices``): the lookup after the synth names it."""
    return name.count("/") > 1 and all(part and part.strip() == part for part in name.split("/"))


def environments(local: LocalEnv, found: Discovery, consumed: Iterable[str]) -> dict[str, dict[str, str]]:
    """Each consumed job type's (``STACK/JOB_TYPE``) local settings; :class:`NotFound` naming the job types for a
    job type that is unknown, :class:`BadInput` for one without a consumer run locally: the setting would do
    nothing. ``JOB_TYPE`` applies to every stack's, ``STACK/JOB_TYPE`` (applied after) to that stack's."""
    consumed = set(consumed)
    result = {name: dict(local.every) for name in consumed}
    for named, settings in sorted(local.by_job_type.items(), key=lambda item: "/" in item[0]):
        jobs = [j for j in found.job_types if named in (j.name, j.job_type)]
        if not jobs:  # a lookup's line among those run locally (the others take no --env), less the advice of a
            # region: local up has no --region
            locally = replace(found, job_types=[j for j in found.job_types if j.name in consumed], not_here="")
            try:
                jobs = [locally.find(named)]
            except (NotFound, BadInput) as error:  # the same line, the value it came from in front
                raise type(error)(f"--env {named}:...: {error}") from None
        names = [j.name for j in jobs if j.name in consumed]
        if not names:
            have = "has no consumer that runs" if len(jobs) == 1 else "have no consumer that runs"
            raise BadInput(
                f"--env {named}:...: {', '.join(j.name for j in jobs)} {have} locally; "
                f"consumers: {', '.join(sorted(consumed)) or 'none'}"
            )
        for name in names:
            result[name].update(settings)
    return result


def check_synthesized(local: LocalEnv, assembly_dir: Path) -> None:
    """Refuse, before the deploy, ``--env`` values for a job type the synthesized app (the cloud assembly at
    ``assembly_dir``) does not have, or whose consumer it does not declare: :func:`environments`' errors."""
    if not local.by_job_type:
        return
    found = discover_templates(StackTemplate(a.name, a.template()) for a in stack_artifacts(assembly_dir))
    environments(local, found, [job.name for job in found.job_types if job.consumer is not None])
