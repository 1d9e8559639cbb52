"""OpenTelemetry: one span per message, when ``opentelemetry-api`` is installed (``pip install sqslease[otel]``).

A built-in hook (see :mod:`sqslease.hooks`). The span, ``<queue> process`` of kind CONSUMER, starts just before
the handler and ends once the message is settled; it is current while the handler runs (a plain or an ``async
def`` handler), so the handler's own spans are its children. It is *linked* (not parented: a batch's messages
have many producers) to the producer's trace context when the message carries one: the ``traceparent`` (and
``tracestate``) message attribute of W3C Trace Context, and the ``AWSTraceHeader`` system attribute (X-Ray's
``Root=1-...;Parent=...;Sampled=...``). Attributes: ``messaging.system`` (``aws_sqs``),
``messaging.destination.name`` (the queue), ``messaging.operation.type`` (``process``),
``messaging.message.id``, ``sqslease.job_type``, ``sqslease.receive_count``, ``sqslease.outcome``,
``sqslease.lease_extensions``; a failed, dead-lettered or timed-out message sets the span's status to ERROR and
records the exception.

Spans go wherever the application's tracer provider sends them; while no provider is set (the API alone, or an
SDK not configured yet) the hook does nothing, checked per message, so a provider set later is used. This
module imports ``opentelemetry`` only when :class:`OtelHooks` is created, so
sqslease imports without it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from sqslease.message import Message

#: Outcomes that set the span's status to ERROR.
ERROR_OUTCOMES = frozenset({"failure", "dead_lettered", "timed_out"})


class OtelHooks:
    """One span per message (see the module docstring).

    :param job_type: the ``sqslease.job_type`` attribute (``LeaseSettings.job_type``). Default ``"default"``.
    :param tracer_provider: where spans go. Default: the global provider (``opentelemetry.trace``).
    """

    def __init__(self, job_type: str = "default", tracer_provider: Any = None) -> None:
        from opentelemetry import context, trace

        from sqslease import __version__

        self._trace = trace
        self._context = context
        self._explicit = tracer_provider is not None
        # The API loads a provider this variable names on the first get_tracer_provider() of the process (ours
        # or the application's); it is looked up here once, not per message (an os.environ lookup each time).
        self._provider_from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
        #: Idle while the API's global provider is None (neither set nor loaded): decided once, tested per message.
        self._idle_while_unset = (
            not self._explicit and not self._provider_from_env and hasattr(trace, "_TRACER_PROVIDER")
        )
        self._no_op_providers = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        self._tracer = trace.get_tracer("sqslease", __version__, tracer_provider=tracer_provider)
        self._spans: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.job_type = job_type

    def recording(self) -> bool:
        """Whether spans go anywhere: an explicit provider, or a global one an SDK installed. Without one the API
        gives a no-op tracer; building a span's links and attributes for it would cost every message for nothing.

        Checked per message, so a provider set later is used; cheaply while none is: the API keeps the global
        provider in ``opentelemetry.trace._TRACER_PROVIDER`` (None until one is set or loaded), and
        :func:`opentelemetry.trace.get_tracer_provider` looks ``OTEL_PYTHON_TRACER_PROVIDER`` up in ``os.environ``
        on every call."""
        if self._explicit:
            return True
        if self._idle_while_unset and self._trace._TRACER_PROVIDER is None:
            return False
        return not isinstance(self._trace.get_tracer_provider(), self._no_op_providers)

    def idle(self) -> bool:
        """Whether this hook does nothing for a message now: no provider (:meth:`recording`'s first test). Asked
        once a message by the processor (:attr:`sqslease.hooks.HookChain.idle`), which then calls neither
        :meth:`before` nor :meth:`after`."""
        return self._idle_while_unset and self._trace._TRACER_PROVIDER is None

    def before(self, message: Message) -> None:
        if self._idle_while_unset and self._trace._TRACER_PROVIDER is None:  # idle()'s test: a call less
            return
        if not self.recording():
            return
        queue = message.queue_url.rstrip("/").rsplit("/", 1)[-1]
        span = self._tracer.start_span(
            f"{queue} process",
            kind=self._trace.SpanKind.CONSUMER,
            links=producer_links(message),
            attributes={
                "messaging.system": "aws_sqs",
                "messaging.destination.name": queue,
                "messaging.operation.type": "process",
                "messaging.message.id": message.message_id,
                "sqslease.job_type": self.job_type,
                "sqslease.receive_count": message.receive_count,
            },
        )
        with self._lock:
            self._spans[id(message)] = span
        # Current for the handler; never detached: it lives in the message's own context copy (sqslease.hooks).
        self._context.attach(self._trace.set_span_in_context(span))

    def after(self, message: Message, outcome: str, duration_s: float, error: BaseException | None) -> None:
        if not self._spans:  # no span started (none recording): its before() stored it on this thread, or none
            return
        with self._lock:
            span = self._spans.pop(id(message), None)
        if span is None:
            return
        span.set_attribute("sqslease.outcome", outcome)
        span.set_attribute("sqslease.lease_extensions", message.lease.extensions)
        if outcome in ERROR_OUTCOMES:
            if error is not None:
                span.record_exception(error)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, outcome))
        span.end()


def producer_links(message: Message) -> list[Any]:
    """Links to the trace contexts the message carries: ``traceparent`` first, then ``AWSTraceHeader``."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    links = []
    carrier = {
        name: value["StringValue"]
        for name, value in message.message_attributes.items()
        if name in ("traceparent", "tracestate") and isinstance(value, dict) and "StringValue" in value
    }
    if "traceparent" in carrier:
        extracted = trace.get_current_span(TraceContextTextMapPropagator().extract(carrier)).get_span_context()
        if extracted.is_valid:
            links.append(trace.Link(extracted))
    xray = xray_span_context(message.attributes.get("AWSTraceHeader", ""))
    if xray is not None:
        links.append(trace.Link(xray))
    return links


def xray_span_context(header: str) -> Any:
    """The span context of an X-Ray trace header (``Root=1-5759e988-bd862e3fe1be46a994272793;
    Parent=53995c3f42cd8ad8;Sampled=1``), or None when it names no root and parent."""
    from opentelemetry import trace

    fields = dict(part.strip().partition("=")[::2] for part in header.split(";") if "=" in part)
    root, parent = fields.get("Root", "").split("-"), fields.get("Parent", "")
    try:
        if len(root) != 3 or root[0] != "1" or len(parent) != 16:
            return None
        span_context = trace.SpanContext(
            trace_id=int(root[1] + root[2], 16),
            span_id=int(parent, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED if fields.get("Sampled") == "1" else 0),
        )
    except ValueError:
        return None
    return span_context if span_context.is_valid else None
