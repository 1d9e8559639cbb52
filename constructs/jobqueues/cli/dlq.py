"""``jobqueues dlq list|redrive|purge JOB_TYPE``: a job type's dead-letter queue (:mod:`jobqueues.ops.dlq`,
:mod:`jobqueues.ops.redrive`)."""

from __future__ import annotations

import datetime
import difflib
import json

import click
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from jobqueues.cli.column_widths import Fitted, Parts, folds, least_width, whole, widths
from jobqueues.cli.context import STACK_OPTION, Aws, messages, pass_aws, standard_input
from jobqueues.ops.dlq import DeadLetter, dead_letter_url, depth, list_dead_letters, purge
from jobqueues.ops.errors import EXIT_FAILED, BadInput


class _Subcommands(click.Group):
    """``dlq``'s subcommands; a job type given where the subcommand goes (``dlq Thumbnails``, as ``send`` takes
    it) is told where it goes, in one line. A subcommand's typo (as alike as click finds it) keeps click's
    suggestion."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        given = args[0] if args else ""
        if given and given not in self.commands and not difflib.get_close_matches(given, self.commands):
            raise BadInput(f"dlq {given}: say what to do first: jobqueues dlq {'|'.join(self.commands)} {given}")
        return super().resolve_command(ctx, args)


@click.group("dlq", cls=_Subcommands)
def command() -> None:
    """A job type's dead-letter queue: list its messages and why, redrive them, or purge it."""


def _age(seconds: float) -> str:
    return str(datetime.timedelta(seconds=round(seconds)))


#: The DLQ table's columns, and what each keeps whole (:mod:`jobqueues.cli.column_widths`): an id and a group
#: (to copy), a count, an age; a body and an error fold.
DEAD_LETTER_COLUMNS: tuple[tuple[str, Parts], ...] = (
    ("message id", whole),
    ("receives", whole),
    ("age", whole),
    ("group", whole),
    ("body", folds),
    ("last error", folds),
)
_HEADERS, _PARTS = [column for column, _ in DEAD_LETTER_COLUMNS], [parts for _, parts in DEAD_LETTER_COLUMNS]


def dead_letter_table(rows: list[DeadLetter], width: int | None = None) -> Table:
    """The DLQ's rows: the id each message was sent with, its receives, age, group, body and last error, sized to
    ``width`` (None: as wide as they need) without splitting an id (:func:`dead_letters_view` picks)."""
    view = Table(title_justify="left")
    cells = [_cells(row) for row in rows]
    for header, split, column_width in zip(_HEADERS, _PARTS, widths(_HEADERS, cells, _PARTS, width), strict=True):
        view.add_column(
            header,
            justify="right" if header == "receives" else "left",
            width=column_width,
            overflow="fold" if split is folds else "ellipsis",
        )
    for values in cells:
        view.add_row(*(escape(value) for value in values))
    return view


def _cells(row: DeadLetter) -> list[str]:
    """A dead letter's cells as text, in the table's column order."""
    error = row.last_error
    body = row.body + ("..." if row.body_bytes > len(row.body.encode()) else "")
    if row.payload_pointer is not None:  # kept in S3: its size and object, not the pointer's JSON
        body = f"payload of {row.payload_bytes:,} bytes in {row.payload_pointer}"
    return [
        row.source_message_id,  # a dead-letter copy's original: the id the consumer's log lines name
        str(row.receive_count),
        _age(row.age_s),
        row.group or "-",
        body,
        "-" if error is None else f"{error.error_type}: {error.error}",
    ]


def _blocks(rows: list[DeadLetter], width: int) -> RenderableType:
    """A block per message, for a terminal ``width`` columns wide, too narrow for the table: its id on a line of its
    own, then each figure and text under it, beside its label; a value kept whole (a group) that the labels leave too
    little room for, on a line of its own under its label."""
    label_width = max(len(header) for header in _HEADERS[1:])
    room = width - 2 - label_width - 1  # the block's indent, the labels, the gap
    blocks: list[RenderableType] = []
    for values in (_cells(row) for row in rows):
        blocks.append(f"[bold]{escape(values[0])}[/]")
        grid = _label_grid(label_width)
        for header, split, value in zip(_HEADERS[1:], _PARTS[1:], values[1:], strict=True):
            if split is whole and len(value) > room:  # folded, a copy would be another group
                blocks += [Padding(grid, (0, 0, 0, 2), expand=False), f"  [dim]{header}[/]"]
                blocks.append(Padding(escape(value), (0, 0, 0, 4)))
                grid = _label_grid(label_width)
            else:
                grid.add_row(header, escape(value))
        blocks.append(Padding(grid, (0, 0, 0, 2), expand=False))
    return Group(*blocks)


def _label_grid(label_width: int) -> Table:
    """Label-value rows, the labels ``label_width`` wide: a block's grids, one under another, line up."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, width=label_width)
    grid.add_column(overflow="fold")
    return grid


def dead_letters_view(rows: list[DeadLetter]) -> RenderableType:
    """``dlq list``'s view of ``rows``: the table, or a block per message on a terminal too narrow for it."""
    least = least_width(_HEADERS, [_cells(row) for row in rows], _PARTS)
    return Fitted(least, lambda width: dead_letter_table(rows, width), lambda width: _blocks(rows, width))


@command.command("list")
@click.argument("job_type")
@STACK_OPTION
@click.option("--max", "limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="Messages shown.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (keys: docs/cli.md); notes go to stderr.")
@pass_aws
def list_(aws: Aws, job_type: str, stack: str | None, limit: int, as_json: bool) -> None:
    """The DLQ's messages, without consuming them, each with the last error the consumer logged for it."""
    job = aws.job_type(job_type, stack)
    found = list_dead_letters(job, aws.client("sqs"), aws.client("logs"), limit)
    notes = []
    if found.rows and found.no_log_reason:
        notes.append(
            f"no error from the log: {found.no_log_reason}; an error shown is from sqslease's dead-letter copy"
        )
    if job.consumer is not None and job.consumer.kind == "lambda" and any(r.last_error is None for r in found.rows):
        group = job.consumer.log_group or "the function's log group"
        notes.append(
            f"an error that names no message is not shown: a function that cannot import its code, times out, or "
            f"fails a whole batch logs it without message ids; see {group}"
        )
    if not found.log_complete:
        notes.append(f"the log search stopped after {found.log_calls} pages: older errors may be missing")
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in found.rows], indent=2))
        for note in notes:
            click.echo(f"note: {note}", err=True)
        return
    console = Console() if Console().is_terminal else Console(width=200)
    if not found.rows:
        console.print(f"the DLQ of {job.name} is empty")
        return
    total = depth(aws.client("sqs"), dead_letter_url(job))
    shown = f"{len(found.rows)} of about {messages(max(total, len(found.rows)))}"
    if job.fifo and total > len(found.rows):
        shown += " (FIFO: a peek sees the first messages of each group only)"
    # The title and notes are one line each, for the terminal to wrap: they name a job type and a log group, and
    # rich, wrapping them itself, split a name longer than the terminal mid-word (a copy got half of it).
    console.print(f"{escape(job.name)}'s DLQ: {shown}, peeked, not consumed", soft_wrap=True)
    for note in notes:
        console.print(f"note: {escape(note)}", soft_wrap=True)
    console.print(dead_letters_view(found.rows))


@command.command("purge")
@click.argument("job_type")
@STACK_OPTION
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_aws
def purge_(aws: Aws, job_type: str, stack: str | None, yes: bool) -> int:
    """Delete every message of the DLQ (asks first, unless --yes). SQS allows one purge a minute."""
    job = aws.job_type(job_type, stack)
    url = dead_letter_url(job)
    count = depth(aws.client("sqs"), url)
    if count == 0:
        click.echo(f"the DLQ of {job.name} is empty: nothing to purge")
        return 0
    if not yes:
        click.echo(f"delete the {messages(count)} of {job.name}'s DLQ ({url})? [y/N]: ", nl=False)
        stdin = standard_input()
        answer = stdin.readline() if stdin is not None else ""  # Ctrl-C here is an interrupt (130), as anywhere
        if not answer:  # end of input: a script or CI step, nobody to ask
            click.echo("\nno answer (no input to read): nothing deleted; pass --yes to purge without asking")
            return EXIT_FAILED
        if answer.strip().lower() not in ("y", "yes"):
            click.echo("nothing deleted")
            return EXIT_FAILED
    purge(aws.client("sqs"), url)
    click.echo(f"purged {job.name}'s DLQ: about {messages(count)} deleted (SQS takes up to 60 s to finish)")
    return 0


def _add_redrive() -> None:
    """``dlq redrive``, from its own module (:mod:`jobqueues.cli.redrive`) when it is there."""
    try:
        from jobqueues.cli.redrive import redrive
    except ModuleNotFoundError as error:
        if error.name != "jobqueues.cli.redrive":
            raise
        return
    command.add_command(redrive)


_add_redrive()
