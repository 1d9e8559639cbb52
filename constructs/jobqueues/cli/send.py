"""``jobqueues send JOB_TYPE (--body TEXT | --file FILE) [--group G] [--dedup-id ID]`` (:mod:`jobqueues.ops.send`)."""

from __future__ import annotations

import json
from typing import IO

import click

from jobqueues.cli.context import Aws, messages, pass_aws
from jobqueues.ops.errors import EXIT_FAILED, OpsError
from jobqueues.ops.send import bodies_from_lines, send


@click.command("send")
@click.argument("job_type")
@click.option("--body", default=None, metavar="TEXT", help="One message body.")
@click.option(
    "--file",
    "file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="One message body per line (blank lines skipped; '-' reads stdin).",
)
@click.option("--group", default=None, metavar="ID", help="FIFO: the message group (required on a FIFO queue).")
@click.option("--dedup-id", default=None, metavar="ID", help="FIFO, --body only. Default: content-based, or SHA-256.")
@click.option("--stack", default=None, metavar="STACK", help="The job type's stack, when two have it.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (keys: docs/cli.md).")
@pass_aws
def command(
    aws: Aws,
    job_type: str,
    body: str | None,
    file: IO[str] | None,
    group: str | None,
    dedup_id: str | None,
    stack: str | None,
    as_json: bool,
) -> int:
    """Send one message (--body) or a file of them (--file), in batches of 10; refused entries are listed."""
    if (body is None) == (file is None):
        raise click.UsageError("pass one of --body TEXT or --file FILE")
    if dedup_id is not None and file is not None:
        raise click.UsageError("--dedup-id names one message: use it with --body (a file's bodies are their own ids)")
    job = aws.job_type(job_type, stack)
    if job.queue_url is None:
        raise OpsError(f"job type {job.name}'s queue URL is unknown (another stack's queue?)")
    bodies = [(1, body)] if body is not None else bodies_from_lines(file or [])
    result = send(aws.client("sqs"), job.queue_url, bodies, group=group, dedup_id=dedup_id)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(f"sent {messages(len(result.message_ids))} to {job.name}")
        for failed in result.failed:
            click.echo(f"refused: line {failed.line}: {failed.code}: {failed.message}", err=True)
        if result.stopped_at_line is not None:
            click.echo(f"stopped: nothing sent from line {result.stopped_at_line} on", err=True)
    return EXIT_FAILED if result.failed else 0
