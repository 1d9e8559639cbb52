"""``jobqueues dlq list|redrive|purge JOB_TYPE``: a job type's dead-letter queue (:mod:`jobqueues.ops.dlq`,
:mod:`jobqueues.ops.redrive`)."""

from __future__ import annotations

import datetime
import difflib
import json

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

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


def dead_letter_table(rows: list[DeadLetter]) -> Table:
    """The DLQ's rows: the id each message was sent with, its receives, age, group, body and last error."""
    view = Table(title_justify="left")
    for column in ("message id", "receives", "age", "group", "body", "last error"):
        view.add_column(column, justify="right" if column == "receives" else "left", overflow="fold")
    for row in rows:
        error = row.last_error
        text = "-" if error is None else f"{error.error_type}: {error.error}"
        body = escape(row.body) + ("..." if row.body_bytes > len(row.body.encode()) else "")
        if row.payload_pointer is not None:  # kept in S3: its size and object, not the pointer's JSON
            body = escape(f"payload of {row.payload_bytes:,} bytes in {row.payload_pointer}")
        view.add_row(
            row.source_message_id,  # a dead-letter copy's original: the id the consumer's log lines name
            str(row.receive_count),
            _age(row.age_s),
            row.group or "-",
            body,
            escape(text),
        )
    return view


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
    console.print(f"{job.name}'s DLQ: {shown}, peeked, not consumed")
    for note in notes:
        console.print(f"note: {escape(note)}")
    console.print(dead_letter_table(found.rows))


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
