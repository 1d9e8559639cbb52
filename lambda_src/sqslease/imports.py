"""Objects named by import paths (``package.module:name``): handlers, hooks, non-retryable exception types."""

from __future__ import annotations

import importlib
from typing import Any


def import_object(path: str) -> Any:
    """``package.module:attribute`` (or ``package.module.attribute``) -> the object."""
    module_name, _, attribute = path.partition(":") if ":" in path else path.rpartition(".")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not an import path like 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r} (from {path!r}): {error}") from error
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise ValueError(f"{module_name!r} has no attribute {attribute!r} (from {path!r})") from error


def resolve_exceptions(paths: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    types = []
    for path in paths:
        obj = import_object(path)
        if not (isinstance(obj, type) and issubclass(obj, BaseException)):
            raise ValueError(f"non_retryable entry {path!r} is not an exception type")
        types.append(obj)
    return tuple(types)
