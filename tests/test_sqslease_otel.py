"""OpenTelemetry: one span per message, linked to the producer's trace context, with the SDK's in-memory exporter.
In the worker (scripted client, then moto_server) and the Lambda adapter."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event, lambda_event
from support.moto_queues import counts, make_queue
from support.waiting import wait_for
from support.worker_threads import LEASES_30S as UNIT
from support.worker_threads import running_worker

from jobqueues.emulator.server import LocalServer
from sqslease.hooks import builtin_hooks
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.otel import OtelHooks, xray_span_context
from sqslease.settings import FailurePolicy, LeaseSettings

ROOT = Path(__file__).resolve().parent.parent
URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
PRODUCER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{PRODUCER_TRACE}-00f067aa0ba902b7-01"
XRAY_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
EXPORTER = InMemorySpanExporter()


class WhileTesting(SimpleSpanProcessor):
    """Exports only while a test of this module runs: the global provider outlives the module (OpenTelemetry
    refuses a second), and the other tests of the process must not pile spans up in memory."""

    enabled = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.enabled:
            super().on_end(span)


PROCESSOR = WhileTesting(EXPORTER)


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    """The global tracer provider (set once per process) exporting to memory during the test."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(PROCESSOR)
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    PROCESSOR.enabled = True
    yield EXPORTER
    PROCESSOR.enabled = False
    EXPORTER.clear()


def message_spans(exporter: InMemorySpanExporter) -> list:
    return [s for s in exporter.get_finished_spans() if s.name.endswith(" process")]


def handler(body: str, message: Message) -> None:
    with trace.get_tracer("job").start_as_current_span("job work"):
        if body == "bad":
            raise ValueError("bad input")


def test_the_worker_makes_one_span_per_message_linked_to_its_producers(spans: InMemorySpanExporter) -> None:
    # GIVEN a message carrying a W3C traceparent and an X-Ray trace header, and one carrying neither that fails
    sqs = FakeSQS(FakeClock())
    sqs.add(
        "good",
        system_attributes={"AWSTraceHeader": XRAY_HEADER},
        message_attributes={"traceparent": {"DataType": "String", "StringValue": TRACEPARENT}},
    )
    sqs.add("bad")
    with running_worker(
        sqs, URL, handler, clock=sqs.clock, failure_policy=FailurePolicy.VISIBLE_NOW, job_type="thumbs", **UNIT
    ):
        assert wait_for(lambda: len(message_spans(spans)) == 2, timeout_s=10)
    by_id = {s.attributes["messaging.message.id"]: s for s in message_spans(spans)}
    good, bad = by_id["m-good"], by_id["m-bad"]
    # THEN each span has the job type, receive count, outcome and extensions, and is CONSUMER on the queue
    assert good.name == "jobs process" and good.kind is trace.SpanKind.CONSUMER
    assert {k: good.attributes[k] for k in ("sqslease.job_type", "sqslease.receive_count", "sqslease.outcome")} == {
        "sqslease.job_type": "thumbs",
        "sqslease.receive_count": 1,
        "sqslease.outcome": "success",
    }
    assert good.attributes["sqslease.lease_extensions"] == 0 and good.attributes["messaging.system"] == "aws_sqs"
    # AND it links to both producer contexts; the failing one has none, an ERROR status and the exception
    assert [format(link.context.trace_id, "032x") for link in good.links] == [
        PRODUCER_TRACE,
        "5759e988bd862e3fe1be46a994272793",
    ]
    assert good.status.status_code is trace.StatusCode.UNSET
    assert bad.links == () and bad.status.status_code is trace.StatusCode.ERROR
    assert bad.attributes["sqslease.outcome"] == "failure" and bad.events[0].name == "exception"
    # AND the handler's own span is a child of its message's span
    work = {s.parent.span_id: s for s in spans.get_finished_spans() if s.name == "job work"}
    assert set(work) == {good.context.span_id, bad.context.span_id}


def test_the_worker_requests_the_trace_attributes_and_links_against_moto(
    local_aws: LocalServer, spans: InMemorySpanExporter
) -> None:
    queues = make_queue(local_aws, vt=30)
    local_aws.client("sqs").send_message(
        QueueUrl=queues.url,
        MessageBody="traced",
        MessageAttributes={"traceparent": {"DataType": "String", "StringValue": TRACEPARENT}},
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": XRAY_HEADER}},
    )
    with running_worker(local_aws, queues.url, handler):
        assert wait_for(lambda: counts(local_aws, queues.url) == (0, 0) and message_spans(spans), timeout_s=20)
    (span,) = message_spans(spans)
    assert span.attributes["sqslease.outcome"] == "success"
    assert [format(link.context.trace_id, "032x") for link in span.links] == [
        PRODUCER_TRACE,
        "5759e988bd862e3fe1be46a994272793",
    ]


def test_the_lambda_adapter_makes_spans_for_sync_async_and_timed_out_records(spans: InMemorySpanExporter) -> None:
    # GIVEN records as Lambda delivers them: trace attributes in camelCase shapes
    event = fake_event(["good", "slow"])
    event["Records"][0]["attributes"]["AWSTraceHeader"] = XRAY_HEADER
    event["Records"][0]["messageAttributes"] = {"traceparent": {"stringValue": TRACEPARENT, "dataType": "String"}}
    unblock = threading.Event()

    async def async_handler(body: str, message: Message) -> None:
        with trace.get_tracer("job").start_as_current_span("job work"):
            if body == "slow":
                await asyncio.sleep(3600)

    settings = LeaseSettings(
        visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW, max_processing_time=0.5
    )
    response = process_event(event, FakeContext(60), async_handler, settings, FakeSQS())
    unblock.set()
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    by_id = {s.attributes["messaging.message.id"]: s for s in message_spans(spans)}
    assert by_id["m0"].attributes["sqslease.outcome"] == "success" and len(by_id["m0"].links) == 2
    timed_out = by_id["m1"]
    assert timed_out.attributes["sqslease.outcome"] == "timed_out"
    assert timed_out.status.status_code is trace.StatusCode.ERROR
    assert timed_out.events[0].attributes["exception.type"] == "sqslease.attempt.HandlerTimeoutError"
    # the coroutine's span is a child of its record's span (the context went with the task), cancelled with it
    work = {s.parent.span_id for s in spans.get_finished_spans() if s.name == "job work"}
    assert work == {by_id["m0"].context.span_id, timed_out.context.span_id}


def test_the_lambda_adapter_links_a_records_xray_header_against_moto(
    local_aws: LocalServer, spans: InMemorySpanExporter
) -> None:
    queues = make_queue(local_aws, vt=30)
    local_aws.client("sqs").send_message(
        QueueUrl=queues.url,
        MessageBody="traced",
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": XRAY_HEADER}},
    )
    event = lambda_event(local_aws, queues.url, vt=30)
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, job_type="traced-jobs")
    response = process_event(event, FakeContext(60), handler, settings, local_aws.client("sqs"), queues.url)
    assert response == {"batchItemFailures": []}
    (span,) = message_spans(spans)
    assert span.attributes["sqslease.job_type"] == "traced-jobs" and span.attributes["sqslease.outcome"] == "success"
    assert [format(link.context.trace_id, "032x") for link in span.links] == ["5759e988bd862e3fe1be46a994272793"]


def test_without_opentelemetry_there_is_no_builtin_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed
    assert importlib.util.find_spec("opentelemetry") is None and builtin_hooks("jobs") == []
    monkeypatch.undo()
    assert [type(h) for h in builtin_hooks("jobs")] == [OtelHooks]


def test_xray_headers_that_name_no_parent_give_no_link() -> None:
    assert xray_span_context("Root=1-5759e988-bd862e3fe1be46a994272793") is None
    assert xray_span_context("garbage") is None
    assert xray_span_context("Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8") is None
    context = xray_span_context(XRAY_HEADER)
    assert context is not None and context.trace_flags.sampled and context.is_remote


def test_the_documented_tracing_setup_hook_gives_a_deployed_consumer_its_tracer_provider(tmp_path: Path) -> None:
    # GIVEN docs/sqslease.md's tracing_setup.py, in a consumer's code, named as its hooks setting (as a construct
    # passes hooks=), in a process of its own (a tracer provider is set once per process)
    from test_docs_examples import python_blocks

    [block] = [b for b in python_blocks(ROOT / "docs" / "sqslease.md") if "# tracing_setup.py" in b.code]
    (tmp_path / "tracing_setup.py").write_text(block.code)
    consumer = (
        "from support.fakes import FakeContext, FakeSQS\n"
        "from support.lambda_events import fake_event\n"
        "from sqslease.lambda_adapter import process_event\n"
        "from sqslease.config import ConsumerConfig\n"
        "environ = {'SQSLEASE_HOOKS': 'tracing_setup:hooks', 'SQSLEASE_JOB_TYPE': 'thumbs'}\n"
        "settings = ConsumerConfig.from_env(environ).lease\n"
        "print(process_event(fake_event(['a']), FakeContext(60), lambda body, message: None, settings, FakeSQS()))\n"
        "import tracing_setup\n"
        "tracing_setup.provider.force_flush()\n"
    )
    paths = [str(tmp_path), str(ROOT / "tests"), *sys.path]
    # WHEN it processes a message
    result = subprocess.run(
        [sys.executable, "-c", consumer],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN the built-in hook's span goes to the provider the module set (its exporter writes stderr)
    assert result.returncode == 0, result.stderr
    assert "'batchItemFailures': []" in result.stdout
    assert '"name": "quick process"' in result.stderr and '"messaging.message.id": "m0"' in result.stderr
    assert '"service.name": "thumbnails"' in result.stderr and '"sqslease.job_type": "thumbs"' in result.stderr
