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
    """The lines of a block, one entry per line in each column.

    :param numbers: field path (``_aws.Timestamp``, ``ProcessingTime``, ...) -> float64 values, NaN where the
        line has none (the decoder never yields a NaN of its own: JSON has none). Integers of the schema are exact
        up to 2^53, beyond every bound of :data:`jobstats.rules.BOUNDS`.
    :param texts: field path -> the values (``str``, or None where the line has none).
    """

    size: int
    numbers: dict[str, np.ndarray]
    texts: dict[str, list[str | None]]


def _python_type(data_type: DataType, name: str) -> Any:
    if isinstance(data_type, StructType):
        return msgspec.defstruct(name, [(f.name, _python_type(f.dataType, f.name) | None, None) for f in data_type.fields], gc=False)
    if data_type in _RANGES:
        low, high = _RANGES[data_type]
        return Annotated[int, msgspec.Meta(ge=low, le=high)]
    if isinstance(data_type, DoubleType):
        return float
    if isinstance(data_type, (StringType, VariantType)):  # a VARIANT job type counts only as a JSON string
        return str
    raise TypeError(f"no decoder for {data_type} ({name})")


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
_DECODE = msgspec.json.Decoder(_python_type(_LINE, "EmfLine")).decode
_LEAVES = _leaves(_LINE)


def decode_block(data: bytes) -> Columns | None:
    """Decode every non-blank line of ``data`` (whole lines, ``\\n`` or ``\\r\\n`` ended); None when any line is
    not one the decoder reads exactly as Spark's JSON reader does."""
    try:
        lines = list(map(_DECODE, filter(None, data.split(b"\n"))))
    except (msgspec.DecodeError, UnicodeDecodeError):  # maybe only blank lines of spaces: check line by line
        try:
            lines = [_DECODE(line) for line in data.split(b"\n") if line.strip(BLANK)]
        except (msgspec.DecodeError, UnicodeDecodeError):
            return None
    numbers: dict[str, np.ndarray] = {}
    texts: dict[str, list[str | None]] = {}
    for path, data_type in _LEAVES:
        values = _values(lines, path)
        if isinstance(data_type, (StringType, VariantType)):
            texts[path] = values
        else:
            numbers[path] = np.array(values, dtype=np.float64)  # None -> NaN
    return Columns(len(lines), numbers, texts)


def _values(lines: list[Any], path: str) -> list[Any]:
    parent, _, name = path.rpartition(".")
    if not parent:
        return list(map(attrgetter(name), lines))
    get = attrgetter(name)
    return [None if outer is None else get(outer) for outer in map(attrgetter(parent), lines)]
