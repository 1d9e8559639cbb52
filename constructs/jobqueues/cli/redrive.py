"""``jobqueues dlq redrive JOB_TYPE [--max-per-second N] [--method auto|move-task|loop] [--dry-run]``
(:mod:`jobqueues.ops.redrive`)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobqueues.cli.context import Aws, messages, pass_aws
from jobqueues.ops.dlq import dead_letter_url
from jobqueues.ops.dry_run import PEEK_LIMIT, RECEIVE_MAX, DlqCount, count
from jobqueues.ops.errors import EXIT_FAILED, EXIT_INTERRUPTED, OpsError
from jobqueues.ops.redrive import redrive as run_redrive


@contextmanager
def ctrl_c_sets(stop: threading.Event) -> Iterator[None]:
    """While inside, Ctrl-C asks the redrive to stop (a second one interrupts at once)."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        click.echo("stopping: the batch in hand finishes (Ctrl-C again to interrupt at once)", err=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
@click.option("--stack", default=None, metavar="STACK", help="The job type's stack, when two have it.")
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
    stop = threading.Event()
    columns = [TextColumn(f"redrive {job.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=as_json) as bar, ctrl_c_sets(stop):
        task = bar.add_task("redrive", total=None)

        def progress(moved: int, total: int) -> None:
            bar.update(task, completed=moved, total=total or None)

        result = run_redrive(sqs, dlq_url, job.queue_url, job.fifo, method, rate, progress, stop)
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
