"""``jobqueues status [--stack S] [--watch [SECONDS]] [--json]``: one row per job type (:mod:`jobqueues.ops.status`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, cast

import click
from rich.console import Console

from jobqueues.cli.context import CTRL_C_LOOK_S, Aws, CtrlCStop, ctrl_c_sets, pass_aws
from jobqueues.cli.status_table import status_view, watch_view
from jobqueues.ops.discovery import Discovery, JobType
from jobqueues.ops.errors import BadInput, aws_error
from jobqueues.ops.status import JobTypeStatus, read_status

T = TypeVar("T")


@click.command("status")
@click.argument("names", nargs=-1, metavar="[JOB_TYPE]...")
@click.option("--stack", "stacks", multiple=True, metavar="STACK", help="Only this stack (repeatable). Default: all.")
@click.option(
    "--watch",
    type=click.FloatRange(min=1),
    is_flag=False,
    flag_value=5.0,
    default=None,
    metavar="[SECONDS]",
    help="Refresh every SECONDS (default 5) until Ctrl-C.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (keys: docs/cli.md) instead of a table.")
@pass_aws
def command(aws: Aws, names: tuple[str, ...], stacks: tuple[str, ...], watch: float | None, as_json: bool) -> int:
    """One row per job type (each JOB_TYPE's, or all): visible, in flight, delayed, oldest message, DLQ, VT, max
    receives, consumer."""
    if as_json and watch is not None:
        raise BadInput("--json prints once: drop --watch (or run it in a loop)")
    if watch is not None:
        return _watch(aws, stacks, names, watch)
    found = aws.discover(stacks)
    rows = _read(aws, _named(aws, found, names, stacks))
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
    elif not rows:  # where it looked, and which stacks: another region's, or the wrong --stack
        click.echo(f"no job types in {found.where} (stacks searched: {', '.join(found.stacks) or 'none'})")
    else:
        _console().print(status_view(rows))
    return 0


def _named(aws: Aws, found: Discovery, names: tuple[str, ...], stacks: tuple[str, ...]) -> list[JobType]:
    """The job types ``names`` name (``JOB_TYPE`` or ``STACK/JOB_TYPE``, as ``send`` takes them) among those found
    in ``stacks``, in the discovery's order; all when none is named. A name two stacks have is both rows: status
    acts on neither. A name found nowhere is the lookup's line (:meth:`Discovery.find`); with one ``--stack``, every
    stack's lookup, which names the stacks that have it."""
    if not names:
        return found.job_types
    chosen: set[str] = set()
    for name in names:
        same = {j.name for j in found.job_types if name in (j.job_type, j.name)}
        if not same and len(set(stacks)) == 1:
            aws.job_type(name, stacks[0])  # raises: not in that stack (found holds all of its job types)
        chosen |= same or {found.find(name).name}
    return [j for j in found.job_types if j.name in chosen]


def _read(aws: Aws, job_types: list[Any]) -> list[JobTypeStatus]:
    return read_status(job_types, aws.client("sqs"), aws.client("cloudwatch"), aws.client("ecs"))


def _console() -> Console:
    console = Console()
    # a pipe or a CI log: one line per row, whatever the names' lengths
    return console if console.is_terminal else Console(width=200)


class _Stopped(Exception):
    """Ctrl-C came while a watch's read waited for its answer."""


def _until_stopped(stop: CtrlCStop, read: Callable[[], T]) -> T:
    """``read()``, on a thread of its own, waited for until Ctrl-C (:class:`_Stopped`): a request to an endpoint
    that does not answer waits its read timeout and retries (30 s), which the end of a watch should not. The
    handler stays as it is (it only records the press); the read left behind is a daemon thread, which ends with
    the process. ``read``'s exception is raised here, in the caller's thread."""
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, read()))
        except BaseException as error:  # handed to the caller, which raises it
            outcome.append((False, error))
        finally:
            done.set()

    threading.Thread(target=run, name="jobqueues-status-read", daemon=True).start()
    while not done.wait(CTRL_C_LOOK_S):
        if stop.is_set():
            raise _Stopped
    ok, value = outcome[0]
    if not ok:
        raise value
    return cast(T, value)


def _wait(stop: threading.Event, seconds: float) -> bool:
    """Wait ``seconds`` for the next refresh; True once Ctrl-C asked the watch to end."""
    return stop.wait(seconds)


def _now() -> datetime:
    """The local time, with its zone: when a watch's table was read."""
    return datetime.now().astimezone()


def _watch(aws: Aws, stacks: tuple[str, ...], names: tuple[str, ...], every_s: float) -> int:
    """``--watch``: the table every ``every_s`` seconds until Ctrl-C, which ends it with 0 from the command's start
    (a second one at once). Ctrl-C only sets a flag the loop reads: a ``KeyboardInterrupt`` raised where Python
    ignores exceptions (a destructor, as a refresh's dropped clients and threads run them) was lost, and the watch
    went on. Installing the handler also takes Ctrl-C back where a script started us with SIGINT ignored."""
    from botocore.exceptions import BotoCoreError, ClientError
    from rich.live import Live

    try:
        with ctrl_c_sets(None) as stop:
            job_types = _until_stopped(stop, lambda: _named(aws, aws.discover(stacks), names, stacks))
            # the first read fails as a plain run does: one error line, its status
            rows = _until_stopped(stop, lambda: _read(aws, job_types))
            read_at = _now()
            console = _console()
            # On a terminal the table is redrawn in place; elsewhere (a pipe, a CI log) each refresh prints it again.
            live: Any = Live(console=console, refresh_per_second=1) if console.is_terminal else None
            show = live.update if live is not None else console.print
            if live is not None:
                live.start()
            try:
                show(watch_view(rows, None, every_s, read_at))
                while not _wait(stop, every_s):
                    failure = None
                    try:
                        rows = _until_stopped(stop, lambda: _read(aws, job_types))
                        read_at = _now()
                    except (BotoCoreError, ClientError) as error:
                        # A throttled or dropped request should not end an operator's watch: show it, try again.
                        failure = str(aws_error(error, aws.endpoint_url) or error)
                    show(watch_view(rows, failure, every_s, read_at))
            finally:
                if live is not None:
                    live.stop()
    except (KeyboardInterrupt, _Stopped):  # the second Ctrl-C during a refresh, or the first while a read waits
        pass
    return 0  # Ctrl-C is how a watch ends
