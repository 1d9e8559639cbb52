"""A duration as the stack code that declares it (``Duration.minutes(50)``): how ``jobqueues drift`` writes every
``Duration`` it suggests."""

from __future__ import annotations

import math

#: CDK's ``Duration`` factories, largest first, with their length in milliseconds.
_DURATION_UNITS = (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000), ("seconds", 1000), ("millis", 1))


def duration_code(seconds: float) -> str:
    """``seconds`` (rounded up to a whole millisecond) as the stack code that declares it, in its largest whole
    unit: ``Duration.minutes(50)``, ``Duration.seconds(90)``, ``Duration.millis(383)``."""
    millis = math.ceil(round(seconds * 1000, 6))
    name, size = next((n, s) for n, s in _DURATION_UNITS if s == 1 or (millis >= s and millis % s == 0))
    return f"Duration.{name}({millis // size})"
