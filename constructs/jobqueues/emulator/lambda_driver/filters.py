"""Lambda's event filtering for an SQS event source, as the driver applies it: a record that matches none of the
mapping's ``FilterCriteria`` patterns is deleted unprocessed; one that matches any of them is invoked.

An SQS pattern filters on ``body`` only. ``{"body": {...}}`` matches a body that is a JSON object, field by field
(every field must match; a list of matchers matches when any does, and an array value when any element does);
``{"body": [...]}`` matches a body that is not JSON, as a plain string; a body of the other format never matches
(Lambda drops it). Matchers: exact values (string, number, true/false, null), ``prefix``, ``suffix``,
``equals-ignore-case``, ``numeric`` (``=``, ``<``, ``<=``, ``>``, ``>=``, one or two comparisons), ``exists``,
``anything-but`` (a value, a list of values, or ``{"prefix": ...}`` / ``{"suffix": ...}``). Any other operator
(``cidr``, ``wildcard``, ``$or``, ...) is refused when the function is loaded (:class:`UnsupportedFilter`),
never guessed.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from typing import Any

from jobqueues.emulator.lambda_driver.function import DriverError

_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_OPERATORS = frozenset({"prefix", "suffix", "equals-ignore-case", "numeric", "exists", "anything-but"})


class UnsupportedFilter(DriverError):
    """A filter pattern the driver cannot apply as Lambda would: the message names the pattern and the operator."""


def parse_filters(patterns: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """The mapping's patterns, parsed and checked against the subset this module applies."""
    parsed = []
    for pattern in patterns:
        try:
            value = json.loads(pattern)
        except ValueError as error:
            raise UnsupportedFilter(f"filter pattern {pattern!r} is not JSON: {error}") from error
        if not isinstance(value, dict) or set(value) - {"body"}:
            raise UnsupportedFilter(f"filter pattern {pattern!r}: an SQS event source filters on the body key only")
        _check(value.get("body", {}), pattern)
        parsed.append(value)
    return tuple(parsed)


def matches(patterns: Sequence[dict[str, Any]], body: str) -> bool:
    """Whether a record with ``body`` reaches the function: no patterns, or any one of them matches."""
    if not patterns:
        return True
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    is_object = isinstance(document, dict)
    for pattern in patterns:
        rule = pattern.get("body")
        if rule is None:
            return True
        if isinstance(rule, dict) and is_object and _object_matches(rule, document):
            return True
        if isinstance(rule, list) and not is_object and _any_matches(rule, body, present=True):
            return True
    return False


def _check(rule: Any, pattern: str) -> None:
    if isinstance(rule, dict):
        for key, sub in rule.items():
            if key.startswith("$"):
                raise UnsupportedFilter(f"filter pattern {pattern!r}: {key} is not applied by the local driver")
            _check(sub, pattern)
        return
    if not isinstance(rule, list):
        raise UnsupportedFilter(f"filter pattern {pattern!r}: {rule!r} must be a list of matchers or an object")
    for matcher in rule:
        if isinstance(matcher, dict):
            (name, argument), *rest = matcher.items() if matcher else [(None, None)]
            if rest or name not in _OPERATORS:
                raise UnsupportedFilter(f"filter pattern {pattern!r}: {matcher!r} is not applied by the local driver")
            if name == "anything-but" and isinstance(argument, dict) and set(argument) - {"prefix", "suffix"}:
                raise UnsupportedFilter(f"filter pattern {pattern!r}: {matcher!r} is not applied by the local driver")
            if name == "numeric" and not _numeric_ok(argument):
                raise UnsupportedFilter(f"filter pattern {pattern!r}: {matcher!r} is not a numeric comparison")


def _numeric_ok(argument: Any) -> bool:
    pairs = list(zip(argument[::2], argument[1::2], strict=False)) if isinstance(argument, list) else []
    return (
        len(argument) in (2, 4)
        and all(op in _NUMERIC and _is_number(n) for op, n in pairs)
        and len(pairs) * 2 == len(argument)
    )


def _object_matches(rule: dict[str, Any], document: dict[str, Any]) -> bool:
    for key, sub in rule.items():
        present = key in document
        value = document.get(key)
        if isinstance(sub, dict):
            if not (isinstance(value, dict) and _object_matches(sub, value)):
                return False
        elif not _any_matches(sub, value, present):
            return False
    return True


def _any_matches(matchers: list[Any], value: Any, present: bool) -> bool:
    values = value if isinstance(value, list) else [value]
    for matcher in matchers:
        if isinstance(matcher, dict):
            ((name, argument),) = matcher.items()
            if name == "exists":
                if argument is present:
                    return True
            elif present and any(_operator(name, argument, v) for v in values):
                return True
        elif present and any(_equal(matcher, v) for v in values):
            return True
    return False


def _operator(name: str, argument: Any, value: Any) -> bool:
    if name == "numeric":
        if not _is_number(value):
            return False
        comparisons = zip(argument[::2], argument[1::2], strict=True)
        return all(_NUMERIC[op](float(value), float(bound)) for op, bound in comparisons)
    if name == "anything-but":
        if isinstance(argument, dict):
            return not any(_operator(k, v, value) for k, v in argument.items())
        excluded = argument if isinstance(argument, list) else [argument]
        return not any(_equal(e, value) for e in excluded)
    if not isinstance(value, str):
        return False
    if name == "prefix":
        return value.startswith(argument)
    if name == "suffix":
        return value.endswith(argument)
    return bool(value.casefold() == str(argument).casefold())  # equals-ignore-case


def _equal(expected: Any, value: Any) -> bool:
    if _is_number(expected) and _is_number(value):
        return float(expected) == float(value)
    return type(expected) is type(value) and bool(expected == value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
