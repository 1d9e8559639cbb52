"""How a setting's value is written as text and read back, for the environment and the command line alike: one
rule per kind of field (numbers, booleans, the failure policy, lists of import paths, text).

A kind is a field's annotation without ``| None``: ``"float"``, ``"int"``, ``"bool"``, ``"str"``,
``"FailurePolicy"``, ``"tuple[str, ...]"``. Pure functions, no setting names: those are
:mod:`sqslease.config`'s.
"""

from __future__ import annotations

import math
from enum import Enum

from sqslease.settings import FailurePolicy

#: What a bad value of these kinds should be instead (the end of the error message).
_CHOICES = {"bool": "true or false", "FailurePolicy": ", ".join(p.value for p in FailurePolicy)}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def kind_of(annotation: object) -> str:
    """A field's kind: its annotation (a string, the modules use ``from __future__ import annotations``) without
    ``| None``."""
    return str(annotation).removesuffix(" | None")


def is_list(kind: str) -> bool:
    """A comma-separated list of import paths (``non_retryable``, ``hooks``)."""
    return kind.startswith("tuple")


def to_text(value: object) -> str:
    """``value`` as :func:`from_text` reads it back: ``true``/``false``, ``600`` rather than ``600.0`` (what a
    reader of a template expects), a list joined with commas, an enum's value."""
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def from_text(kind: str, raw: str, source: str) -> object:
    """The value ``raw`` stands for; a ``ValueError`` names ``source`` (an option or a variable), the value and,
    for a closed set of values, what to give instead."""
    try:
        if kind == "bool":
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError(raw)
            return raw.lower() in _TRUE
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "FailurePolicy":
            return FailurePolicy(raw)
        if is_list(kind):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        return raw
    except ValueError as error:
        fix = f": give {_CHOICES[kind]}" if kind in _CHOICES else ""
        raise ValueError(f"{source}={raw!r} is not a valid {kind}{fix}") from error


def unwritable(kind: str, value: object) -> str | None:
    """Why ``value`` could not be written as text and read back the same, or ``None`` when it can: an empty text
    reads as unset, a list item with a comma as two, one with spaces around it without them; a float that is not
    finite is no duration or size."""
    if value is None:
        return None
    if kind == "str" and value == "":
        return "is empty (read as not given): give a value or leave it unset"
    if is_list(kind) and isinstance(value, tuple):
        bad = [item for item in value if not item or "," in item or item != item.strip()]
        if bad:
            return f"has items {bad!r} a comma-separated list cannot hold: give import paths"
    if kind == "float" and isinstance(value, float) and not math.isfinite(value):
        return f"is {value}: give a finite number"
    return None


def metavar(kind: str) -> str:
    """What ``--help`` shows an option takes: its choices, comma-separated paths, or its kind."""
    if kind == "FailurePolicy":
        return "{" + ",".join(p.value for p in FailurePolicy) + "}"
    if is_list(kind):
        return "PATH[,PATH...]"  # non_retryable, hooks: import paths
    return kind.upper()
