"""A generic Lambda entry point: ``sqslease.lambda_entry.handler``, configured by environment variables.

A function whose code holds only per-message handlers sets its Lambda handler to
``sqslease.lambda_entry.handler`` (this module ships in the sqslease layer) and names the per-message
function in its configuration's ``handler`` (``SQSLEASE_HANDLER``: ``module.function`` or ``module:function``,
imported from the function's code). The rest of the configuration comes from the other variables
(:meth:`sqslease.config.ConsumerConfig.from_env`). The batch runs through
:func:`sqslease.lambda_adapter.sqs_batch_handler`: partial batch failures, lease extension, the deadline guard.

The per-message handler and the settings are loaded once per process, on the first invocation (Lambda
reuses the process), so a bad handler (or hooks, idempotency key) fails every invocation with the same clear
error, which names the variable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from sqslease.config import SETTINGS, ConsumerConfig
from sqslease.hooks import configured_hooks
from sqslease.idempotency_gate import configured_key
from sqslease.imports import import_object
from sqslease.lambda_adapter import sqs_batch_handler

HANDLER_ENV = SETTINGS["handler"].variable

BatchHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

_batch_handler: BatchHandler | None = None
_lock = threading.Lock()


class EntryConfigurationError(RuntimeError):
    """The configuration names no handler, or one that is not a callable (or bad hooks, a bad key function)."""


def build_handler(environ: Mapping[str, str] | None = None) -> BatchHandler:
    """The Lambda handler ``(event, context) -> {"batchItemFailures": [...]}`` that ``environ`` describes
    (default ``os.environ``)."""
    config = ConsumerConfig.from_env(environ)
    path = (config.handler or "").strip()
    if not path:
        raise EntryConfigurationError(f"{HANDLER_ENV} is not set: name the per-message handler, e.g. thumbs.handle")
    try:
        func = import_object(path)
    except ValueError as error:
        raise EntryConfigurationError(f"{HANDLER_ENV}={path!r}: {error}") from error
    if not callable(func):
        raise EntryConfigurationError(f"{HANDLER_ENV}={path!r} is not callable")
    settings = config.lease
    hooks, key = SETTINGS["hooks"].variable, SETTINGS["idempotency_key"].variable
    try:
        configured_hooks(settings.job_type, settings.hooks)
    except ValueError as error:
        raise EntryConfigurationError(f"{hooks}={','.join(settings.hooks)!r}: {error}") from error
    try:
        configured_key(settings.idempotency_key)  # imported once: every invocation reuses it
    except ValueError as error:
        raise EntryConfigurationError(f"{key}={settings.idempotency_key!r}: {error}") from error
    handler: BatchHandler = sqs_batch_handler(func, settings=settings)
    return handler


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The Lambda entry point: run the batch through the handler the configuration names."""
    global _batch_handler
    with _lock:
        if _batch_handler is None:
            _batch_handler = build_handler()
        batch_handler = _batch_handler
    return batch_handler(event, context)
