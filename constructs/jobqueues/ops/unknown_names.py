"""What a lookup of a job type by name says when the name is not found: the line the CLI prints, which names what
exists and what to change (:meth:`jobqueues.ops.discovery.Discovery.find`).

A name is ``JOB_TYPE`` or ``STACK/JOB_TYPE``. For a stack not among those searched, the line names the stacks that
run the job type (a mistyped stack), a name close to the one given, what the name is instead
(:mod:`jobqueues.ops.name_hints`), and, when nothing here fits, the searcher's advice for a stack that is elsewhere
(``--region`` or ``--profile`` for deployed stacks; none for an app synthesized, or the emulator). For a job type
not in a named stack, it lists that stack's job types and the stacks that run it, never every stack's. ``--stack``
of ``status`` and ``drift`` is :func:`no_deployed_stacks`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobqueues.ops.errors import BadInput
from jobqueues.ops.name_hints import (
    Resources,
    case,
    close,
    close_name,
    inside,
    is_arn,
    is_resource,
    job_types_named,
    resource_key,
    resource_named,
    running,
    stack_as_job_type,
    stack_given,
    stack_named,
    what,
    within,
)

#: What no name has, and a list or a pattern (`cdk deploy '**'`) does.
LIST_OR_PATTERN = ",*?"


def split_name(name: str, stack: str | None = None) -> tuple[str | None, str]:
    """``(stack, job type)`` of ``JOB_TYPE`` (``stack``, ``--stack``'s, or ``None``) or ``STACK/JOB_TYPE``;
    :class:`BadInput` for a part that names nothing (empty, spaced, a second slash), or a stack given twice, two
    ways."""
    if stack is not None:
        check_stack(stack)
    _refuse_spaces(repr(name), *name.split("/"))
    if not name:
        raise BadInput("'': an empty name: name a job type JOB_TYPE or STACK/JOB_TYPE")
    if any(mark in name for mark in LIST_OR_PATTERN):
        raise BadInput(f"{name!r}: one job type's name, not a list or a pattern")
    if "/" not in name:
        return stack, name
    named, job_type = name.rsplit("/", 1)
    if not named or not job_type or "/" in named:
        raise BadInput(f"{name!r}: name a job type JOB_TYPE or STACK/JOB_TYPE, one slash, neither part empty")
    if stack is not None and stack != named:
        raise BadInput(f"{name!r} names stack {named} and --stack {stack}: give the stack once")
    return named, job_type


def check_stack(stack: str) -> None:
    """:class:`BadInput` for a ``--stack`` value that names no stack: empty, spaced, a list or a pattern. One with
    a slash is left to the lookup, which says what it is (a construct path, ``STACK/JOB_TYPE``)."""
    _refuse_spaces(f"--stack {stack!r}", stack)
    if not stack.strip("/"):
        raise BadInput(f"--stack {stack!r}: give a stack's name")
    if any(mark in stack for mark in LIST_OR_PATTERN):  # `cdk deploy '**'`, or several at once
        raise BadInput(
            f"--stack {stack!r}: one stack's name, not a list or a pattern (status and drift take --stack again)"
        )


def _refuse_spaces(given: str, *parts: str) -> None:
    """:class:`BadInput` when a part has spaces around it (a name never does: a paste's, a quote's)."""
    if any(part.strip() != part for part in parts):
        raise BadInput(f"{given}: spaces around a name: give it without them")


def not_a_name(
    given: str, names: Sequence[str], stacks: Sequence[str], where: str, resources: Resources, paths: Mapping[str, str]
) -> str | None:
    """The line for what is not a job type's name but says which one is meant: a queue's URL or ARN, a construct
    path (a job type's, one under it, one above it in a stack), a stack's ARN; None for a name."""
    named = resource_named(given)
    if named is not None:
        return no_resource(given, *named, names, resources)
    deep = given.count("/") > 1  # STACK/JOB_TYPE has one slash
    pathed = (None if given in names else paths.get(given)) or (inside(given, paths) if deep else None)
    if pathed:
        return f"{given!r} is a construct path: name the job type {pathed}"
    holding = within(given, paths) if deep else []
    if holding:
        return _in_stack_path(repr(given), holding, names)
    arn = stack_named(given)
    if arn is None:
        # another ARN (an ECS cluster's, say): not read as STACK/JOB_TYPE at its slash
        return f"{given} is an ARN, not a job type's name; job types: {_listed(names)}" if is_arn(given) else None
    return f"{given} is a stack's ARN, not a job type; " + (
        stack_as_job_type(arn, stacks, names) or f"no stack {arn} in {where or 'those searched'}"
    )


def no_resource(given: str, noun: str, name: str, names: Sequence[str], resources: Resources) -> str:
    """The line for a URL or ARN (``given``, of the ``noun`` (``queue``, ``Lambda function``, ``ECS service``)
    ``name``) given as a job type."""
    key = resource_key(name, resources)
    if key is not None:
        return f"{given} names {_a(noun)}, not a job type: it is {what(resources[key])}"
    return f"{given} names {_a(noun)}, not a job type, and no job type's {noun} is {name}; job types: {_listed(names)}"


def no_deployed_stacks(
    missing: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    names: Sequence[str] = (),
    resources: Resources | None = None,
    paths: Mapping[str, str] | None = None,
) -> str:
    """The line for ``--stack`` values (``missing``) among none of the deployed ``stacks`` (listed ``where``);
    ``names``, ``resources`` and ``paths``, those of every stack's job types, for what else ``missing`` may be."""
    named = f"stack{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    line = f"no deployed {named} in {where} (stacks there: {_listed(sorted(stacks))})"
    hints, typo = [], False
    for given in missing:
        hint = case(given, stacks, "stack ") or stack_given(given, stacks, names, resources or {}, paths or {})
        if hint is None:
            hint = close(given, stacks, "stack ")
            typo = typo or hint is not None  # the stack may still be elsewhere: the advice follows
        if hint is not None:  # with several, each suggestion says which name it is for
            hints.append(f"{given}: {hint}" if len(missing) > 1 and hint.startswith("did you") else hint)
    if not hints:
        return f"{line}: {not_here}"
    return f"{line}; {'; '.join(hints)}" + (f" or {not_here}" if typo else "")


def no_job_type(
    job_type: str,
    names: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    resources: Resources | None = None,
    paths: Mapping[str, str] | None = None,
) -> str:
    """The line for ``job_type`` (no stack named) found in none of ``stacks``; ``resources`` and ``paths``: what each
    queue's name and construct path is, for one given as the job type."""
    if not stacks:
        return f"no job type {job_type}: no stacks in {where or 'the stacks searched'}" + (
            f": {not_here}" if not_here else ""
        )
    counted = f"{len(stacks)} stack{'' if len(stacks) == 1 else 's'} searched"
    line = f"no job type {job_type} in {counted}; job types: {_listed(names)}"
    spell = job_types_named(names)
    bare = sorted(spell)
    hint = case(job_type, bare, spell=spell) or stack_as_job_type(job_type, stacks, names)
    key = None if hint is not None else resource_key(job_type, resources or {})
    if key is not None:  # a queue's or a consumer's name: said as its URL or ARN is, not after every job type
        return no_resource(job_type, (resources or {})[key][0].removeprefix("the "), key, names, resources or {})
    holding = within(job_type, paths or {}) or within(job_type.replace("-", "/"), paths or {})
    if hint is None and holding:  # a Stage's name, a stack's id or path, or its default name (Qa-Orders)
        example = next(name for name in names if name.startswith(f"{holding[0]}/"))
        where = f"stack {holding[0]}" if len(holding) == 1 else f"stacks {', '.join(holding)}"
        hint = f"{job_type} is in the construct path of {where}: name a job type as STACK/JOB_TYPE, e.g. {example}"
    hint = hint or close(job_type, bare, spell=spell)
    return f"{line}; {hint}" if hint is not None else line


def no_stack(
    stack: str,
    job_type: str,
    names: Sequence[str],
    stacks: Sequence[str],
    where: str,
    not_here: str,
    resources: Resources | None = None,
    paths: Mapping[str, str] | None = None,
) -> str:
    """The line for ``stack`` not among ``stacks`` (searched ``where``), ``names`` every ``STACK/JOB_TYPE`` found."""
    line = f"no stack {stack} in {where or 'the stacks searched'} (stacks there: {_listed(stacks)})"
    full = f"{stack}/{job_type}"
    slip = case(full, names)
    if slip is not None:
        return f"{line}; {slip}"
    holding = within(full, paths or {})
    if holding:  # a stack's construct path (Dev/Billing) read as STACK/JOB_TYPE
        return f"{line}; {_in_stack_path(full, holding, names)}"
    elsewhere = running(job_type, names)
    hint = case(stack, stacks, "stack ") or stack_given(stack, stacks, names, resources or {}, paths or {})
    if hint is not None:  # and, when the stacks it names lack the job type, those that have it
        theirs = [name for name in elsewhere if name.rsplit("/", 1)[0] in hint]
        return f"{line}; {hint}" + (f"; {job_type} is in: {', '.join(elsewhere)}" if elsewhere and not theirs else "")
    having = [name.rsplit("/", 1)[0] for name in elsewhere]  # a stack without the job type is no answer
    near = close_name(full, names) or close(stack, having, "stack ")
    if near is not None:  # a typo (the stack may still be elsewhere)
        return f"{line}; {near}" + (f" or {not_here}" if not_here else "")
    if elsewhere:
        line += f"; {job_type} is in: {', '.join(elsewhere)}"
    if not_here:
        line += f"; or {not_here}" if elsewhere else f": {not_here}"
    return line


def no_job_type_in(
    stack: str, job_type: str, own: Sequence[str], names: Sequence[str], resources: Resources | None = None
) -> str:
    """The line for ``job_type`` not in ``stack``, whose job types are ``own``."""
    line = f"no job type {job_type} in stack {stack}" + (
        f"; its job types: {', '.join(own)}" if own else " (it has none)"
    )
    full = f"{stack}/{job_type}"
    # A typo among this stack's own job types only: the stack exists as given, and one alike in another stack (a
    # Stage's) is another deployment, not a fix (the line names the stacks that have the job type).
    near = close(job_type, own, spell={name: f"{stack}/{name}" for name in own})
    hint = case(full, names) or is_resource(job_type, resources) or near
    if hint is not None:
        return f"{line}; {hint}"
    elsewhere = running(job_type, names)
    return line + (f"; {job_type} is in: {', '.join(elsewhere)}" if elsewhere else "")


def _in_stack_path(given: str, stacks: Sequence[str], names: Sequence[str]) -> str:
    """``given``, a path in the construct trees of ``stacks`` (of two Stages, both: neither is picked): the job
    type to name instead when its last part is one of theirs, else how to name one."""
    job_type = given.strip("'").rsplit("/", 1)[-1]
    theirs = [name for name in running(job_type, names) if name.rsplit("/", 1)[0] in stacks]
    held = f"stack {stacks[0]}" if len(stacks) == 1 else f"stacks {', '.join(stacks)}"
    if theirs:
        return f"{given} is in the construct path of {held}: name the job type {' or '.join(theirs)}"
    return f"{given} is in the construct path of {held}: name a job type as " + (
        f"{stacks[0]}/JOB_TYPE" if len(stacks) == 1 else "STACK/JOB_TYPE, STACK one of them"
    )


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'AEIOU' else 'a'} {noun}"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) or "none"
