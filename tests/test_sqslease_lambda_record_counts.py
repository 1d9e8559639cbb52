"""What the Lambda adapter does per record and per invocation, pinned as counts (the timings are in
``bench/runtime_bench.py``): what one invocation built is not built again by the next (the line templates, the
configured queue URL's check, the renewal's request slots), a record without a ``max_processing_time`` is run
without a per-record choice of thread, the renewal's stats are summed only for their debug line, and a record's
``Message`` has no ``__dict__``. And the text the faster line is: ``record``'s, character for character."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import random
import re
import subprocess
import sys
import threading
import urllib.parse
import weakref
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from support.emf import outcomes, read_emf
from support.fakes import FakeClock, FakeContext, FakeSQS
from support.lambda_events import fake_event

from sqslease import emf_writer, lambda_adapter, lambda_batch
from sqslease import hooks as hooks_module
from sqslease.emf import EmfLogger
from sqslease.emf_text import line_template, line_text, millis
from sqslease.emf_writer import LineWriter
from sqslease.heartbeat import Heartbeat
from sqslease.heartbeat_round import TickStats
from sqslease.hooks import HookChain
from sqslease.hung_records import RecordsHungError
from sqslease.invocation import QUEUE_URL_ENV
from sqslease.lease import Lease
from sqslease.lease_table import LeaseScheduler
from sqslease.message import Message
from sqslease.otel import OtelHooks
from sqslease.process_result import ProcessResult
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.settle import Settler

FUNCTION_TIMEOUT_S = 30
TESTS = Path(__file__).resolve().parent
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/quick"  # the queue fake_event's ARN names


def noop(body: str, message: Message) -> None:
    return None


def invoke(settings: LeaseSettings, stream: io.StringIO, records: int = 10, sqs: Any = None) -> dict[str, Any]:
    return lambda_adapter.process_event(
        fake_event([f"r{i}" for i in range(records)]),
        FakeContext(FUNCTION_TIMEOUT_S),
        noop,
        settings,
        sqs or FakeSQS(),
        emf=EmfLogger(stream),
    )


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Counts the calls of ``owner.name`` (a function or a class) while the test runs."""
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_second_invocation_builds_no_line_template_and_parses_no_configured_queue_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the construct's queue URL configured, and a first invocation of the consumer
    monkeypatch.setenv(QUEUE_URL_ENV, QUEUE_URL)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="CountedTemplates")
    stream = io.StringIO()
    assert invoke(settings, stream) == {"batchItemFailures": []}
    templates = counting(monkeypatch, EmfLogger, "_template")
    parsed = counting(monkeypatch, urllib.parse, "urlsplit")
    # WHEN a second invocation runs 10 records
    assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN its lines took the first one's templates, and the configured URL was not parsed again
    assert templates == [] and parsed == []
    assert [line["Outcome"] for line in read_emf(stream)] == ["success"] * 20


def test_records_without_a_max_processing_time_run_inline_without_a_choice_per_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    chosen = counting(monkeypatch, lambda_batch, "run_record")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs without a max_processing_time
    assert invoke(LeaseSettings(visibility_timeout=180, heartbeat=False), stream) == {"batchItemFailures": []}
    # THEN each ran on the invocation's thread (its line written) and none asked where to run
    assert chosen == [] and set(outcomes(stream).values()) == {"success"} and len(outcomes(stream)) == 10
    # a max_processing_time shorter than the invocation still hands each record to a spare thread, asked per record
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, max_processing_time=5)
    assert invoke(settings, io.StringIO(), records=3) == {"batchItemFailures": []}
    assert chosen == [1, 1, 1]


@pytest.mark.parametrize("debug", [False, True])
def test_the_renewal_sums_its_rounds_stats_only_for_its_debug_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    caplog.set_level(logging.DEBUG if debug else logging.INFO, logger="sqslease")
    summed = counting(monkeypatch, TickStats, "add")
    sqs = FakeSQS()
    # WHEN an invocation with lease extension renews its 10 leases
    assert invoke(LeaseSettings(visibility_timeout=40, heartbeat=True), io.StringIO(), sqs=sqs) == {
        "batchItemFailures": []
    }
    # THEN they were renewed in one request; the stats were summed only where the debug line is written
    assert len(sqs.of("ChangeMessageVisibilityBatch")) == 1
    renewed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("renewed")]
    assert renewed == (["renewed 10 of 10 leases (1 requests)"] if debug else [])
    assert (summed != []) == debug


def test_the_invocations_of_a_process_share_their_renewals_request_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=40, heartbeat=True)
    invoke(settings, io.StringIO())  # the process's first invocation makes them
    made = counting(monkeypatch, threading, "BoundedSemaphore")
    # WHEN three more invocations renew their leases
    for _ in range(3):
        assert invoke(settings, io.StringIO()) == {"batchItemFailures": []}
    # THEN none made a semaphore of its own
    assert made == []


def test_an_invocation_without_lease_extension_files_its_leases_in_no_lease_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False)
    invoke(settings, io.StringIO())  # the process's first invocation
    tables = counting(monkeypatch, LeaseScheduler, "__init__")
    filed = counting(monkeypatch, LeaseScheduler, "add_all")
    stream = io.StringIO()
    # WHEN three more invocations of 10 records run without lease extension
    for _ in range(3):
        assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN none built a lease table or filed a lease in one (nothing renews them), and every record ran
    assert tables == [] and filed == []
    assert [line["Outcome"] for line in read_emf(stream)] == ["success"] * 30


def test_a_renewal_sqs_grants_in_one_request_builds_no_lease_table_heartbeat_or_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a consumer with lease extension whose leases outlast the invocation (40 s, 30 s invocations)
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=40, heartbeat=True)
    invoke(settings, io.StringIO())  # the process's first invocation
    tables = counting(monkeypatch, LeaseScheduler, "__init__")
    heartbeats = counting(monkeypatch, Heartbeat, "__init__")
    rounds = counting(monkeypatch, Heartbeat, "_round")
    sqs, stream = FakeSQS(), io.StringIO()
    # WHEN three invocations of 10 records run, SQS renewing every lease
    for _ in range(3):
        assert invoke(settings, stream, sqs=sqs) == {"batchItemFailures": []}
    # THEN each renewed its 10 leases in one request to 40 s before its records ran, without a lease table, a
    # heartbeat or a round
    assert tables == [] and heartbeats == [] and rounds == []
    renewals = sqs.of("ChangeMessageVisibilityBatch")
    assert [len(entries) for _, _, entries in renewals] == [10] * 3
    assert {e["VisibilityTimeout"] for _, _, entries in renewals for e in entries} == {40}
    assert [(line["Outcome"], line["Extensions"]) for line in read_emf(stream)] == [("success", 1)] * 30


def test_an_invocation_without_lease_extension_still_releases_a_failed_record() -> None:
    # GIVEN a consumer without lease extension whose handler fails one record of three (failure policy: visible now)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
    sqs = FakeSQS()

    def fails_r1(body: str, message: Message) -> None:
        if body == "r1":
            raise ValueError("bad record")

    # WHEN it runs twice (the second time without a lease table of its own either)
    for _ in range(2):
        response = lambda_adapter.process_event(
            fake_event(["r0", "r1", "r2"]),
            FakeContext(FUNCTION_TIMEOUT_S),
            fails_r1,
            settings,
            sqs,
            emf=EmfLogger(io.StringIO()),
        )
        # THEN the failed record is reported and released at once, its lease settled through the settle protocol
        assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch")] == ["rh-1", "rh-1"]
    assert all(e["VisibilityTimeout"] == 0 for e in sqs.entries("ChangeMessageVisibilityBatch"))


def test_a_second_invocation_of_a_consumer_builds_no_processor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
    sqs, stream = FakeSQS(), io.StringIO()
    emf = EmfLogger(stream)
    bodies: list[str] = []

    def handler(body: str, message: Message) -> None:
        bodies.append(body)
        if body == "fail":
            raise ValueError("bad record")

    def run(records: list[str]) -> dict[str, Any]:
        return lambda_adapter.process_event(
            fake_event(records), FakeContext(FUNCTION_TIMEOUT_S), handler, settings, sqs, emf=emf
        )

    assert run(["a", "b"]) == {"batchItemFailures": []}  # the process's first invocation builds it
    built = counting(monkeypatch, lambda_batch, "ConsumerProcessor")
    # WHEN three more invocations of the same consumer run, the last with a failing record
    assert run(["c", "d"]) == {"batchItemFailures": []}
    assert run(["e"]) == {"batchItemFailures": []}
    assert run(["g", "fail"]) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    # THEN none built a processor: each took the one the invocation before handed back, with its own settler (the
    # failed record released by the third's: a closed settler sends nothing)
    assert built == []
    assert bodies == ["a", "b", "c", "d", "e", "g", "fail"]
    assert [line["Outcome"] for line in read_emf(stream)] == ["success"] * 6 + ["failure"]
    assert [e["ReceiptHandle"] for e in sqs.entries("ChangeMessageVisibilityBatch")] == ["rh-1"]
    # another consumer's invocation (another handler) builds its own
    lambda_adapter.process_event(fake_event(["x"]), FakeContext(FUNCTION_TIMEOUT_S), noop, settings, sqs, emf=emf)
    assert built == [1]


def test_a_processor_taken_again_writes_its_lines_to_the_stdout_of_its_invocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    entry = lambda_adapter.sqs_batch_handler(noop, settings=LeaseSettings(visibility_timeout=180), sqs=FakeSQS())
    first, second = io.StringIO(), io.StringIO()
    # WHEN the entry point (no EmfLogger of its own: stdout) runs twice, stdout swapped between the two
    for stdout, body in ((first, "a"), (second, "b")):
        with contextlib.redirect_stdout(stdout):
            assert entry(fake_event([body]), FakeContext(FUNCTION_TIMEOUT_S)) == {"batchItemFailures": []}
    # THEN each invocation's line went to the stdout it ran with
    assert [len(read_emf(stream)) for stream in (first, second)] == [1, 1]


def test_the_processor_of_an_invocation_whose_handler_hung_is_not_taken_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a consumer whose records run on a spare thread (max_processing_time 50 s of 60 s invocations, on a fake
    # clock), its invocations sharing their arguments so that the next may take the last one's processor
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=120, max_processing_time=50)
    clock, unblock = FakeClock(), threading.Event()
    sqs, emf = FakeSQS(clock), EmfLogger(io.StringIO())
    ran: list[str] = []

    def handler(body: str, message: Message) -> None:
        ran.append(body)
        if body == "hang":
            clock.sleep(56)  # 4 s left, below the 5 s deadline margin: timed out, and still running at the end
            unblock.wait(30)

    def run(body: str) -> dict[str, Any]:
        return lambda_adapter.process_event(fake_event([body]), FakeContext(60, clock), handler, settings, sqs, emf=emf)

    try:
        assert run("ok") == {"batchItemFailures": []}
        built = counting(monkeypatch, lambda_batch, "ConsumerProcessor")
        # WHEN an invocation's handler hangs (its thread may still settle through its processor), then another runs
        with pytest.raises(RecordsHungError):
            run("hang")
        assert run("after") == {"batchItemFailures": []}
    finally:
        unblock.set()
    # THEN the hung one took the first one's processor, and the next built its own
    assert built == [1] and ran == ["ok", "hang", "after"]


def test_a_records_message_has_no_dict_of_its_own() -> None:
    message = Message("m1", "rh-1", "body", QUEUE_URL, lease=None)  # type: ignore[arg-type]
    assert not hasattr(message, "__dict__")
    with pytest.raises(AttributeError):
        message.extra = 1  # type: ignore[attr-defined]


def test_the_leases_of_one_receive_go_into_their_slot_at_once_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    scheduler = LeaseScheduler(extension_threshold=5, pull_forward=10)
    looked_up = counting(monkeypatch, scheduler, "_schedule")
    # WHEN an invocation's 10 leases are added (one receive: one deadline)
    leases = scheduler.add_all([f"rh-{i}" for i in range(10)], 100.0, 40)
    # THEN their slot was looked up once, and they come due together, in order
    assert looked_up == [1]
    assert scheduler.take_due(140.0) == leases and [scheduler.get(f"rh-{i}") for i in range(10)] == leases


def test_a_lines_times_formatted_inline_are_what_json_writes_of_their_rounded_value() -> None:
    # GIVEN times as a handler's and a queue's are (floats not below 0), edge cases, and the ints and negatives
    # that take millis_text's own path
    rng = random.Random(28)
    values: list[float] = [0.0, -0.0, 0.0005, 0.0015, 1e-9, 1.5, 2.0, 123456789.1234, 999_999_999_999.9, 0, 7, -1.5]
    values += [rng.uniform(0, 1e4) for _ in range(10_000)] + [rng.expovariate(1) for _ in range(10_000)]
    head, middle = line_template([], "Times", None, "q", "success", 1)
    for value in values:
        # WHEN a line is formatted with it as its processing time and its queue time
        text = line_text(1, head, "m", value, middle, 1, 0, False, value)
        # THEN both are the text json.dumps writes of the rounded value
        expected = json.dumps(millis(value))
        assert f'"ProcessingTime":{expected},"Outcome"' in text and text.endswith(f'"QueueTime":{expected}}}\n'), value


@pytest.mark.parametrize("stack", [None, "Dev-Counted"])
def test_a_consumers_line_is_record_s_text_character_for_character(stack: str | None) -> None:
    # GIVEN a consumer's writer, and lines with and without a queue time and a group (one to escape)
    cases: list[tuple[str, float, str, bool, float | None, str | None]] = [
        ("m-1", 12.3456, "success", False, 80.25, None),
        ("m-2", 0.0, "success", False, None, "tenant-a"),
        ("m-\u00e9", 7.0, "failure", True, 0.0005, 'ten"ant\u00e9'),
        ("m-4", 0, "released", False, None, None),
    ]
    written, recorded = io.StringIO(), io.StringIO()
    writer = LineWriter(EmfLogger(written), "Counted", "q", stack)
    for message_id, processing_ms, outcome, lost, queue_ms, group in cases:
        # WHEN the writer writes each, and record() the same line
        writer.emit(message_id, processing_ms, outcome, 3, 1, lost, None, queue_ms, group)
        EmfLogger(recorded).record(
            job_type="Counted",
            queue="q",
            message_id=message_id,
            processing_ms=processing_ms,
            outcome=outcome,
            receive_count=3,
            extensions=1,
            lease_lost=lost,
            queue_ms=queue_ms,
            stack=stack,
            group=group,
            timestamp_ms=1,
        )
    # THEN the texts are the same, but for the timestamp
    ours = [re.sub(r'"Timestamp":\d+', '"Timestamp":1', line) for line in written.getvalue().splitlines()]
    assert ours == recorded.getvalue().splitlines() and len(ours) == len(cases)


def test_a_record_without_a_tracer_provider_asks_the_opentelemetry_hook_nothing_but_one_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN no global tracer provider and none named by the environment (the built-in hook idle)
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    asked = counting(monkeypatch, OtelHooks, "recording")
    hook = OtelHooks("Idle")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs with it
    assert lambda_adapter.process_event(
        fake_event([f"r{i}" for i in range(10)]),
        FakeContext(FUNCTION_TIMEOUT_S),
        noop,
        LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="IdleOtel"),
        FakeSQS(),
        emf=EmfLogger(stream),
        hooks=[hook],
    ) == {"batchItemFailures": []}
    # THEN no record called recording() (its first test is made inline), and no span was started
    assert asked == [] and hook._spans == {} and len(read_emf(stream)) == 10


def test_a_consumer_without_hooks_calls_no_hook_chain_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a consumer with no hook at all (no built-in one: opentelemetry taken as not installed)
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    monkeypatch.setattr(hooks_module, "builtin_hooks", lambda job_type: [])
    before, after = counting(monkeypatch, HookChain, "before"), counting(monkeypatch, HookChain, "after")
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="Unhooked")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs
    assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN whether to call hooks was decided once for the consumer: no record called the empty chain
    assert before == [] and after == [] and len(read_emf(stream)) == 10


def test_a_record_reads_its_receive_count_once_and_builds_its_result_without_a_python_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="CountedRecords")
    invoke(settings, io.StringIO())  # the process's first invocation
    read_sqs_count = counting_property(monkeypatch, Message, "sqs_receive_count")
    results = counting(monkeypatch, ProcessResult, "__new__")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs
    assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN no record read ApproximateReceiveCount through a second property, nor built its ProcessResult through
    # the named tuple's __new__ (a Python call each); every line still counts its receive
    assert read_sqs_count == [] and results == []
    assert [line["ReceiveCount"] for line in read_emf(stream)] == [1] * 10


def counting_property(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Counts the reads of the property ``owner.name`` while the test runs."""
    reads: list[int] = []
    real = getattr(owner, name)

    def read(instance: Any) -> Any:
        reads.append(1)
        return real.fget(instance)

    monkeypatch.setattr(owner, name, property(read))
    return reads


def test_a_records_usual_line_is_formatted_and_written_without_a_python_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a consumer whose first invocation kept its line templates (lines with a queue time and a group)
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="CountedLines")
    event = fake_event([f"r{i}" for i in range(10)], groups=['ten"ant'] * 10)
    first = io.StringIO()
    lambda_adapter.process_event(
        event, FakeContext(FUNCTION_TIMEOUT_S), noop, settings, FakeSQS(), emf=EmfLogger(first)
    )
    formatted = counting(monkeypatch, emf_writer, "line_text")
    written = counting(monkeypatch, EmfLogger, "_write")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs
    assert lambda_adapter.process_event(
        event, FakeContext(FUNCTION_TIMEOUT_S), noop, settings, FakeSQS(), emf=EmfLogger(stream)
    ) == {"batchItemFailures": []}
    # THEN each line was one f-string and one write: neither line_text nor the logger's _write was called
    assert formatted == [] and written == []
    lines = read_emf(stream)
    assert [(line["Outcome"], line["MessageGroupId"]) for line in lines] == [("success", 'ten"ant')] * 10
    assert all(type(line["QueueTime"]) is float and type(line["ProcessingTime"]) is float for line in lines)


def test_a_writers_usual_line_is_record_s_text_for_random_times_and_escaped_strings() -> None:
    # GIVEN times as a handler's and a queue's are (floats from 0), edge cases, and ids and groups to escape
    rng = random.Random(33)
    values = [0.0, -0.0, 0.0005, 0.0015, 1e-9, 1.5, 2.0, 123456789.1234, 999_999_999_999.9]
    values += [rng.uniform(0, 1e4) for _ in range(5_000)] + [rng.expovariate(1) for _ in range(5_000)]
    strings = ["m-1", 'q"uo\\te', "\u00e9\u2028\n\t", "\U0001f600"]
    written, recorded = io.StringIO(), io.StringIO()
    writer = LineWriter(EmfLogger(written), "RandomTimes", "q", "Dev-Random")
    writer.emit("first", 1.0, "success", 1, 0, False, None, 1.0, None)  # its templates kept from here on
    writer.emit("first", 1.0, "success", 1, 0, False, None, None, None)
    for i, value in enumerate(values):
        message_id, group = strings[i % 4], (None if i % 3 else strings[(i + 1) % 4])
        queue_ms = None if i % 5 == 0 else values[-1 - i]
        # WHEN the writer writes a line with them, and record() the same line
        writer.emit(message_id, value, "success", 2, 1, i % 7 == 0, None, queue_ms, group)
        EmfLogger(recorded).record(
            job_type="RandomTimes",
            queue="q",
            message_id=message_id,
            processing_ms=value,
            outcome="success",
            receive_count=2,
            extensions=1,
            lease_lost=i % 7 == 0,
            queue_ms=queue_ms,
            stack="Dev-Random",
            group=group,
            timestamp_ms=1,
        )
    # THEN each line is record()'s text, character for character but for the timestamp, and valid JSON
    ours = [re.sub(r'"Timestamp":\d+', '"Timestamp":1', line) for line in written.getvalue().splitlines()[2:]]
    assert ours == recorded.getvalue().splitlines() and len(ours) == len(values)
    assert all(json.loads(line)["Outcome"] == "success" for line in ours)


def test_a_record_calls_no_hook_while_the_only_hook_is_the_idle_opentelemetry_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the built-in OpenTelemetry hook alone, and no global tracer provider (the hook idle)
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="IdleOtelOnly")
    before, after = counting(monkeypatch, HookChain, "before"), counting(monkeypatch, HookChain, "after")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs
    assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN the hook's idleness was asked once a record and no hook chain was called; every line was written
    assert before == [] and after == [] and len(read_emf(stream)) == 10
    # and a provider set since is seen from the next record on: the hooks are called again
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    assert invoke(settings, stream, records=3) == {"batchItemFailures": []}
    assert before == [1] * 3 and after == [1] * 3


#: Three invocations with the collector off, in a process of their own: in the test process, another test's threads
#: (a worker finishing in the background) may leave sqslease objects for the collector meanwhile, which failed this
#: test once (a fresh-clone run).
GC_PROBE = """
import gc, io, json, sys
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event
from sqslease import lambda_adapter
from sqslease.emf import EmfLogger
from sqslease.settings import LeaseSettings

extension = sys.argv[1] == "on"
settings = LeaseSettings(visibility_timeout=40 if extension else 180, heartbeat=extension)
sqs, stream = FakeSQS(), io.StringIO()

def invoke():
    event = fake_event([f"r{i}" for i in range(10)])
    handler = lambda body, message: None
    return lambda_adapter.process_event(event, FakeContext(30), handler, settings, sqs, emf=EmfLogger(stream))

invoke()  # the process's first invocation
gc.collect()
gc.disable()
responses = [invoke() for _ in range(3)]
gc.set_debug(gc.DEBUG_SAVEALL)
gc.collect()
left = sorted({type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("sqslease")})
print(json.dumps({"left": left, "responses": responses, "lines": stream.getvalue().count("\\n")}))
"""


@pytest.mark.parametrize("lease_extension", [False, True])
def test_an_invocation_leaves_no_reference_cycle_for_the_garbage_collector(lease_extension: bool) -> None:
    # WHEN three invocations of 10 records run with the collector off (after the process's first)
    environment = {k: v for k, v in os.environ.items() if k != QUEUE_URL_ENV}
    environment["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(TESTS.parent / "lambda_src")])
    probe = subprocess.run(
        [sys.executable, "-c", GC_PROBE, "on" if lease_extension else "off"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(probe.stdout.splitlines()[-1])
    # THEN they left nothing for it: each one's leases, settler and hold were freed as it returned (the settler's
    # reference to its invocation's fatal-error report made a cycle of 16 objects an invocation)
    assert result["left"] == []
    assert result["responses"] == [{"batchItemFailures": []}] * 3 and result["lines"] == 40


def test_a_records_handler_is_called_from_the_processor_with_no_frame_between(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    callers: list[list[str]] = []

    def handler(body: str, message: Message) -> None:
        frame = sys._getframe(1)
        callers.append([frame.f_code.co_name, frame.f_back.f_code.co_name, frame.f_back.f_back.f_code.co_name])  # type: ignore[union-attr]

    # WHEN an invocation of 3 records runs without hooks or a max_processing_time
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False, job_type="CountedFrames")
    response = lambda_adapter.process_event(
        fake_event(["a", "b", "c"]), FakeContext(FUNCTION_TIMEOUT_S), handler, settings, FakeSQS(), emf=EmfLogger()
    )
    # THEN each handler call came from the processor (in the message's context, run by a C call), the watch's run
    # and the batch's loop: three Python frames of sqslease, none of them a wrapper of the call alone
    assert response == {"batchItemFailures": []}
    assert callers == [["process", "run", "_run_records"]] * 3


@pytest.mark.parametrize(("lease_extension", "reads"), [(False, 10), (True, 20)])
def test_a_record_reads_its_leases_lost_before_it_starts_only_if_its_lease_was_renewed(
    monkeypatch: pytest.MonkeyPatch, lease_extension: bool, reads: int
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=40 if lease_extension else 180, heartbeat=lease_extension)
    invoke(settings, io.StringIO())  # the process's first invocation
    lost = counting_property(monkeypatch, Lease, "lost")
    stream = io.StringIO()
    # WHEN an invocation of 10 records runs
    assert invoke(settings, stream) == {"batchItemFailures": []}
    # THEN each record read lost once once it ran (its outcome and line), and once before it started only if
    # its lease was renewed at the start (nothing else can lose a lease before its record runs)
    assert len(lost) == reads
    assert [(line["Outcome"], line["LeaseLost"]) for line in read_emf(stream)] == [("success", 0)] * 10


def test_an_invocation_hands_its_processor_back_without_a_weak_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False)
    invoke(settings, io.StringIO())  # the process's first invocation
    refs = counting(monkeypatch, weakref.WeakKeyDictionary, "__setitem__")
    # WHEN three more invocations run
    for _ in range(3):
        assert invoke(settings, io.StringIO()) == {"batchItemFailures": []}
    # THEN none filed its processor in a weak dictionary (what it was built for is the processor's attribute)
    assert refs == []


def test_an_invocation_asks_its_context_the_time_once_a_record_and_twice_besides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUEUE_URL_ENV, raising=False)
    settings = LeaseSettings(visibility_timeout=180, heartbeat=False)
    invoke(settings, io.StringIO())  # the process's first invocation
    invocation_thread, asked = threading.current_thread(), []
    real = FakeContext.get_remaining_time_in_millis

    def remaining(context: FakeContext) -> int:
        if threading.current_thread() is invocation_thread:  # not the deadline watchdog's looks
            asked.append(1)
        return real(context)

    monkeypatch.setattr(FakeContext, "get_remaining_time_in_millis", remaining)
    # WHEN an invocation of 10 records without a payload pointer runs
    assert invoke(settings, io.StringIO()) == {"batchItemFailures": []}
    # THEN it asked the time as it started, before each record (the deadline guard) and as it closed its settler;
    # not for a payload flush with nothing to flush
    assert len(asked) == 12


def test_a_settler_that_started_no_sender_closes_without_reading_its_clock() -> None:
    reads: list[float] = []

    def clock() -> float:
        reads.append(1.0)
        return 0.0

    settler = Settler(FakeSQS(), QUEUE_URL, LeaseScheduler(), clock=clock)
    # WHEN a settler that queued nothing (an all-successful Lambda invocation's) closes
    settler.close(timeout=5)
    # THEN it read no clock: there is nothing to send or wait for
    assert reads == []
