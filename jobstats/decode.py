"""The cold path's parser: a block of whole log lines -> one column per field of the EMF schema, with msgspec.

Each line is decoded on its own against a msgspec type derived from :data:`jobstats.schema.EMF_SCHEMA` (the same
fields, the same JSON types), which accepts only what Spark's JSON reader reads the same way: a JSON object with
numbers in range for their type (``LongType`` 64 bits, ``IntegerType`` 32), strings for the text fields and
``JobType``. Anything else in any line of the block (text that is not such an object: a CloudWatch export's
timestamp before the brace, a number holding a string, ``NaN``, ``1e400``, a ``JobType`` of another JSON type,
two objects on a line, invalid UTF-8) makes :func:`decode_block` return None, and Spark's reader reads the file
(:mod:`jobstats.scan`): the cold path never decides a case Spark's reader would decide otherwise.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from operator import attrgetter
from typing import Annotated, Any

import msgspec
import numpy as np
from pyspark.sql.types import DataType, DoubleType, IntegerType, LongType, StringType, StructType, VariantType

from jobstats.schema import CORRUPT, EMF_SCHEMA

#: What Spark's reader takes as a blank line (no row): nothing but these characters.
BLANK = b" \t\r"
_RANGES = {LongType(): (-(2**63), 2**63 - 1), IntegerType(): (-(2**31), 2**31 - 1)}


@dataclass(frozen=True)
class Columns:
    """The lines of a block, column by column.

    :param numbers: field path (``_aws.Timestamp``, ``ProcessingTime``, ...) -> float64 values, NaN where the
        line has none (the decoder never yields a NaN of its own: JSON has none). Integers of the schema are exact
        up to 2^53, beyond every bound of :data:`jobstats.rules.BOUNDS`.
    :param text_fields: the paths of the text fields (``JobType``, ``Stack``, ...), in the order of ``distinct``'s
        tuples.
    :param labels: per line, the index in ``distinct`` of its text fields' values.
    :param distinct: each distinct tuple of text values (a value ``str``, or None where the line has none).
    """

    size: int
    numbers: dict[str, np.ndarray]
    text_fields: tuple[str, ...]
    labels: np.ndarray
    distinct: list[tuple[str | None, ...]]

    def texts(self, path: str) -> list[str | None]:
        """The distinct values of the text field ``path``, in the order of ``distinct``."""
        position = self.text_fields.index(path)
        return [values[position] for values in self.distinct]


def _python_type(data_type: DataType, name: str) -> Any:
    if isinstance(data_type, StructType):
        fields = [(f.name, _python_type(f.dataType, f.name) | None, _missing(f.dataType)) for f in data_type.fields]
        return msgspec.defstruct(name, fields, gc=False)
    if data_type in _RANGES:
        low, high = _RANGES[data_type]
        return Annotated[int, msgspec.Meta(ge=low, le=high)]
    if isinstance(data_type, DoubleType):
        return float
    if isinstance(data_type, (StringType, VariantType)):  # a VARIANT job type counts only as a JSON string
        return str
    raise TypeError(f"no decoder for {data_type} ({name})")


def _line_type(schema: StructType) -> Any:
    """The top-level struct, each struct field an object that defaults to an empty one (its fields None) when the
    line has none, so that ``attrgetter("_aws.Timestamp")`` reads every line. A line whose struct field is
    ``null`` is not decoded (Spark's reader reads it)."""
    fields: list[tuple[str, Any, Any]] = []
    for f in schema.fields:
        member = _python_type(f.dataType, f.name)
        if isinstance(f.dataType, StructType):
            fields.append((f.name, member, msgspec.field(default_factory=member)))
        else:
            fields.append((f.name, member | None, _missing(f.dataType)))
    return msgspec.defstruct("EmfLine", fields, gc=False)


def _missing(data_type: DataType) -> float | None:
    """A field's value when its line has none: NaN for a number (a column of numbers then builds without a
    Python list), None for text. A JSON ``null`` decodes to None in either."""
    return None if isinstance(data_type, (StringType, VariantType)) else math.nan


def _leaves(schema: StructType, prefix: str = "") -> list[tuple[str, DataType]]:
    """``(path, type)`` of every field that is not a struct, in schema order."""
    leaves: list[tuple[str, DataType]] = []
    for f in schema.fields:
        if isinstance(f.dataType, StructType):
            leaves.extend(_leaves(f.dataType, f"{prefix}{f.name}."))
        elif f.name != CORRUPT:
            leaves.append((f"{prefix}{f.name}", f.dataType))
    return leaves


_LINE = StructType([f for f in EMF_SCHEMA.fields if f.name != CORRUPT])
_DECODER = msgspec.json.Decoder(_line_type(_LINE))
TEXT_FIELDS = tuple(path for path, t in _leaves(_LINE) if isinstance(t, (StringType, VariantType)))
NUMBER_FIELDS = tuple(path for path, t in _leaves(_LINE) if not isinstance(t, (StringType, VariantType)))
_OPEN, _CLOSE, _NEWLINE = ord("{"), ord("}"), ord("\n")


def decode_block(data: bytes | memoryview) -> Columns | None:
    """Decode every non-blank line of ``data`` (whole lines); None when any line is not one the decoder reads
    exactly as Spark's JSON reader does."""
    lines = _decode_lines(data)
    if lines is None:
        return None
    numbers = {path: _numbers(lines, path) for path in NUMBER_FIELDS}
    texts = zip(*(map(attrgetter(path), lines) for path in TEXT_FIELDS), strict=True)
    index: dict[tuple, int] = {}
    labels = np.fromiter(map(index.setdefault, texts, itertools.count()), dtype=np.int64, count=len(lines))
    labels = np.unique(labels, return_inverse=True)[1].reshape(-1)  # first occurrences in order: dense labels
    return Columns(len(lines), numbers, TEXT_FIELDS, labels, list(index))


def _numbers(lines: list[Any], path: str) -> np.ndarray:
    """The field ``path`` of every line as float64, NaN where a line has none or ``null``."""
    try:
        return np.fromiter(map(attrgetter(path), lines), dtype=np.float64, count=len(lines))
    except TypeError:  # a null (None) in some line: numpy's conversion of a list makes it NaN
        return np.array(list(map(attrgetter(path), lines)), dtype=np.float64)


def _decode_lines(data: bytes | memoryview) -> list[Any] | None:
    """The block's lines decoded, one object per non-blank line; None if a line is not one object.

    A block whose every line starts with ``{`` and ends with ``}`` is decoded in one call: msgspec reads it as a
    stream of values, and one value per line is then certain when there are as many values as lines (a value
    cannot run into the next line: ``}`` followed by ``{`` is not JSON inside an object or array). Any other
    block (blank lines, ``\\r\\n`` ends, spaces around a line) is decoded line by line.
    """
    try:
        count = _objects_per_line(data)
        if count is not None:
            lines = _DECODER.decode_lines(data)
            return lines if len(lines) == count else None
        return [_DECODER.decode(line) for line in bytes(data).split(b"\n") if line.strip(BLANK)]
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


def _objects_per_line(data: bytes | memoryview) -> int | None:
    """The number of lines when every line (``\\n``-separated, none empty) starts with ``{`` and ends with ``}``;
    else None."""
    if not data:
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buffer == _NEWLINE)
    if len(ends) and ends[-1] == len(buffer) - 1:
        ends = ends[:-1]  # the block's final newline ends its last line
        last = len(buffer) - 2
    else:
        last = len(buffer) - 1
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends - 1, [last]))
    if (stops >= starts).all() and (buffer[starts] == _OPEN).all() and (buffer[stops] == _CLOSE).all():
        return len(starts)
    return None
