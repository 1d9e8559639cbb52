"""What a lookup of a job type by name says when the name is not found: the line the CLI prints, which names what
exists and what to change (:meth:`jobqueues.ops.discovery.Discovery.find`).

A name is ``JOB_TYPE`` or ``STACK/JOB_TYPE``. For a stack not among those searched, the line names the stacks that
run the job type (a mistyped stack), a name that differs only in case (CloudFormation's names are case-sensitive),
and the searcher's advice for a stack that is elsewhere (``--region`` or ``--profile`` for deployed stacks; none for
an app synthesized, or the emulator). For a job type not in a named stack, it lists that stack's job types (a typo)
and the stacks that run it (the wrong stack), never every stack's. A stack's or a queue's name given as the job
type is named as what it is. ``--stack`` of ``status`` and ``drift`` (:func:`no_deployed_stacks`) is checked as a
name's stack is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobqueues.ops.errors import BadInput


def split_name(name: str, stack: str | None = None) -> tuple[str | None, str]:
    """``(stack, job type)`` of ``JOB_TYPE`` (``stack``, ``--stack``'s, or ``None``) or ``STACK/JOB_TYPE``;
    :class:`BadInput` for a part that names nothing (empty, spaced, a second slash), or a stack given twice, two
    ways."""
    if stack is not None:
        check_stack(stack, " (name a job type JOB_TYPE or STACK/JOB_TYPE)")
    _refuse_spaces(repr(name), *name.split("/"))
    if not name:
        raise BadInput("'': an empty name: name a job type JOB_TYPE or STACK/JOB_TYPE")
    if "/" not in name:
        return stack, name
    named, job_type = name.rsplit("/", 1)
    if not named or not job_type or "/" in named:
        raise BadInput(f"{name!r}: name a job type JOB_TYPE or STACK/JOB_TYPE, one slash, neither part empty")
    if stack is not None and stack != named:
        raise BadInput(f"{name!r} names stack {named} and --stack {stack}: give the stack once")
    return named, job_type


def check_stack(stack: str, how: str = "") -> None:
    """:class:`BadInput` for a ``--stack`` value that names no stack: empty, spaced, or with a slash (``how``: how
    else to name it)."""
    _refuse_spaces(f"--stack {stack!r}", stack)
    if not stack or "/" in stack:
        raise BadInput(f"--stack {stack!r}: give a stack's name{how}")


def no_deployed_stacks(missing: Sequence[str], stacks: Sequence[str], where: str, not_here: str) -> str:
    """The line for ``--stack`` values (``missing``) among none of the deployed ``stacks`` (listed ``where``)."""
    named = f"stack{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    line = f"no deployed {named} in {where} (stacks there: {', '.join(sorted(stacks)) or 'none'})"
    slips = [slip for stack in missing if (slip := _case_slip(stack, stacks, "stack ")) is not None]
    return f"{line}; {'; '.join(slips)}" if slips else f"{line}: {not_here}"


def _refuse_spaces(given: str, *parts: str) -> None:
    """:class:`BadInput` when a part has spaces around it (a name never does: a paste's, a quote's)."""
    if any(part.strip() != part for part in parts):
        raise BadInput(f"{given}: spaces around a name: give it without them")


def no_job_type(
    job_type: str,
    names: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    queues: Mapping[str, str] | None = None,
) -> str:
    """The line for ``job_type`` (no stack named) found in none of ``stacks``; ``queues``: what each queue's name
    is (``the queue of STACK/JOB_TYPE``), for one given as the job type."""
    if not stacks:
        return f"no job type {job_type}: no stacks in {where or 'the stacks searched'}" + (
            f": {not_here}" if not_here else ""
        )
    counted = f"{len(stacks)} stack{'' if len(stacks) == 1 else 's'} searched"
    line = f"no job type {job_type} in {counted}; job types: {', '.join(names) or 'none'}"
    slip = _case_slip(job_type, sorted({name.rsplit("/", 1)[1] for name in names}))
    if slip is not None:
        return f"{line}; {slip}"
    if job_type in stacks:  # a stack's name where a job type's goes
        own = sorted(name for name in names if name.rsplit("/", 1)[0] == job_type)
        kind = "name one of its job types as STACK/JOB_TYPE, e.g. " + own[0] if own else "without job types"
        return f"{line}; {job_type} is a stack{':' if own else ''} {kind}"
    queue = (queues or {}).get(job_type)
    return f"{line}; {job_type} is {queue}" if queue is not None else line


def no_stack(stack: str, job_type: str, names: Sequence[str], stacks: Sequence[str], where: str, not_here: str) -> str:
    """The line for ``stack`` not among ``stacks`` (searched ``where``), ``names`` every ``STACK/JOB_TYPE`` found."""
    line = f"no stack {stack} in {where or 'the stacks searched'} (stacks there: {', '.join(stacks) or 'none'})"
    slip = _case_slip(f"{stack}/{job_type}", names)
    if slip is not None:
        return f"{line}; {slip}"
    slip = _case_slip(stack, stacks, "stack ")
    if slip is not None:  # the stack's case slipped, and the job type is not in it as named
        return f"{line}; {slip}"
    elsewhere = _running(job_type, names)
    if elsewhere:
        line += f"; {job_type} is in: {', '.join(elsewhere)}"
    if not_here:
        line += f"; or {not_here}" if elsewhere else f": {not_here}"
    return line


def no_job_type_in(stack: str, job_type: str, own: Sequence[str], names: Sequence[str]) -> str:
    """The line for ``job_type`` not in ``stack``, whose job types are ``own``."""
    slip = _case_slip(f"{stack}/{job_type}", names)
    line = f"no job type {job_type} in stack {stack}" + (
        f"; its job types: {', '.join(own)}" if own else " (it has none)"
    )
    if slip is not None:
        return f"{line}; {slip}"
    elsewhere = _running(job_type, names)
    return line + (f"; {job_type} is in: {', '.join(elsewhere)}" if elsewhere else "")


def _running(job_type: str, names: Sequence[str]) -> list[str]:
    """The ``STACK/JOB_TYPE`` names of ``names`` whose job type is ``job_type``, sorted."""
    return sorted(name for name in names if name.rsplit("/", 1)[1] == job_type)


def _case_slip(name: str, names: Sequence[str], kind: str = "") -> str | None:
    """``did you mean ...?`` when one name found differs from ``name`` only in case (``kind``: what it names)."""
    same = [found for found in names if found.lower() == name.lower()]
    return f"did you mean {kind}{same[0]}? (names are case-sensitive)" if len(same) == 1 else None
