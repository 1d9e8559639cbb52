"""Props checked where they enter: each has the type it should, or an error names it, its value and the fix.

A type checker catches most of these in user code (:mod:`jobqueues.props`); this catches them at synth for
everyone else, before jsii turns them into an unreadable struct error or ``'int' object has no attribute
'to_seconds'``. ``Duration`` props become seconds here (any unit, milliseconds too); unresolved tokens are
recorded, never checked (see :mod:`jobqueues.declaration`).
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import sys
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from aws_cdk import Duration, Size, SizeRoundingBehavior, Token


class PropReader:
    """Reads one construct's props, collecting every type error instead of stopping at the first.

    :param props: the keyword arguments the user passed.
    :param known: every prop name the construct takes; any other name is an error with a suggestion.
    :param prefix: how the props are spelled in messages, e.g. ``"alarms."``. Default: none.
    :param labels: how a prop is spelled where the user wrote it, when that differs (``lambda_timeout`` is a
        ``LambdaJob``'s ``timeout``). Default: none.
    """

    def __init__(
        self, props: Mapping[str, Any], known: Iterable[str], prefix: str = "", labels: Mapping[str, str] | None = None
    ) -> None:
        self.props = props
        self.prefix = prefix
        self.labels = labels or {}
        self.errors: list[str] = []
        #: Props given as unresolved tokens (not checked at synth).
        self.tokens: set[str] = set()
        #: Props given with a value of the wrong type or unit (their errors say so; not reported missing too).
        self.refused: set[str] = set()
        known = list(known)
        for name in props:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]}?" if close else f"the props are: {', '.join(sorted(known))}"
                self.errors.append(f"unknown prop {prefix}{name}: {hint}")

    def _label(self, prop: str) -> str:
        return f"{self.prefix}{self.labels.get(prop, prop)}"

    def _wrong(self, prop: str, value: object, expected: str, fix: str) -> None:
        self.refuse(prop, f"{self._label(prop)}={value!r} is {a_type(type(value))}, not {expected}: pass {fix}")

    def refuse(self, prop: str, error: str) -> None:
        """Record ``error`` about the value given for ``prop``."""
        self.errors.append(error)
        self.refused.add(prop)

    def _given(self, prop: str) -> object:
        """The prop's value; ``None`` when absent, or an unresolved token (recorded in :attr:`tokens`)."""
        value = self.props.get(prop)
        if is_token(value):
            self.tokens.add(prop)
            return None
        return value

    def duration_s(self, prop: str) -> float | None:
        """Seconds of a ``Duration`` prop (fractions kept); ``None`` when absent, wrong or a token."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, Duration):
            self._wrong(prop, value, a_type(Duration), f"a Duration, e.g. {_duration_example(value)}")
            return None
        seconds = value.to_seconds(integral=False)
        if is_token(seconds):
            self.tokens.add(prop)
            return None
        return float(seconds)

    def whole_seconds(self, prop: str, why: str) -> float | None:
        """Seconds of a ``Duration`` that AWS takes in whole seconds only: a fraction is an error saying so."""
        seconds = self.duration_s(prop)
        if seconds is not None and not float(seconds).is_integer():
            self.refuse(
                prop,
                f"{self._label(prop)} is {seconds:g} s: {why} takes whole seconds; pass "
                f"Duration.seconds({math.ceil(seconds)})",
            )
            return None
        return seconds

    def size_bytes(self, prop: str) -> int | None:
        """Bytes of a ``Size`` prop (any unit); ``None`` when absent, wrong or a token. A fraction of a byte is an
        error: SQS takes whole bytes."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, Size):
            self._wrong(prop, value, a_type(Size), f"a Size, e.g. {_size_example(value)}")
            return None
        size = value.to_bytes(rounding=SizeRoundingBehavior.NONE)
        if is_token(size):
            self.tokens.add(prop)
            return None
        if not float(size).is_integer():
            self.refuse(prop, f"{self._label(prop)} is {size:g} bytes: SQS takes whole bytes; pass Size.bytes(N)")
            return None
        return int(size)

    def member(self, prop: str, kind: type[Enum], example: str) -> str | None:
        """The name of an enum prop's member (``"RETAIN"``); ``None`` when absent or wrong."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, kind):
            self._wrong(prop, value, f"{a_type(kind)} member", f"e.g. {example}")
            return None
        return value.name

    def boolean(self, prop: str, default: bool) -> bool:
        """A ``bool`` prop: ``"false"`` or ``1`` are errors, not truthy values."""
        value = self.props.get(prop, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self._wrong(prop, value, "a bool", "True or False")
            return default
        return value

    def integer(self, prop: str, example: int) -> int | None:
        """A whole-number prop (``True`` and ``2.5`` are errors); ``None`` when absent, wrong or a token."""
        value = self._given(prop)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(prop, value, "a whole number", f"an int, e.g. {example}")
            return None
        return value

    def number(self, prop: str, example: float) -> float | None:
        """A real-number prop; ``None`` when absent, wrong or a token."""
        value = self._given(prop)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self._wrong(prop, value, "a finite number", f"a number, e.g. {example}")
            return None
        return float(value)

    def string(self, prop: str) -> str | None:
        """A ``str`` prop; ``None`` when absent, wrong or a token."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, str):
            self._wrong(prop, value, "a str", "a str")
            return None
        if is_token(value):
            self.tokens.add(prop)
            return None
        return value

    def instance(self, prop: str, kind: type | tuple[type, ...], fix: str) -> Any:
        """A prop of a given class, or of one of several (checked with ``isinstance``); ``None`` when absent or
        wrong."""
        value = self.props.get(prop)
        if value is not None and not isinstance(value, kind):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            self._wrong(prop, value, " or ".join(a_type(k) for k in kinds), fix)
            return None
        return value

    def having(self, prop: str, attribute: str, fix: str) -> Any:
        """A prop that must be a construct interface (jsii interfaces cannot be checked with ``isinstance``)."""
        value = self.props.get(prop)
        if value is not None and not hasattr(value, attribute):
            self._wrong(prop, value, f"a construct with {attribute}", fix)
            return None
        return value

    def mapping(self, prop: str, kind: type, fix: str) -> dict[str, Any] | None:
        """A mapping of ``str`` to ``kind`` (checked with ``isinstance``); ``None`` when absent or wrong, each
        wrong key or value named."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self._wrong(prop, value, "a mapping", fix)
            return None
        wrong = [
            f"{self._label(prop)}[{k!r}]={v!r} is {a_type(type(v))}, not {a_type(kind)}: pass {fix}"
            for k, v in value.items()
            if not isinstance(v, kind)
        ]
        wrong += [f"{self._label(prop)} key {k!r} is not a str: pass {fix}" for k in value if not isinstance(k, str)]
        self.errors += wrong
        return None if wrong else dict(value)

    def sequence(self, prop: str, kind: type | None, attribute: str, fix: str) -> list[Any] | None:
        """A list (or tuple) of ``kind`` (``isinstance``), or of constructs with ``attribute`` when ``kind`` is
        ``None`` (a jsii interface); ``None`` when absent or wrong, each wrong item named."""
        value = self.props.get(prop)
        if value is None:
            return None
        if not isinstance(value, list | tuple):
            self._wrong(prop, value, "a list", fix)
            return None
        wrong = [
            f"{self._label(prop)}[{i}]={item!r} is {a_type(type(item))}, not "
            f"{a_type(kind) if kind is not None else f'a construct with {attribute}'}: pass {fix}"
            for i, item in enumerate(value)
            if not (isinstance(item, kind) if kind is not None else hasattr(item, attribute))
        ]
        self.errors += wrong
        return None if wrong else list(value)


def is_token(value: object) -> bool:
    """Token check without a round-trip to the CDK's Node kernel for plainly resolved values.

    Number tokens are encoded as huge negative doubles; string tokens contain ``${Token[``.
    """
    if isinstance(value, str):
        return "${Token[" in value
    if isinstance(value, float) and abs(value) > 1e288:
        return bool(Token.is_unresolved(value))
    return False


def _duration_example(value: object) -> str:
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        if float(value).is_integer():
            return f"Duration.seconds({int(value)})"
        return f"Duration.millis({round(value * 1000)})"
    return "Duration.seconds(90)"


def _size_example(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"Size.bytes({value})" if value % 1024 else f"Size.kibibytes({value // 1024})"
    return "Size.kibibytes(256)"


def type_name(kind: type) -> str:
    """How an error names a type: a builtin by its name (``int``), any other with the module it is imported from
    (``aws_cdk.aws_lambda.ProvisionedPollerConfig``), so that two classes of one name are told apart. The module
    is the shortest one that exports the class (``jobqueues.JobQueueAlarmProps``, not ``jobqueues.alarms``)."""
    module = getattr(kind, "__module__", "builtins")
    if module == "builtins":
        return kind.__name__
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        if getattr(sys.modules.get(prefix), kind.__name__, None) is kind:
            return f"{prefix}.{kind.__name__}"
    return f"{module}.{kind.__qualname__}"


def a_type(kind: type) -> str:
    """:func:`type_name` with its article: ``an int``, ``an aws_cdk.Duration``."""
    return _a(type_name(kind))


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
