"""Rules for a job type's consumer, in plain numbers (no aws_cdk), beside the queue rules of
:mod:`jobqueues.declaration`. Each error names the prop, the value and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqslease.rules import SQS_IN_FLIGHT_QUOTA, format_duration

#: Fargate's maximum ``stopTimeout``; the CDK does not check it.
FARGATE_MAX_STOP_TIMEOUT_S = 120
#: ``stopTimeout`` = the worker's shutdown grace + this margin (the worker's final releases and exit).
STOP_TIMEOUT_MARGIN_S = 5
#: The worker's default shutdown grace (``LeaseSettings.shutdown_grace``).
DEFAULT_SHUTDOWN_GRACE_S = 25
LAMBDA_MAX_BATCH_SIZE = 10_000
FIFO_MAX_BATCH_SIZE = 10
#: Without a batching window, Lambda's SQS event source takes at most 10 records per batch.
BATCH_SIZE_WITHOUT_WINDOW = 10
MAX_CONCURRENCY_RANGE = (2, 1000)


@dataclass
class ConsumerCheck:
    """Errors and warnings of a consumer declaration."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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
            f"max_tasks {max_tasks} x concurrency {concurrency} = {max_tasks * concurrency:,} handlers can hold more "
            f"messages than the {in_flight_quota:,} in-flight quota: receivers stop getting messages at the quota "
            "without an error; lower max_tasks or concurrency, or shard the job type"
        )
    return check
