"""What a name given to the CLI is, when it is not the job type or the stack asked for: the hints of the lines in
:mod:`jobqueues.ops.unknown_names`.

A name found that differs only in case (CloudFormation's names are case-sensitive) or by a typo; a stack's
construct path (``Dev/Billing``, as ``cdk deploy`` takes it) for its name (``Dev-Billing``), and a job type's
(``Dev/Billing/Invoices``); a Stage's name or a stack's id in its Stages for the stacks it names;
``STACK/JOB_TYPE`` or a job type where a stack goes; a stack's name or ARN where a job type goes; a queue's name,
URL or ARN (what the SQS console shows), a consumer's function or service name. ``names`` are the
``STACK/JOB_TYPE`` names of the job types found.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from jobqueues.ops.consumers import EcsConsumer, LambdaConsumer


class Found(Protocol):
    """What the hints read of a job type found (:class:`jobqueues.ops.discovery.JobType`)."""

    @property
    def name(self) -> str: ...  # STACK/JOB_TYPE
    @property
    def job_type(self) -> str: ...
    @property
    def path(self) -> str: ...  # its job queue's construct path
    @property
    def queue_url(self) -> str | None: ...
    @property
    def dead_letter_queue_url(self) -> str | None: ...
    @property
    def consumer(self) -> LambdaConsumer | EcsConsumer | None: ...


#: A queue's or a consumer's name -> what it is (``the queue``, ``the dead-letter queue``, ``the Lambda function``,
#: ``the ECS service``) and of which ``STACK/JOB_TYPE`` (:func:`resource_names`).
Resources = Mapping[str, tuple[str, str]]
CASE = "(names are case-sensitive)"
#: How alike (difflib's ratio) a name found must be to the one given to be suggested for a typo.
CLOSE = 0.8


def case(name: str, names: Sequence[str], kind: str = "", spell: Mapping[str, str] | None = None) -> str | None:
    """``did you mean ...?`` (``kind``: what it names) when one of ``names`` differs from ``name`` only in case;
    ``spell``: how to say a name found, when not as it is (:func:`job_types_named`)."""
    same = [found for found in names if found.lower() == name.lower()]
    return f"did you mean {kind}{(spell or {}).get(same[0], same[0])}? {CASE}" if len(same) == 1 else None


def close(name: str, names: Sequence[str], kind: str = "", spell: Mapping[str, str] | None = None) -> str | None:
    """``did you mean ...?`` when one of ``names`` is the closest to ``name``, at least :data:`CLOSE` alike."""
    found = difflib.get_close_matches(name, names, n=1, cutoff=CLOSE)
    return f"did you mean {kind}{(spell or {}).get(found[0], found[0])}?" if found else None


def close_name(name: str, names: Sequence[str]) -> str | None:
    """``did you mean STACK/JOB_TYPE?`` for ``name`` (``STACK/JOB_TYPE``) when one of ``names`` is alike in each
    part, at least :data:`CLOSE` (a typo in the stack's name, the job type's, or both). Alike as a whole is not
    enough: ``Live-Media/Emails`` is as alike to ``Live-Media/Thumbnails`` by its stack alone."""
    stack, _, job_type = name.rpartition("/")

    def alike(given: str, found: str) -> bool:
        return given == found or difflib.SequenceMatcher(None, given, found).ratio() >= CLOSE

    each = [found for found in names if all(map(alike, (stack, job_type), found.rsplit("/", 1)))]
    best = difflib.get_close_matches(name, each, n=1, cutoff=0)
    return f"did you mean {best[0]}?" if best else None


def job_types_named(names: Sequence[str]) -> dict[str, str]:
    """Each job type's name (``names``: ``STACK/JOB_TYPE``) -> how to give it: itself, or each stack's name of it
    when two stacks have it (the name alone would be refused next), neither picked."""
    spelled = {}
    for job_type in sorted({name.rsplit("/", 1)[1] for name in names}):
        stacks = running(job_type, names)
        spelled[job_type] = " or ".join(stacks) if len(stacks) > 1 else job_type
    return spelled


def stack_given(
    given: str, stacks: Sequence[str], names: Sequence[str], resources: Resources, paths: Mapping[str, str]
) -> str | None:
    """What ``given`` where a stack's name goes is, but for a case slip or a typo (:func:`case`, :func:`close`);
    ``paths``: each job type's construct paths (:func:`construct_paths`)."""
    dashed = given.replace("/", "-")
    if "/" in given and dashed in stacks:  # `cdk deploy Dev/Billing` deploys the stack CloudFormation calls Dev-Billing
        return f"{given} is the construct path of stack {dashed}: --stack {dashed}"
    if given in paths and given not in names:
        return f"{given} is the construct path of job type {paths[given]}: --stack {_stack_of(paths[given])}"
    inner = inside(given, paths)
    if inner is not None:  # a resource's path in a job type's construct (its function, its queue's Resource)
        return f"{given} is in the construct of job type {inner}: --stack {_stack_of(inner)}"
    arn = stack_named(given)
    if arn is not None and arn in stacks:
        return f"{given} is the ARN of stack {arn}: --stack {arn}"
    named, slash, job_type = given.partition("/")
    if slash and named in stacks and job_type:
        return f"{given} is STACK/JOB_TYPE: --stack {named}"
    theirs, kind = [_stack_of(name) for name in running(given, names)], "a job type of"
    queue = None if theirs else resource_key((resource_named(given) or ("", given))[1], resources)
    if queue is not None:
        return f"{given} is {what(resources[queue])}: --stack {_stack_of(resources[queue][1])}"
    if not theirs:  # a Stage's name (Dev), a stack's id (Billing) or path, whatever its stack is named; also its
        # default name (Dev-Billing) when the app named it, and any of these in another case
        theirs, kind = within(given, paths) or within(given.replace("-", "/"), paths), "in the construct path of"
    if len(theirs) > 1:  # neither picked: one may be production
        return f"{given} is {kind} stacks {', '.join(theirs)}: give one of them to --stack"
    return f"{given} is {kind} stack {theirs[0]}: --stack {theirs[0]}" if theirs else None


def within(given: str, paths: Mapping[str, str]) -> list[str]:
    """The stacks whose job types' construct paths (:func:`construct_paths`) hold ``given``'s parts in a row before
    their own last part: a Stage's name, a stack's id or path, whatever CloudFormation names the stack. Compared as
    spelled, else in any case."""
    for fold in (str, str.lower):
        run = [fold(part) for part in given.split("/")]
        holding = set()
        for path, name in paths.items():
            parts = [fold(part) for part in path.split("/")[:-1]]
            if any(parts[i : i + len(run)] == run for i in range(len(parts) - len(run) + 1)):
                holding.add(_stack_of(name))
        if holding:
            return sorted(holding)
    return []


def inside(given: str, paths: Mapping[str, str]) -> str | None:
    """The job type (``STACK/JOB_TYPE``) whose construct holds ``given``, a path under its construct path."""
    held = [path for path in paths if given.startswith(f"{path}/")]
    return paths[max(held, key=len)] if held else None


def stack_named(given: str) -> str | None:
    """The stack's name in a CloudFormation stack's ARN (``arn:aws:cloudformation:R:A:stack/NAME/ID``), else None."""
    parts = given.split(":")
    if len(parts) == 6 and parts[0] == "arn" and parts[2] == "cloudformation" and parts[5].startswith("stack/"):
        return parts[5].split("/")[1]
    return None


def _stack_of(name: str) -> str:
    return name.rsplit("/", 1)[0]


def stack_as_job_type(job_type: str, stacks: Sequence[str], names: Sequence[str]) -> str | None:
    """What a stack's name (as spelled, or in another case) given where a job type's goes says; else None."""
    same = [stack for stack in stacks if stack.lower() == job_type.lower()]
    if len(same) != 1:
        return None
    own = sorted(name for name in names if name.rsplit("/", 1)[0] == same[0])
    stack = f"{job_type} is a stack" if same[0] == job_type else f"{job_type} is stack {same[0]} in another case {CASE}"
    return (
        f"{stack}: name one of its job types as STACK/JOB_TYPE, e.g. {own[0]}" if own else f"{stack} without job types"
    )


def running(job_type: str, names: Sequence[str]) -> list[str]:
    """The ``STACK/JOB_TYPE`` names of ``names`` whose job type is ``job_type``, sorted."""
    return sorted(name for name in names if name.rsplit("/", 1)[1] == job_type)


def is_arn(given: str) -> bool:
    """Whether ``given`` has an ARN's form (``arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE``)."""
    parts = given.split(":", 5)
    return len(parts) == 6 and parts[0] == "arn"


def resource_named(given: str) -> tuple[str, str] | None:
    """What a URL or ARN the consoles and CLIs show names, and its name: ``("queue", NAME)`` for a queue's URL or
    ARN, ``("Lambda function", NAME)`` for a function's ARN (a version or alias after it too), ``("ECS service",
    NAME)`` for a service's ARN; None for anything else."""
    if "://" in given:
        return "queue", given.rstrip("/").rsplit("/", 1)[1]
    parts = given.split(":")
    if len(parts) < 6 or parts[0] != "arn":
        return None
    if parts[2] == "sqs" and len(parts) == 6:
        return "queue", parts[5]
    if parts[2] == "lambda" and parts[5] == "function" and len(parts) in (7, 8):
        return "Lambda function", parts[6]
    if parts[2] == "ecs" and len(parts) == 6 and parts[5].startswith("service/"):
        return "ECS service", parts[5].rsplit("/", 1)[1]  # service/CLUSTER/NAME, or the old service/NAME
    return None


def is_resource(name: str, resources: Resources | None) -> str | None:
    """``NAME is the queue of STACK/JOB_TYPE`` (or its function, its service) when ``name`` is one's name, as typed
    in a hurry; else None."""
    queue = resource_key(name, resources or {})
    return f"{name} is {what((resources or {})[queue])}" if queue is not None else None


def what(queue: tuple[str, str]) -> str:
    return f"{queue[0]} of {queue[1]}"


def resource_key(name: str, resources: Resources) -> str | None:
    """The name in ``resources`` that ``name`` names: as spelled, else the one alike but for case and ``.fifo``."""
    if name in resources:
        return name
    folded = name.lower().removesuffix(".fifo")
    alike = [queue for queue in resources if queue.lower().removesuffix(".fifo") == folded]
    return alike[0] if len(alike) == 1 else None


def construct_paths(job_types: Iterable[Found]) -> dict[str, str]:
    """Each job type's construct path (its job queue's) -> ``STACK/JOB_TYPE``, and its consumer's when the job queue
    is the consumer's child (an ``EcsJob`` or a ``LambdaJob`` of the job type's name). A top-level stack's job
    queue's path may be its name (``Billing/Refunds``): a lookup of a path as spelled skips the names."""
    paths: dict[str, str] = {}
    for job in job_types:
        parent = job.path.rsplit("/", 1)[0]
        for path in (job.path, parent if parent.rsplit("/", 1)[-1] == job.job_type else ""):
            if path:
                paths.setdefault(path, job.name)
    return paths


def resource_names(job_types: Iterable[Found]) -> dict[str, tuple[str, str]]:
    """What each queue's name (its URL's last part) and each consumer's name (its function's, its ECS service's, as
    the consoles show them) is, and of which job type."""
    resources = {}
    for job in job_types:
        consumer = job.consumer
        function = consumer.function_name if isinstance(consumer, LambdaConsumer) else None
        service = consumer.service if isinstance(consumer, EcsConsumer) else None
        for name, kind in (
            (job.queue_url, "the queue"),
            (job.dead_letter_queue_url, "the dead-letter queue"),
            (function, "the Lambda function"),
            (service, "the ECS service"),  # its ARN's last part
        ):
            if name:
                resources[name.rsplit("/", 1)[-1]] = (kind, job.name)
    return resources
