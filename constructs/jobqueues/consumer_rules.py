"""Rules for a job type's consumer, in plain numbers (no aws_cdk), beside the queue rules of
:mod:`jobqueues.declaration`. Each error names the prop, the value and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from jobqueues.declaration_warnings import HANDLERS_EXCEED_IN_FLIGHT_QUOTA, DeclarationWarning
from sqslease.rules import (
    LAMBDA_DEADLINE_MARGIN_FRACTION,
    MIN_LAMBDA_DEADLINE_MARGIN_S,
    SQS_IN_FLIGHT_QUOTA,
    format_duration,
    lambda_deadline_margin,
    lambda_timeout_for_p99,
    lambda_visibility_timeout,
    shortest_lambda_timeout_s,
)

#: Fargate's maximum ``stopTimeout``; the CDK does not check it.
FARGATE_MAX_STOP_TIMEOUT_S = 120
#: ``stopTimeout`` = the worker's shutdown grace + this margin (the worker's final releases and exit).
STOP_TIMEOUT_MARGIN_S = 5
LAMBDA_MAX_BATCH_SIZE = 10_000
FIFO_MAX_BATCH_SIZE = 10
#: Without a batching window, Lambda's SQS event source takes at most 10 records per batch.
BATCH_SIZE_WITHOUT_WINDOW = 10
MAX_CONCURRENCY_RANGE = (2, 1000)


@dataclass
class ConsumerCheck:
    """Errors and warnings of a consumer declaration."""

    errors: list[str] = field(default_factory=list)
    warnings: list[DeclarationWarning] = field(default_factory=list)


def check_lambda_consumer(
    *, batch_size: int | None, max_batching_window_s: float | None, max_concurrency: int | None, fifo: bool
) -> ConsumerCheck:
    """A Lambda consumer's event source: batch size, batching window and maximum concurrency."""
    check = ConsumerCheck()
    if batch_size is not None:
        limit = FIFO_MAX_BATCH_SIZE if fifo else LAMBDA_MAX_BATCH_SIZE
        if not 1 <= batch_size <= limit:
            check.errors.append(
                f"batch_size must be between 1 and {limit:,}{' for a FIFO queue' if fifo else ''} (got {batch_size})"
            )
        elif batch_size > BATCH_SIZE_WITHOUT_WINDOW and not max_batching_window_s:
            check.errors.append(
                f"batch_size {batch_size} needs a batching window: Lambda takes more than "
                f"{BATCH_SIZE_WITHOUT_WINDOW} records per batch only with one; set max_batching_window, e.g. "
                "Duration.seconds(1), or batch_size=10"
            )
    if max_concurrency is not None and not MAX_CONCURRENCY_RANGE[0] <= max_concurrency <= MAX_CONCURRENCY_RANGE[1]:
        check.errors.append(
            f"max_concurrency must be between 2 and 1000 (got {max_concurrency}): it caps the concurrent "
            "invocations the event source makes; leave it out for no cap"
        )
    return check


def check_lambda_timing(
    timeout_s: float,
    *,
    processing_p99_s: float | None,
    timeout_name: str = "lambda_timeout",
    p99_name: str = "processing_p99",
) -> list[str]:
    """What a function of ``timeout_s`` seconds cannot serve, one rule for a declared queue and a function bound
    to it: a timeout too short for the adapter's deadline margin, and a declared p99 not below the timeout.

    :param timeout_name: how the message names the timeout (``timeout`` on a ``LambdaJob``).
    :param p99_name: how the message names the p99.
    """
    problems = []
    shortest = shortest_lambda_timeout_s()
    if timeout_s < shortest:
        problems.append(
            f"{timeout_name} {format_duration(timeout_s)} is too short for sqslease: it stops starting records "
            f"when {LAMBDA_DEADLINE_MARGIN_FRACTION:.0%} of the invocation is left "
            f"({format_duration(lambda_deadline_margin(timeout_s))} here) and needs at least "
            f"{format_duration(MIN_LAMBDA_DEADLINE_MARGIN_S)} to release the unstarted records and answer; raise "
            f"{timeout_name} to at least {format_duration(shortest)}"
        )
    if processing_p99_s is not None and processing_p99_s >= timeout_s:
        needed = lambda_timeout_for_p99(processing_p99_s)
        fix = (
            f"raise {timeout_name} to at least {format_duration(needed)} (the p99 and the deadline margin)"
            if needed is not None
            else "run the job on an EcsJob (a Lambda function runs at most 15 min)"
        )
        problems.append(
            f"{p99_name} {format_duration(processing_p99_s)} is not below {timeout_name} "
            f"{format_duration(timeout_s)}: a message that takes its p99 cannot finish in one invocation; {fix}, "
            f"or lower {p99_name} to the measured value"
        )
    return problems


def longest_timeout_fitting(
    visibility_timeout_s: float,
    below_s: float,
    *,
    max_batching_window_s: float = 0,
    lease_extension: bool = False,
    processing_p99_s: float | None = None,
) -> int | None:
    """The longest whole-second function timeout shorter than ``below_s`` that a queue of ``visibility_timeout_s``
    serves (:func:`sqslease.rules.lambda_visibility_timeout`) and that still fits the p99 and the deadline margin
    (:func:`check_lambda_timing`); ``None`` when there is none."""
    shortest = shortest_lambda_timeout_s()
    if processing_p99_s is not None:
        for_p99 = lambda_timeout_for_p99(processing_p99_s)
        if for_p99 is None:
            return None
        shortest = max(shortest, for_p99)
    return next(
        (
            t
            for t in range(math.ceil(below_s) - 1, shortest - 1, -1)
            if lambda_visibility_timeout(t, max_batching_window_s, lease_extension=lease_extension).seconds
            <= visibility_timeout_s
        ),
        None,
    )


def stop_timeout_s(shutdown_grace_s: float) -> int:
    """The container's ``stopTimeout``: the worker's shutdown grace plus a margin, whole seconds."""
    return int(-(-shutdown_grace_s // 1)) + STOP_TIMEOUT_MARGIN_S


def check_ecs_consumer(
    *,
    concurrency: int | None,
    min_tasks: int | None,
    max_tasks: int | None,
    shutdown_grace_s: float | None,
    in_flight_quota: int = SQS_IN_FLIGHT_QUOTA,
) -> ConsumerCheck:
    """An ECS consumer: handlers per task, task count bounds and the stop timeout."""
    check = ConsumerCheck()
    if concurrency is not None and not 1 <= concurrency <= 1000:
        check.errors.append(f"concurrency must be between 1 and 1000 handlers per task (got {concurrency})")
    if max_tasks is not None and max_tasks < 1:
        check.errors.append(f"max_tasks must be at least 1 (got {max_tasks})")
    if min_tasks is not None and min_tasks < 0:
        check.errors.append(f"min_tasks must not be negative (got {min_tasks}); 0 lets an idle job cost nothing")
    if min_tasks is not None and max_tasks is not None and max_tasks >= 1 and min_tasks > max_tasks:
        check.errors.append(f"min_tasks {min_tasks} is above max_tasks {max_tasks}: lower min_tasks or raise max_tasks")
    if shutdown_grace_s is not None:
        if shutdown_grace_s < 0:
            check.errors.append(f"shutdown_grace must not be negative (got {format_duration(shutdown_grace_s)})")
        elif stop_timeout_s(shutdown_grace_s) > FARGATE_MAX_STOP_TIMEOUT_S:
            longest = FARGATE_MAX_STOP_TIMEOUT_S - STOP_TIMEOUT_MARGIN_S
            check.errors.append(
                f"shutdown_grace {format_duration(shutdown_grace_s)} makes a stopTimeout of "
                f"{stop_timeout_s(shutdown_grace_s)} s (grace + {STOP_TIMEOUT_MARGIN_S} s); Fargate allows at most "
                f"{FARGATE_MAX_STOP_TIMEOUT_S} s: lower shutdown_grace to at most {longest} s (work still running "
                "then is released to another task)"
            )
    if concurrency and max_tasks and concurrency * max_tasks > in_flight_quota:
        check.warnings.append(
            DeclarationWarning(
                HANDLERS_EXCEED_IN_FLIGHT_QUOTA,
                f"max_tasks {max_tasks} x concurrency {concurrency} = {max_tasks * concurrency:,} handlers can hold "
                f"more messages than the {in_flight_quota:,} in-flight quota: receivers stop getting messages at the "
                "quota without an error; lower max_tasks or concurrency, or shard the job type",
            )
        )
    return check


# Every prop that names an object by import path (``handler``, ``hooks``, ``idempotency_key``) follows one rule, the
# one ``sqslease.imports.import_object`` imports by: ``package.module:name``, or the dotted ``package.module.name``
# (its last part the name). Identifiers only: no comma (the hooks setting joins its paths with commas), no space, no
# slash (a file path, as Lambda's own handler setting takes, is not importable), no empty part.
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
IMPORT_PATH = re.compile(rf"{_IDENTIFIER}(\.{_IDENTIFIER})*:{_IDENTIFIER}|{_IDENTIFIER}(\.{_IDENTIFIER})+")


def import_path_problem(prop: str, path: str, what: str, form: str, example: str) -> str | None:
    """The error of ``prop``, an import path (:data:`IMPORT_PATH`), naming ``what`` it should name, as ``form`` (e.g.
    ``package.module:function``), with an ``example`` of the prop; ``None`` for a path sqslease can import."""
    if IMPORT_PATH.fullmatch(path):
        return None
    return (
        f"{prop}={path!r} is not an import path: name {what} as {form!r}, e.g. {example} (the module must be in the "
        "consumer's code or image)"
    )


def check_handler(path: str, form: str, example: str) -> list[str]:
    """``handler``: the per-message function's import path (``form``: ``package.module:function`` for the worker,
    ``module.function`` as Lambda users write it; either form is imported)."""
    problem = import_path_problem("handler", path, "the per-message function handler(body, message)", form, example)
    return [] if problem is None else [problem]


def check_hooks(paths: Sequence[str]) -> list[str]:
    """``hooks``: import paths sqslease can import, ``package.module:name`` (a ``Hooks`` object or class)."""
    problems = (
        import_path_problem(
            f"hooks[{index}]", path, "a Hooks object or class", "package.module:name", "hooks=['myapp.hooks:Timing']"
        )
        for index, path in enumerate(paths)
    )
    return [problem for problem in problems if problem is not None]


def check_idempotency_key(path: str | None, idempotency: bool) -> list[str]:
    """``idempotency_key``: an import path, ``package.module:function``, and only with ``idempotency`` on (else the
    key would be ignored)."""
    if path is None:
        return []
    problem = import_path_problem(
        "idempotency_key",
        path,
        "the key function key(body, message) -> str",
        "package.module:function",
        "idempotency_key='orders.keys:order_id'",
    )
    if problem is not None:
        return [problem]
    if not idempotency:
        return [
            f"idempotency_key={path!r} needs idempotency on, which is off: pass idempotency=True (or a table) with "
            "it, or drop idempotency_key"
        ]
    return []


@dataclass(frozen=True)
class OutsideMember:
    """A security group or subnet given to a job that is in another VPC than the job's.

    :param prop: where it was given, e.g. ``security_groups[0]``.
    :param path: its construct path.
    :param vpc: its VPC, by construct path or id.
    """

    prop: str
    path: str
    vpc: str


def check_vpc_members(vpc: str, outside: Sequence[OutsideMember]) -> list[str]:
    """Security groups and subnets must be of the VPC the consumer runs in (AWS refuses the others at deploy)."""
    errors = []
    for member in outside:
        group = member.prop.startswith("security_groups")
        fix = (
            "create the group in it, e.g. ec2.SecurityGroup(self, 'Sg', vpc=vpc), or pass vpc= the group's VPC"
            if group
            else "select subnets of it, e.g. ec2.SubnetSelection(subnets=vpc.private_subnets), or pass vpc= theirs"
        )
        errors.append(
            f"{member.prop} ({member.path}) is in VPC {member.vpc}, not in vpc={vpc}: the consumer runs in one VPC, "
            f"and AWS refuses a {'security group' if group else 'subnet'} of another; {fix}"
        )
    return errors
