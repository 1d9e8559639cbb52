"""The ``jobqueues status`` view: the table of job types, sized to the terminal, or a block per job type where
the table would not fit (:mod:`jobqueues.cli.status`)."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from jobqueues.cli.column_widths import Fitted, Parts, Trimmed, least_width, whole, widths, words
from jobqueues.ops.status import JobTypeStatus


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _in_flight(row: JobTypeStatus) -> str:
    share = row.in_flight_share
    text = _count(row.in_flight)
    # Only worth a glance near SQS's in-flight quota: past it, receives return nothing.
    return f"{text} ({share:.0%} of quota)" if share is not None and share >= 0.01 else text


def _consumer(row: JobTypeStatus) -> str:
    if row.consumer == "ecs":
        tasks = f"{_count(row.ecs_running)}/{_count(row.ecs_desired)} tasks"
        return f"ECS {tasks}"
    if row.consumer == "lambda":
        errors, throttles = _count(row.lambda_errors), _count(row.lambda_throttles)
        return f"Lambda, errors {errors}, throttles {throttles}"  # wraps between its figures (_columns)
    return "none"  # ("-" is a figure that could not be read)


def _noisy_groups(row: JobTypeStatus) -> str:
    """A fair queue's noisy groups; one word when CloudWatch has no datapoint (never an invented 0); blank for a
    queue that is not fair."""
    if not row.fair:
        return ""
    return "unknown" if row.noisy_groups is None else f"{row.noisy_groups:,.0f}"


#: The status table's columns, left to right (``noisy groups`` only with a fair queue).
COLUMNS = ("job type", "visible", "in flight", "delayed", "oldest", "DLQ", "VT", "max rcv", "consumer")


def table(rows: list[JobTypeStatus], width: int | None = None) -> Table:
    """The status table: one row per job type, as wide as it needs (``width``: the terminal's, when narrower, down
    to :func:`table_width`). A name is never split (its `` (FIFO)`` may wrap), nor a figure; a header and a
    consumer wrap at their spaces (:mod:`jobqueues.cli.column_widths`). On a terminal narrower than
    :func:`table_width`, the view is :func:`stacked` (:func:`status_view` picks)."""
    view = Table(title="jobqueues status", title_justify="default")  # left, without padding to the table's width
    columns, cells, parts = _columns(rows)
    for column, column_width in zip(columns, widths(columns, cells, parts, width), strict=True):
        left = column in ("job type", "consumer")
        view.add_column(column, justify="left" if left else "right", width=column_width)
    for row, values in zip(rows, cells, strict=True):
        if row.dead_letter:
            values[5] = f"[bold red]{values[5]}[/]"
        view.add_row(*values)
    return view


def table_width(rows: list[JobTypeStatus]) -> int:
    """The columns :func:`table` needs at least: every name and figure whole, each header and consumer word whole,
    and the borders."""
    return least_width(*_columns(rows))


def _consumer_parts(cell: str) -> list[str]:
    return cell.split(", ")  # "errors 2" whole: a figure stays beside its label


def _columns(rows: list[JobTypeStatus]) -> tuple[list[str], list[list[str]], list[Parts]]:
    """The columns, each row's cells, and what each column keeps whole: a figure (the in-flight quota share's words
    may wrap), a name's words, a consumer's parts."""
    fair = any(row.fair for row in rows)
    columns = [*COLUMNS, *(["noisy groups"] if fair else [])]  # the others have no noisy groups
    special: dict[str, Parts] = {"job type": words, "in flight": words, "consumer": _consumer_parts}
    return columns, [_cells(row, fair) for row in rows], [special.get(column, whole) for column in columns]


def stacked(rows: list[JobTypeStatus], width: int) -> RenderableType:
    """The status of a terminal too narrow for :func:`table`: each job type's name on a line of its own, its figures
    as ``label value`` pairs, as many a line as ``width`` takes, then its consumer on a line of its own."""
    fair = any(row.fair for row in rows)
    labels = [label for label in (*COLUMNS[1:], *(["noisy groups"] if fair else [])) if label != "consumer"]
    consumer = COLUMNS.index("consumer")
    cells = [_cells(row, fair) for row in rows]
    figures = [[cell for i, cell in enumerate(row) if i not in (0, consumer)] for row in cells]
    pair = max(len(label) for label in labels) + 1 + max((len(c) for row in figures for c in row), default=1) + 2
    per_line = max(1, (width - 2) // pair)
    blocks: list[RenderableType] = ["jobqueues status"]
    for row, values, texts in zip(rows, figures, cells, strict=True):
        grid = Table.grid(padding=(0, 1))
        for _ in range(per_line):
            grid.add_column(style="dim", no_wrap=True)
            grid.add_column(overflow="fold")
        pairs = [(label, escape(value)) for label, value in zip(labels, values, strict=True)]
        if row.dead_letter:  # red, as in the table
            pairs[4] = ("DLQ", f"[bold red]{pairs[4][1]}[/]")
        pairs = [(label, value) for label, value in pairs if value]  # noisy groups: only a fair queue's
        for start in range(0, len(pairs), per_line):
            line = pairs[start : start + per_line]
            grid.add_row(*[text for label, value in line for text in (label, value)])
        name = texts[0]
        if len(name) > width and "/" in name:  # break after the stack, not inside the job type's name
            name = name.replace("/", "/\n", 1)
        blocks += [
            f"[bold]{escape(name)}[/]",
            Padding(grid, (0, 0, 0, 2), expand=False),
            Padding(f"[dim]consumer[/] {escape(texts[consumer])}", (0, 0, 0, 2), expand=False),
        ]
    return Group(*blocks)


def _cells(row: JobTypeStatus, fair: bool) -> list[str]:
    """A row's cells as text, in the table's column order."""
    return [
        row.name + (" (FIFO)" if row.fifo else " (fair)" if row.fair else ""),
        _count(row.visible),
        _in_flight(row),
        _count(row.delayed),
        _age(row.oldest_age_s),
        _count(row.dead_letter),
        "-" if row.visibility_timeout_s is None else f"{row.visibility_timeout_s} s",
        _count(row.max_receive_count),
        _consumer(row) + (" (note below)" if row.note else ""),
        *([_noisy_groups(row)] if fair else []),
    ]


def status_view(rows: list[JobTypeStatus]) -> RenderableType:
    """The table, then each row's note (why a figure is missing) under it: in a cell, a long note squeezed every
    column of the table."""
    fitted = Fitted(table_width(rows), lambda width: table(rows, width), lambda width: stacked(rows, width))
    return Group(fitted, *(f"{escape(row.name)}: {escape(row.note)}" for row in rows if row.note))


def watch_view(rows: list[JobTypeStatus], failure: str | None, every_s: float, read_at: datetime) -> RenderableType:
    """The ``--watch`` view: how it refreshes, why the latest refresh failed (if it did), with when the table kept
    was read (``read_at``, as the clock shows it), and every dead-letter queue that holds messages, then the last
    table read. Those lines come first: a terminal shorter than the view crops its end (a trial's 80x24 watch lost
    the last job type's red DLQ count)."""
    head = f"refreshed every {every_s:g} s; Ctrl-C ends"
    if failure is not None:
        kept = f"the table is the last one read, at {read_at:%H:%M:%S}"  # refreshes can fail for minutes
        head += f"; [bold red]refresh failed: {escape(failure)}[/] ({kept})"
    # The count first: wrapped anywhere, each part still reads right, and a copy of the name gets the name alone.
    dead = [f"{row.dead_letter:,} in {escape(row.name)}" for row in rows if row.dead_letter]
    if dead:
        head += f"; [bold red]dead letters: {', '.join(dead)}[/]"
    return Group(Trimmed(head), status_view(rows))
