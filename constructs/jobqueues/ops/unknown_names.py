"""What a lookup of a job type by name says when the name is not found: the line the CLI prints, which names what
exists and what to change (:meth:`jobqueues.ops.discovery.Discovery.find`).

A name is ``JOB_TYPE`` or ``STACK/JOB_TYPE``. For a stack not among those searched, the line names the stacks that
run the job type (a mistyped stack), a name close to the one given (a case slip: CloudFormation's names are
case-sensitive; or a typo), and the searcher's advice for a stack that is elsewhere (``--region`` or ``--profile``
for deployed stacks; none for an app synthesized, or the emulator). For a job type not in a named stack, it lists
that stack's job types and the stacks that run it (the wrong stack), never every stack's. What is not a job type's
name is named as what it is: a stack's name, a queue's name, URL or ARN (what the SQS console shows), and, given to
``--stack`` of ``status`` and ``drift`` (:func:`no_deployed_stacks`), a job type's.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from jobqueues.ops.errors import BadInput

#: A queue's name -> what it is (``the queue`` or ``the dead-letter queue``) and of which ``STACK/JOB_TYPE``.
Queues = Mapping[str, tuple[str, str]]

CASE = "(names are case-sensitive)"
#: How alike (difflib's ratio) a name found must be to the one given to be suggested for a typo.
CLOSE = 0.8


def split_name(name: str, stack: str | None = None) -> tuple[str | None, str]:
    """``(stack, job type)`` of ``JOB_TYPE`` (``stack``, ``--stack``'s, or ``None``) or ``STACK/JOB_TYPE``;
    :class:`BadInput` for a part that names nothing (empty, spaced, a second slash), or a stack given twice, two
    ways."""
    if stack is not None:
        check_stack(stack)
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


def check_stack(stack: str) -> None:
    """:class:`BadInput` for a ``--stack`` value that names no stack: empty, spaced, or with a slash."""
    _refuse_spaces(f"--stack {stack!r}", stack)
    named, slash, job_type = stack.partition("/")
    if slash and named and job_type and "/" not in job_type:
        raise BadInput(f"--stack {stack!r}: give a stack's name, not STACK/JOB_TYPE: --stack {named}")
    if not stack or slash:
        raise BadInput(f"--stack {stack!r}: give a stack's name")


def _refuse_spaces(given: str, *parts: str) -> None:
    """:class:`BadInput` when a part has spaces around it (a name never does: a paste's, a quote's)."""
    if any(part.strip() != part for part in parts):
        raise BadInput(f"{given}: spaces around a name: give it without them")


def queue_named(given: str) -> str | None:
    """The queue's name in a queue's URL or ARN, None for anything else."""
    if "://" in given:
        return given.rstrip("/").rsplit("/", 1)[1]
    return given.rsplit(":", 1)[1] if given.startswith("arn:") else None


def no_queue(given: str, queue: str, names: Sequence[str], queues: Queues) -> str:
    """The line for a queue's URL or ARN (``given``, of queue ``queue``) given as a job type."""
    hint = _queue_hint(queue, queues)
    if hint is not None:
        return f"{given} names a queue, not a job type: it is {_what(queues[hint])}"
    return f"{given} names a queue, not a job type, and no job type's queue is {queue}; job types: {_listed(names)}"


def no_deployed_stacks(
    missing: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    names: Sequence[str] = (),
    queues: Queues | None = None,
) -> str:
    """The line for ``--stack`` values (``missing``) among none of the deployed ``stacks`` (listed ``where``);
    ``names`` and ``queues``, those of every stack's job types, for a job type's or a queue's name given."""
    named = f"stack{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    line = f"no deployed {named} in {where} (stacks there: {_listed(sorted(stacks))})"
    hints = [hint for stack in missing if (hint := _not_a_stack(stack, stacks, names, queues or {})) is not None]
    return f"{line}; {'; '.join(hints)}" if hints else f"{line}: {not_here}"


def _not_a_stack(given: str, stacks: Sequence[str], names: Sequence[str], queues: Queues) -> str | None:
    """What ``given`` to ``--stack`` is instead: a stack's name mistyped, a job type's, a queue's; or None."""
    near = _near(given, stacks, "stack ")
    if near is not None:
        return near
    theirs = sorted(name.rsplit("/", 1)[0] for name in names if name.rsplit("/", 1)[1] == given)
    if theirs:
        return f"{given} is a job type of stack {', '.join(theirs)}: --stack {theirs[0]}"
    hint = _queue_hint(given, queues)
    return f"{given} is {_what(queues[hint])}: --stack {queues[hint][1].split('/')[0]}" if hint else None


def no_job_type(
    job_type: str,
    names: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    queues: Queues | None = None,
) -> str:
    """The line for ``job_type`` (no stack named) found in none of ``stacks``; ``queues``: what each queue's name
    is, for one given as the job type."""
    if not stacks:
        return f"no job type {job_type}: no stacks in {where or 'the stacks searched'}" + (
            f": {not_here}" if not_here else ""
        )
    counted = f"{len(stacks)} stack{'' if len(stacks) == 1 else 's'} searched"
    line = f"no job type {job_type} in {counted}; job types: {_listed(names)}"
    hint = _near(job_type, sorted({name.rsplit("/", 1)[1] for name in names}), exact_case_only=True)
    if hint is None and job_type in stacks:  # a stack's name where a job type's goes
        own = sorted(name for name in names if name.rsplit("/", 1)[0] == job_type)
        kind = "name one of its job types as STACK/JOB_TYPE, e.g. " + own[0] if own else "without job types"
        hint = f"{job_type} is a stack{':' if own else ''} {kind}"
    hint = hint or _is_queue(job_type, queues) or _near(job_type, sorted({n.rsplit("/", 1)[1] for n in names}))
    return f"{line}; {hint}" if hint is not None else line


def no_stack(stack: str, job_type: str, names: Sequence[str], stacks: Sequence[str], where: str, not_here: str) -> str:
    """The line for ``stack`` not among ``stacks`` (searched ``where``), ``names`` every ``STACK/JOB_TYPE`` found."""
    line = f"no stack {stack} in {where or 'the stacks searched'} (stacks there: {_listed(stacks)})"
    full = f"{stack}/{job_type}"
    near = (
        _case(full, names) or _case(stack, stacks, "stack ") or _close(full, names) or _close(stack, stacks, "stack ")
    )
    if near is not None:  # the name's or the stack's case slipped, or a typo (the stack may still be elsewhere)
        return f"{line}; {near}" + (f" or {not_here}" if not_here and not near.endswith(CASE) else "")
    elsewhere = _running(job_type, names)
    if elsewhere:
        line += f"; {job_type} is in: {', '.join(elsewhere)}"
    if not_here:
        line += f"; or {not_here}" if elsewhere else f": {not_here}"
    return line


def no_job_type_in(
    stack: str, job_type: str, own: Sequence[str], names: Sequence[str], queues: Queues | None = None
) -> str:
    """The line for ``job_type`` not in ``stack``, whose job types are ``own``."""
    line = f"no job type {job_type} in stack {stack}" + (
        f"; its job types: {', '.join(own)}" if own else " (it has none)"
    )
    hint = _near(f"{stack}/{job_type}", names) or _is_queue(job_type, queues)
    if hint is not None:
        return f"{line}; {hint}"
    elsewhere = _running(job_type, names)
    return line + (f"; {job_type} is in: {', '.join(elsewhere)}" if elsewhere else "")


def _running(job_type: str, names: Sequence[str]) -> list[str]:
    """The ``STACK/JOB_TYPE`` names of ``names`` whose job type is ``job_type``, sorted."""
    return sorted(name for name in names if name.rsplit("/", 1)[1] == job_type)


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) or "none"


def _near(name: str, names: Sequence[str], kind: str = "", exact_case_only: bool = False) -> str | None:
    """``did you mean ...?`` (``kind``: what it names) when one name found differs from ``name`` only in case, or,
    but with ``exact_case_only``, is the closest to it and at least :data:`CLOSE` alike (a typo)."""
    return _case(name, names, kind) or (None if exact_case_only else _close(name, names, kind))


def _case(name: str, names: Sequence[str], kind: str = "") -> str | None:
    same = [found for found in names if found.lower() == name.lower()]
    return f"did you mean {kind}{same[0]}? {CASE}" if len(same) == 1 else None


def _close(name: str, names: Sequence[str], kind: str = "") -> str | None:
    close = difflib.get_close_matches(name, names, n=1, cutoff=CLOSE)
    return f"did you mean {kind}{close[0]}?" if close else None


def _is_queue(name: str, queues: Queues | None) -> str | None:
    """``NAME is the queue of STACK/JOB_TYPE`` when ``name`` is a queue's name, as typed in a hurry; else None."""
    hint = _queue_hint(name, queues or {})
    return f"{name} is {_what((queues or {})[hint])}" if hint is not None else None


def _what(queue: tuple[str, str]) -> str:
    return f"{queue[0]} of {queue[1]}"


def _queue_hint(name: str, queues: Queues) -> str | None:
    """The queue of ``queues`` that ``name`` names: as spelled, else the one alike but for case and ``.fifo``."""
    if name in queues:
        return name
    folded = name.lower().removesuffix(".fifo")
    alike = [queue for queue in queues if queue.lower().removesuffix(".fifo") == folded]
    return alike[0] if len(alike) == 1 else None
