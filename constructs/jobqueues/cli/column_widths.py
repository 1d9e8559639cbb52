"""Column widths for the CLI's tables that never split what must stay whole.

rich, left to size a table on a narrow terminal, squeezed figures to "…", split names and message ids mid-word, and
dropped whole columns (docs-only trials at 80, 60 and 40 columns). Here a table is sized from its own cells: each
column is given its least width (what it holds whole: a figure, an id, a name's longest word), then what it needs
on one line, left to right, as far as the terminal's width goes; a table whose least widths do not fit is shown
another way, a block per row (:class:`Fitted` picks at each render).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment

#: How a cell may wrap: the parts it must keep whole.
Parts = Callable[[str], list[str]]
#: The least a text that may fold anywhere (a body, an error) is given: narrower, a short JSON body took 7 lines.
FOLD_LEAST = 20


def whole(cell: str) -> list[str]:
    """A cell kept on one line: a figure, an id."""
    return [cell]


def words(cell: str) -> list[str]:
    """A cell that wraps at its spaces: a name with ``(FIFO)``, a header."""
    return cell.split()


def folds(cell: str) -> list[str]:
    """A cell that may fold anywhere (a body, an error), given at least :data:`FOLD_LEAST` columns."""
    return [cell[:FOLD_LEAST]]


def borders(columns: int) -> int:
    """What a rich table's box takes: a space each side of a cell, a rule before each column and after the last."""
    return 3 * columns + 1


def least_width(headers: Sequence[str], rows: Sequence[Sequence[str]], parts: Sequence[Parts]) -> int:
    """The terminal width the table needs at least, its borders included."""
    return sum(_least(headers, rows, parts)) + borders(len(headers))


def widths(
    headers: Sequence[str], rows: Sequence[Sequence[str]], parts: Sequence[Parts], width: int | None
) -> list[int]:
    """Each column's width in a table ``width`` columns wide at most (``None``: as wide as it needs): its least,
    then what it needs on one line, left to right, while the width lasts. At least :func:`least_width`."""
    least = _least(headers, rows, parts)
    natural = [max(len(text) for text in [header, *(row[i] for row in rows)]) for i, header in enumerate(headers)]
    spare = (sum(natural) if width is None else width - borders(len(headers))) - sum(least)
    given = []
    for low, high in zip(least, natural, strict=True):
        grow = min(max(0, spare), max(0, high - low))
        given.append(low + grow)
        spare -= grow
    return given


def _least(headers: Sequence[str], rows: Sequence[Sequence[str]], parts: Sequence[Parts]) -> list[int]:
    return [
        max(len(part) for part in [*words(header), *(p for row in rows for p in split(row[i]))])
        for i, (header, split) in enumerate(zip(headers, parts, strict=True))
    ]


class Fitted:
    """A table where the terminal is at least ``least`` columns wide, else the rows another way: ``table(width)``
    or ``blocks(width)``, picked at each render, so a ``--watch`` follows a resized terminal."""

    def __init__(
        self, least: int, table: Callable[[int], RenderableType], blocks: Callable[[int], RenderableType]
    ) -> None:
        self.least, self.table, self.blocks = least, table, blocks

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        yield self.table(width) if self.least <= width else Trimmed(self.blocks(width))


class Trimmed:
    """``renderable`` with each line ending at its last character: a block's grid pads each cell to its column's
    width, and rich ends a line it wraps at a space with that space; an operator's copy of the line got them."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            yield from without_trailing_blanks(line)
            yield Segment.line()


def without_trailing_blanks(line: list[Segment]) -> list[Segment]:
    """``line`` without the blanks after its last text (:class:`Trimmed`); blanks with a background colour are kept."""
    line = list(line)
    while line and not line[-1].control and not (line[-1].style and line[-1].style.bgcolor):
        text = line[-1].text.rstrip(" ")
        if text:
            line[-1] = Segment(text, line[-1].style)
            break
        line.pop()
    return line
