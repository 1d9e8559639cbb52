"""Hooks: code called before and after each message, in the worker and the Lambda adapter alike.

What other consumers do with middleware (sqs-consumer's events, AWS.Messaging's middleware, Shoryuken's
middleware chain): tracing, metrics, logging context. A hook object has two methods (subclass :class:`Hooks`,
whose methods do nothing, and override either)::

    class Timing(Hooks):
        def after(self, message, outcome, duration_s, error):
            print(message.message_id, outcome, round(duration_s, 3))

- ``before(message)`` runs on the handler's thread just before the handler, in the message's own context (a
  ``contextvars`` copy, also an ``async def`` handler's): what it makes current (a span, a logging context) the
  handler sees, and it is gone after the message.
- ``after(message, outcome, duration_s, error)`` runs once the message's settle is decided (its delete or
  visibility change queued; in Lambda a success is left for Lambda to delete, and a FIFO failure retried in process
  keeps its lease for the retry): ``outcome`` is its EMF ``Outcome`` (``success``, ``failure``, ``dead_lettered``,
  ``lost``, ``timed_out``), ``duration_s`` the handler's seconds, ``error`` what it raised (a
  :class:`sqslease.attempt.HandlerTimeoutError` for ``timed_out``) or None. After a timeout it runs on the
  thread that timed the handler out, not the handler's.

A hook that raises is logged (with its traceback) and ignored: the handler still runs, the message is settled as
its handler's outcome says, the other hooks are called. Messages released without running (a drain, the Lambda
deadline guard, a FIFO group behind a failure) call no hook, nor do those their idempotency record keeps from
running (``duplicate``, ``in_progress_elsewhere``, ``store_unavailable``). Hooks run in the order given; several
handler threads call them at once, so a hook keeping state must be thread-safe.

With ``opentelemetry-api`` installed a built-in hook, :class:`sqslease.otel.OtelHooks`, is always first.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from sqslease.imports import import_object
from sqslease.message import Message
from sqslease.otel import OtelHooks  # imports no opentelemetry: its hooks do, when made

logger = logging.getLogger("sqslease")


@runtime_checkable
class MessageHooks(Protocol):
    """What the worker and the Lambda adapter call: both methods (see the module docstring)."""

    def before(self, message: Message) -> None: ...

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None: ...


class Hooks:
    """A hook that does nothing: subclass it and override :meth:`before`, :meth:`after` or both."""

    def before(self, message: Message) -> None:
        """Called just before the handler runs ``message``."""

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        """Called once ``message`` is settled: its ``outcome``, the handler's ``duration_s``, what it raised."""


class HookChain:
    """Calls every hook in order; a hook that raises is logged and skipped."""

    def __init__(self, hooks: Iterable[MessageHooks]) -> None:
        self.hooks = tuple(hooks)
        #: Asked once a message, decided once per chain: true while the chain would do nothing for a message, so
        #: that neither ``before`` nor ``after`` is called (four Python calls a message for the built-in
        #: OpenTelemetry hook without a tracer provider, a twentieth of the Lambda adapter's cost a record).
        #: :meth:`sqslease.otel.OtelHooks.idle` when that hook (not a subclass) is the only one; else ``None``.
        only = self.hooks[0] if len(self.hooks) == 1 else None
        self.idle: Callable[[], bool] | None = only.idle if type(only) is OtelHooks else None

    def before(self, message: Message) -> None:
        for hook in self.hooks:
            try:
                hook.before(message)
            except Exception:
                logger.exception("hook %r failed before message %s; ignored", hook, message.message_id)

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        for hook in self.hooks:
            try:
                hook.after(message, outcome, duration_s, error)
            except Exception:
                logger.exception("hook %r failed after message %s; ignored", hook, message.message_id)


def load_hooks(paths: Iterable[str]) -> list[MessageHooks]:
    """The hooks named by import paths (``package.module:name``): an object with ``before`` and ``after``, or a
    class of one (instantiated without arguments). A ``ValueError`` names a path that is neither."""
    loaded: list[MessageHooks] = []
    for path in paths:
        obj = import_object(path)
        if isinstance(obj, type):
            obj = obj()
        if not isinstance(obj, MessageHooks):
            raise ValueError(
                f"hooks entry {path!r} has no before(message) and after(message, outcome, duration_s, error)"
            )
        loaded.append(obj)
    return loaded


@functools.cache
def configured_hooks(job_type: str, paths: tuple[str, ...]) -> tuple[MessageHooks, ...]:
    """The built-in hooks and those ``paths`` name, made once per process (a Lambda invocation reuses them)."""
    return (*builtin_hooks(job_type), *load_hooks(paths))


def builtin_hooks(job_type: str) -> list[MessageHooks]:
    """:class:`sqslease.otel.OtelHooks` when ``opentelemetry-api`` is installed; nothing otherwise."""
    if importlib.util.find_spec("opentelemetry") is None or importlib.util.find_spec("opentelemetry.trace") is None:
        return []
    return [OtelHooks(job_type)]
