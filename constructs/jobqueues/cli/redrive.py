"""``jobqueues dlq redrive JOB_TYPE [--max-per-second N] [--method auto|move-task|loop] [--dry-run]``
(:mod:`jobqueues.ops.redrive`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobqueues.cli.context import STACK_OPTION, Aws, ctrl_c_sets, messages, pass_aws
from jobqueues.ops.dlq import dead_letter_url
from jobqueues.ops.dry_run import PEEK_LIMIT, RECEIVE_MAX, DlqCount, count
from jobqueues.ops.errors import EXIT_FAILED, EXIT_INTERRUPTED, OpsError, aws_error
from jobqueues.ops.move_tasks import Interrupted, move_task_state
from jobqueues.ops.redrive import STARTING_MOVE_TASK
from jobqueues.ops.redrive import redrive as run_redrive

#: What a first Ctrl-C does, by the method running (``None``: before either starts).
STOPPING = {
    "move-task": (
        "stopping: cancelling the SQS move task (CancelMessageMoveTask): what it moved stays in the queue, the rest "
        "in the DLQ (Ctrl-C again to stop waiting for the cancel)"
    ),
    STARTING_MOVE_TASK: (
        "stopping: the redrive stops once SQS answers its start, and a move task it started is cancelled: what it "
        "moved stays in the queue, the rest in the DLQ (Ctrl-C again to interrupt at once)"
    ),
    "loop": "stopping: the batch in hand finishes (Ctrl-C again to interrupt at once)",
    None: "stopping before the redrive starts (Ctrl-C again to interrupt at once)",
}


def stopping(method: dict[str, str]) -> Callable[[], str]:
    """What a first Ctrl-C says, for ``method["name"]`` (the method running, once one does)."""
    return lambda: STOPPING[method.get("name")]


def interrupted_move_task(sqs: Any, dlq_url: str, cancel_error: str | None) -> str:
    """The line for a move task interrupted at once (a second Ctrl-C): what SQS says the task is doing now."""
    try:
        state = move_task_state(sqs, dlq_url)
    except Exception as error:  # said, not raised: the interrupt is what ends the command
        failure = aws_error(error)
        if failure is None:
            raise
        return f"interrupted: the SQS move task's state could not be read ({failure}): `--dry-run` shows what is left"
    if state is None or state.status == "COMPLETED":
        return "interrupted: the SQS move task had finished: the DLQ's messages are in the queue"
    progress = f"after {state.moved} of {state.to_move} messages"
    if state.status in ("CANCELLING", "CANCELLED"):
        how = "cancelled" if state.status == "CANCELLED" else "being cancelled"
        return (
            f"interrupted: the SQS move task is {how} {progress}: what it moved is in the queue, the rest stays in "
            "the DLQ: run the same command again to go on"
        )
    why = f" (the cancel failed: {cancel_error})" if cancel_error else ""
    return (
        f"interrupted: the SQS move task is {state.status} {progress}{why}: it goes on server-side; the same "
        "command follows it, and the SQS console cancels it"
    )


def _dry_run_text(name: str, counted: DlqCount) -> str:
    """What ``--dry-run`` prints: the messages, each FIFO group's, and what could not be placed in a group."""
    lines = [f"would move {messages(counted.messages)} from {name}'s DLQ to its queue (nothing moved)"]
    for group, n in sorted((counted.groups or {}).items()):
        lines.append(f"  group {group}: {n} or more" if group in counted.at_least else f"  group {group}: {n}")
    rest = counted.not_in_groups - counted.in_flight - counted.delayed
    if rest and counted.at_least:
        lines.append(
            f"  {rest} more in the groups marked 'or more' (a FIFO receive shows {RECEIVE_MAX} messages of a group "
            "at most without deleting them)"
        )
    elif rest:
        lines.append(f"  {rest} more in groups not looked at (the count stops after {PEEK_LIMIT:,} messages)")
    if counted.groups is not None and counted.in_flight + counted.delayed:
        lines.append(
            f"  {counted.in_flight + counted.delayed} in flight or delayed, in no group above (a peek or a stopped "
            "redrive holds them for up to 60 s)"
        )
    return "\n".join(lines)


@click.command("redrive")
@click.argument("job_type")
@STACK_OPTION
@click.option(
    "--max-per-second", "rate", type=click.IntRange(1, 500), default=None, help="Messages per second at most."
)
@click.option(
    "--method",
    type=click.Choice(["auto", "move-task", "loop"]),
    default="auto",
    show_default=True,
    help="SQS's move task, or receive/send/delete (auto: the move task where the endpoint has it).",
)
@click.option("--dry-run", "dry_run_", is_flag=True, help="Show what would move (messages, FIFO groups); move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (keys: docs/cli.md).")
@pass_aws
def redrive(
    aws: Aws, job_type: str, stack: str | None, rate: int | None, method: str, dry_run_: bool, as_json: bool
) -> int:
    """Move the DLQ's messages back to the job type's queue, with progress; Ctrl-C stops and loses nothing."""
    job = aws.job_type(job_type, stack)
    dlq_url = dead_letter_url(job)
    if job.queue_url is None:
        raise OpsError(f"job type {job.name}'s queue URL is unknown (another stack's queue?)")
    sqs = aws.client("sqs")
    if dry_run_:
        counted = count(sqs, dlq_url, job.fifo)
        click.echo(json.dumps(counted.as_dict()) if as_json else _dry_run_text(job.name, counted))
        return 0
    running: dict[str, str] = {}  # "name": the method the redrive runs by, once it does
    columns = [TextColumn(f"redrive {job.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    try:
        with (
            Progress(*columns, console=Console(stderr=True), transient=True, disable=as_json) as bar,
            ctrl_c_sets(stopping(running)) as stop,
        ):
            task = bar.add_task("redrive", total=None)

            def progress(moved: int, total: int) -> None:
                bar.update(task, completed=moved, total=total or None)

            def started(name: str) -> None:
                running["name"] = name

            result = run_redrive(sqs, dlq_url, job.queue_url, job.fifo, method, rate, progress, stop, started)
    except Interrupted as interrupt:
        click.echo(interrupted_move_task(sqs, dlq_url, interrupt.cancel_error), err=True)
        return EXIT_INTERRUPTED
    if as_json:
        click.echo(json.dumps(result.as_dict()))
    else:
        how = "SQS move task" if result.method == "move-task" else "receive/send/delete"
        end = "stopped" if result.stopped else "done"
        click.echo(f"{end}: {messages(result.moved)} moved to {job.name}'s queue in {result.seconds:.1f} s ({how})")
        for failure in result.failed:
            click.echo(f"refused: {failure}", err=True)
        if result.stopped:
            click.echo("the rest is still in the DLQ: run the same command again to go on", err=True)
        if result.in_flight_left:
            click.echo(
                f"{result.in_flight_left} messages are in flight in the DLQ (a stopped run's batch, or a peek): "
                "they are visible again within 60 s; run the same command then",
                err=True,
            )
    if result.stopped:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if result.failed else 0


#: The command as ``jobqueues dlq`` adds it (``redrive`` is the same object).
command = redrive
