"""``jobqueues send JOB_TYPE (--body TEXT | --file FILE) [--group G] [--dedup-id ID]`` (:mod:`jobqueues.ops.send`)."""

from __future__ import annotations

import json
import string

import click

from jobqueues.cli.context import STACK_OPTION, Aws, ctrl_c_sets, messages, pass_aws, standard_input
from jobqueues.ops.errors import EXIT_FAILED, EXIT_INTERRUPTED, BadInput, OpsError
from jobqueues.ops.send import PayloadBucket, SendResult, bodies_from_lines, send

#: What a first Ctrl-C says.
STOPPING = "stopping: the batch in hand finishes (Ctrl-C again to interrupt at once)"


def _read(file: str) -> bytes:
    """The whole of ``file`` (``-``: standard input); :class:`BadInput` when it cannot be read."""
    if file == "-":
        stdin = standard_input()
        if stdin is None:
            raise BadInput("--file -: standard input is closed: nothing to send")
        return stdin.buffer.read()
    try:
        with open(file, "rb") as opened:
            return opened.read()
    except OSError as error:
        raise BadInput(f"--file {file}: {error.strerror or error}") from None


def _text_lines(file: str) -> list[str]:
    """The lines of ``file`` (``-``: standard input), decoded as UTF-8; :class:`BadInput` naming the first line
    that cannot be read or is not UTF-8."""
    lines = _read(file).splitlines(keepends=True)
    decoded = []
    for number, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8"))
        except UnicodeDecodeError as error:
            byte = line[error.start : error.start + 1].hex()
            raise BadInput(
                f"--file {file}: line {number} is not UTF-8 text (byte 0x{byte} at column {error.start + 1}): "
                "nothing sent"
            ) from None
    return decoded


@click.command("send")
@click.argument("job_type")
@click.option("--body", default=None, metavar="TEXT", help="One message body.")
@click.option(
    "--file",
    "file",
    default=None,
    metavar="FILE",
    help="One message body per line, UTF-8 (blank lines skipped; '-' reads stdin). Read whole before sending.",
)
@click.option(
    "--group",
    default=None,
    metavar="ID",
    help="The message group: required on FIFO; the tenant on a standard (fair) queue.",
)
@click.option("--dedup-id", default=None, metavar="ID", help="FIFO, --body only. Default: content-based, or SHA-256.")
@STACK_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (keys: docs/cli.md).")
@pass_aws
def command(
    aws: Aws,
    job_type: str,
    body: str | None,
    file: str | None,
    group: str | None,
    dedup_id: str | None,
    stack: str | None,
    as_json: bool,
) -> int:
    """Send one message (--body) or a file of them (--file), in batches of 10; refused entries are listed. A body
    larger than the queue takes goes through the job type's payload bucket (the SQS Extended Client's format)."""
    if (body is None) == (file is None):
        given = "both were given" if body is not None else "neither was given"
        raise BadInput(f"pass exactly one of --body TEXT or --file FILE ({given})")
    if body == "":
        raise BadInput("--body is empty: SQS takes no empty message")
    if dedup_id is not None and file is not None:
        raise BadInput("--dedup-id names one message: use it with --body (a file's bodies are their own ids)")
    _check_id("--group", group, "message group")
    _check_id("--dedup-id", dedup_id, "deduplication id")
    # A file is read whole first: one that is not text sends nothing, rather than stopping half-way.
    bodies = [(1, body)] if body is not None else list(bodies_from_lines(_text_lines(file or "-")))
    job = aws.job_type(job_type, stack)
    if job.queue_url is None:
        raise OpsError(f"job type {job.name}'s queue URL is unknown (another stack's queue?)")
    payloads = PayloadBucket(aws.client("s3"), job.payload_bucket) if job.payload_bucket else None
    with ctrl_c_sets(lambda: STOPPING) as stop:
        result = send(
            aws.client("sqs"),
            job.queue_url,
            bodies,
            group=group,
            dedup_id=dedup_id,
            stop=stop,
            payloads=payloads,
            name=job.name,
        )
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        through = f", {result.offloaded} {'body' if result.offloaded == 1 else 'bodies'} through payload bucket "
        click.echo(
            f"sent {messages(len(result.message_ids))} to {job.name}"
            + (f"{through}{result.payload_bucket}" if result.offloaded else "")
        )
        for failed in result.failed:
            click.echo(f"refused: line {failed.line}: {failed.code}: {failed.message}", err=True)
        if result.interrupted:
            click.echo(_interrupted(result, job.fifo), err=True)
        elif result.stopped_at_line is not None:
            click.echo(f"stopped: nothing sent from line {result.stopped_at_line} on", err=True)
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if result.failed else 0


def _interrupted(result: SendResult, fifo: bool) -> str:
    """What a Ctrl-C left: the lines unconfirmed, if a batch was cut off, and the line to send the file from."""
    resume = f"send the file from line {result.stopped_at_line} to go on"
    if result.unconfirmed_lines is None:
        return f"interrupted: nothing sent from line {result.stopped_at_line} on: {resume}"
    first, last = result.unconfirmed_lines
    after = f"nothing sent from line {result.next_line} on" if result.next_line else "nothing after them was sent"
    twice = (
        "a FIFO queue drops those lines sent again within 5 minutes as duplicates"
        if fifo
        else "a standard queue may then get those lines twice"
    )
    unconfirmed = f"lines {first} to {last} were being sent, unconfirmed (SQS may have taken them)"
    return f"interrupted: {unconfirmed}; {after}: {resume} ({twice})"


#: What SQS takes as a message group id or a deduplication id: 1 to 128 of these (ASCII letters, digits and
#: punctuation).
ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
ID_MAX_LENGTH = 128


def _check_id(option: str, value: str | None, what: str) -> None:
    """:class:`BadInput` for an id SQS would refuse (the emulator takes more), before anything is sent."""
    if value is None:
        return
    if not value:
        raise BadInput(f"{option} '': empty: give the {what}")
    takes = f"SQS takes 1 to {ID_MAX_LENGTH} ASCII letters, digits and punctuation"
    if len(value) > ID_MAX_LENGTH:
        raise BadInput(f"{option} {value!r}: {takes} ({len(value)} given)")
    bad = next((c for c in value if c not in ID_CHARACTERS), None)
    if bad is not None:
        raise BadInput(f"{option} {value!r}: {takes}, not {bad!r}")
