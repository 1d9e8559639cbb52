"""The sqslease runtime's own cost.

Run: `.venv/bin/python bench/runtime_bench.py [--quick] [--profile] [--only lambda|worker]`.

1. Lambda adapter: per-record CPU of an all-success batch of 10 records with a no-op handler and a stub SQS client
   (the real entry path: ``sqs_batch_handler``, settings from ``SQSLEASE_*`` as a ``LambdaJob`` sets them),
   against Powertools' ``BatchProcessor`` + ``process_partial_response`` on the same event, interleaved in one
   run. Both ``LambdaJob`` cases: lease extension off (VT 6 x timeout, no heartbeat) and on (VT timeout + 10 s:
   renewed as the invocation starts). Exact counts: threads started and SQS calls per invocation. Then the same
   without the EMF lines (a ``LineWriter`` that writes none), in the same run: what the lines cost, and what the
   rest of the adapter costs against Powertools.
2. Worker: per-message CPU of ``Worker`` with a no-op handler against ``FakeSQS`` (tests/support), against a
   hand-written receive / process / delete loop on the same fake, in one run. Exact counts: SQS calls per message.
   The hand loop, on one thread, receives 10 with the same attributes, calls the handler on each and deletes the
   10 in one request; it keeps no lease (no lease table, no heartbeat), writes no EMF line, calls no hook, times
   nothing out, keeps no FIFO order, retries no failed delete and has no drain. The worker receives at most its
   handlers plus one batch ahead (2 a request at concurrency 1, 5 to 8 at 4). Then each part of the worker's work
   timed alone on one thread (``runtime_breakdown``), its receive request and its leases and ``Message`` objects at
   the messages a receive it had in the run (2 at concurrency 1: what its prefetch allows): what they leave of its
   cost is what no part covers (its threads' hand-offs and waits, the handler loop's and the receive's own calls);
   the worker's cost over the sum of its parts (also with the receive counted at the hand loop's 10 a request), and
   the process's voluntary context switches per message, are printed. Then the floor: the handler path alone on as
   many threads, taking pre-received messages straight from a list (no receiver, no ready queue, no wait:
   ``handoff_free_us``), over the same parts less the receive and the leases. Both ratios are also measured paired:
   in each round the parts and the floor are timed right after the worker, the ratio the median of the rounds' (the
   figures above time the parts once, after every round). Then the worker over its parts again, paired, on a fake
   that keeps no record of its calls (``FakeSQS(record=False)``): the record keeps every message of a run alive, and
   costs the parts more than the worker. Last, the same ratio on that fake with each side in a process of its own,
   started for it (``bench/fresh_worker.py``, 4 times the messages: 20,000, or 4,000 with ``--quick``): in the one
   long process the figures drift with the heap the earlier ones grew.

CPU is ``time.process_time()`` (every thread of this process), each side measured after a ``gc.collect()``; the ratio
is the median of the rounds' ratios, each round measuring both sides back to back, so that the load of other work
on the machine moves both alike.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import os
import pstats
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests")]

import fresh_worker  # noqa: E402
from runtime_breakdown import handoff_free_us, parts_sums, print_breakdown  # noqa: E402
from support.fakes import FakeSQS  # noqa: E402
from support.lambda_events import fake_event  # noqa: E402

from sqslease import lambda_adapter  # noqa: E402
from sqslease.config import ConsumerConfig  # noqa: E402
from sqslease.emf import EmfLogger  # noqa: E402
from sqslease.emf_writer import LineWriter  # noqa: E402
from sqslease.message import Message  # noqa: E402
from sqslease.rules import visibility_timeout_for_lambda  # noqa: E402
from sqslease.settings import LeaseSettings  # noqa: E402
from sqslease.worker import Worker  # noqa: E402

FUNCTION_TIMEOUT_S = 30
RECORDS = 10
WORKER_QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/bench"


class StubSQS:
    """Answers every lease request with success; counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


class Context:
    """Lambda's context: every invocation starts with the whole function timeout left."""

    def get_remaining_time_in_millis(self) -> int:
        return FUNCTION_TIMEOUT_S * 1000


def noop(body: str, message: Message) -> None:
    return None


class ThreadCount:
    """Counts ``threading.Thread.start`` calls (pool threads included) while installed."""

    def __init__(self) -> None:
        self.started = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[ThreadCount]:
        real = threading.Thread.start

        def start(thread: threading.Thread) -> None:
            self.started += 1
            real(thread)

        threading.Thread.start = start  # type: ignore[method-assign]
        try:
            yield self
        finally:
            threading.Thread.start = real  # type: ignore[method-assign]


def lambda_job_env(lease_extension: bool) -> dict[str, str]:
    """The ``SQSLEASE_*`` lease variables a ``LambdaJob`` of a 30 s function sets (jobqueues' consumer contract)."""
    vt = visibility_timeout_for_lambda(FUNCTION_TIMEOUT_S, 0, lease_extension=lease_extension)
    settings = LeaseSettings(visibility_timeout=vt, heartbeat=lease_extension, job_type="Bench")
    return ConsumerConfig(lease=settings).to_env(("job_type", "heartbeat", "visibility_timeout", "extension_threshold"))


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def lines_unwritten() -> Iterator[None]:
    """The adapter's EMF lines neither formatted nor written (``LineWriter.emit`` does nothing) while installed."""
    real = LineWriter.emit
    LineWriter.emit = lambda *args: None  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        LineWriter.emit = real  # type: ignore[method-assign]


def powertools_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    processor = BatchProcessor(event_type=EventType.SQS)

    def record_handler(record: Any) -> None:
        return None

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )

    return handler


def sqslease_handler(sqs: StubSQS) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = lambda_adapter.sqs_batch_handler(noop, sqs=sqs)
    return handler


def cpu_per_record_us(handler: Callable[[dict[str, Any], Any], dict[str, Any]], event: dict[str, Any], n: int) -> float:
    context = Context()
    gc.collect()  # neither side pays for the other's garbage
    started = time.process_time()
    for _ in range(n):
        response = handler(event, context)
    elapsed = time.process_time() - started
    assert response == {"batchItemFailures": []}, response
    return elapsed / (n * len(event["Records"])) * 1e6


def bench_lambda(invocations: int, rounds: int, profile: bool) -> None:
    print(f"1. Lambda adapter vs Powertools BatchProcessor: all-success batch of {RECORDS}, no-op handler")
    event = fake_event([f"body-{i}" for i in range(RECORDS)])
    powertools = powertools_handler()
    devnull = open(os.devnull, "w")  # EMF lines: written and flushed, as to Lambda's stdout
    for lease_extension in (False, True):
        env = lambda_job_env(lease_extension)
        sqs = StubSQS()
        ours = sqslease_handler(sqs)
        lambda_adapter._env_settings = None  # each case stands for a new execution environment (process)
        with environment(env), contextlib.redirect_stdout(devnull):
            with ThreadCount().installed() as threads:
                ours(event, Context())  # first invocation: settings parsed, processor built
                sqs.calls = 0
                threads.started = 0
                for _ in range(10):
                    ours(event, Context())
            calls, started = sqs.calls / 10, threads.started / 10
            ratios, our_us, their_us = [], [], []
            for _ in range(rounds):
                theirs = cpu_per_record_us(powertools, event, invocations)
                mine = cpu_per_record_us(ours, event, invocations)
                our_us.append(mine)
                their_us.append(theirs)
                ratios.append(mine / theirs)
            unwritten_us, unwritten = [], []  # the floor without the EMF lines, in the same run
            with lines_unwritten():
                for _ in range(rounds):
                    theirs = cpu_per_record_us(powertools, event, invocations)
                    unwritten_us.append(cpu_per_record_us(ours, event, invocations))
                    unwritten.append(unwritten_us[-1] / theirs)
            if profile:
                profiler = cProfile.Profile(time.thread_time)
                with thread_profiles() as profiles:
                    profiler.enable()
                    cpu_per_record_us(ours, event, invocations)
                    profiler.disable()
        label = "on " if lease_extension else "off"
        print(
            f"   lease extension {label} (VT {env['SQSLEASE_VISIBILITY_TIMEOUT']} s): "
            f"sqslease {statistics.median(our_us):6.2f} us/record, Powertools {statistics.median(their_us):5.2f} "
            f"us/record -> {statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}x); "
            f"per invocation: {started:g} threads started, {calls:g} SQS call{'' if calls == 1 else 's'}"
        )
        bare_us = statistics.median(unwritten_us)
        print(
            f"      without its EMF lines (a writer that writes none): {bare_us:6.2f} us/record "
            f"-> {statistics.median(unwritten):.2f}x (rounds {min(unwritten):.2f}-{max(unwritten):.2f}x); the lines: "
            f"{statistics.median(our_us) - bare_us:.2f} us/record"
        )
        if profile:
            print_profile(profiler, *profiles)
    devnull.close()


# -- the worker ------------------------------------------------------------------------------------------------------
class CountingFakeSQS(FakeSQS):
    """``FakeSQS`` that sets ``all_deleted`` once ``expected`` messages were deleted (``record``: see ``FakeSQS``)."""

    def __init__(self, expected: int, record: bool = True) -> None:
        super().__init__(poll_s=0.02, record=record)
        self.expected = expected
        self.deleted = 0
        self.all_deleted = threading.Event()

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        response = super().delete_message_batch(QueueUrl, Entries)
        self.deleted += len(Entries)  # one deleting thread at a time: the settler's, or the loop's
        if self.deleted >= self.expected:
            self.all_deleted.set()
        return response


def loaded(n: int, record: bool = True) -> CountingFakeSQS:
    sqs = CountingFakeSQS(n, record)
    sqs.add(*(f"b{i}" for i in range(n)))
    return sqs


def hand_written_loop(sqs: CountingFakeSQS, handler: Callable[[str, Any], None]) -> None:
    """What a consumer without sqslease does: receive 10, run each, delete the batch."""
    while not sqs.all_deleted.is_set():
        messages = sqs.receive_message(
            QueueUrl=WORKER_QUEUE_URL,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=20,
            VisibilityTimeout=30,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        for message in messages:
            handler(message["Body"], message)
        if messages:
            sqs.delete_message_batch(
                QueueUrl=WORKER_QUEUE_URL,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )


def cpu_hand_written(n: int) -> tuple[float, CountingFakeSQS]:
    sqs = loaded(n)
    gc.collect()
    started = time.process_time()
    hand_written_loop(sqs, noop)
    return (time.process_time() - started) / n * 1e6, sqs


def bench_worker_of(emf: EmfLogger) -> Callable[[FakeSQS, int], Worker]:
    """A worker of the benchmark's settings on a given fake and concurrency, not started."""

    def make(sqs: FakeSQS, concurrency: int) -> Worker:
        return Worker(sqs, WORKER_QUEUE_URL, noop, LeaseSettings(job_type="Bench"), concurrency, emf)

    return make


def cpu_worker(n: int, concurrency: int, emf: EmfLogger, record: bool = True) -> tuple[float, CountingFakeSQS, float]:
    """CPU per message (us), the fake, and the process's voluntary context switches per message (a thread that
    blocked: waiting for a hand-off, or for the GIL), as the kernel counts them. ``record``: the fake keeps its
    calls. Default True."""
    sqs = loaded(n, record)
    worker = bench_worker_of(emf)(sqs, concurrency)
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False})
    gc.collect()
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    started = time.process_time()
    thread.start()
    assert sqs.all_deleted.wait(120), f"{sqs.deleted} of {n} deleted"
    elapsed = time.process_time() - started
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - switches
    worker.shutdown()
    thread.join()
    return elapsed / n * 1e6, sqs, switches / n


def bench_worker(messages: int, rounds: int, profile: bool) -> None:
    print(f"2. Worker vs a hand-written receive/process/delete loop: {messages} messages on FakeSQS, no-op handler")
    devnull = open(os.devnull, "w")
    emf = EmfLogger(devnull)
    for concurrency in (1, 4):
        ratios, ours, theirs, switches, paired, floors = [], [], [], [], [], []
        for _ in range(rounds):
            baseline, base_sqs = cpu_hand_written(messages)
            mine, sqs, switched = cpu_worker(messages, concurrency, emf)
            ours.append(mine)
            theirs.append(baseline)
            ratios.append(mine / baseline)
            switches.append(switched)
            # its parts and floor right after it, so that the load moves all three alike
            work, handler_work = parts_sums(round(messages / sqs.count("ReceiveMessage")), rounds=3)
            paired.append(mine / work)
            floors.append(handoff_free_us(bench_worker_of(emf), concurrency, messages) / handler_work)
        counts = {op: sqs.count(op) / messages for op in ("ReceiveMessage", "DeleteMessageBatch")}
        counts["ChangeMessageVisibilityBatch"] = sqs.count("ChangeMessageVisibilityBatch") / messages
        base_counts = {op: base_sqs.count(op) / messages for op in ("ReceiveMessage", "DeleteMessageBatch")}
        print(
            f"   concurrency {concurrency}: worker {statistics.median(ours):6.1f} us/message, hand-written "
            f"{statistics.median(theirs):5.1f} us/message -> {statistics.median(ratios):.2f}x "
            f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)"
        )
        print(f"      SQS calls per message: worker {fmt(counts)}; hand-written {fmt(base_counts)}")
        print(f"      voluntary context switches per message (the process's): {statistics.median(switches):.2f}")
        parts = print_breakdown(
            statistics.median(ours), statistics.median(theirs), per_receive=round(1 / counts["ReceiveMessage"])
        )
        handler_parts = sum(v for name, v in parts.items() if not name.startswith(("FakeSQS receive", "lease and")))
        floor = statistics.median(handoff_free_us(bench_worker_of(emf), concurrency, messages) for _ in range(rounds))
        print(
            f"      floor: its handler path alone on {concurrency} thread(s) taking straight from a list (no receiver, "
            f"no hand-off): {floor:.1f} us/message, {floor / handler_parts:.2f}x those parts (receive and leases "
            "left out)"
        )
        print(
            f"      paired in each round: over the sum of its parts {statistics.median(paired):.2f}x (rounds "
            f"{min(paired):.2f}-{max(paired):.2f}x); floor {statistics.median(floors):.2f}x ({min(floors):.2f}-"
            f"{max(floors):.2f}x)"
        )
        # The fake records every call, and so keeps each message of a run alive: a cost on both sides, but not the
        # same one. Without the record (as SQS's answers are dropped once read), paired in each round:
        lean = []
        for _ in range(rounds):
            mine, lean_sqs, _ = cpu_worker(messages, concurrency, emf, record=False)
            lean.append((mine, parts_sums(round(messages / lean_sqs.count("ReceiveMessage")), 3, record=False)[0]))
        lean_ratios = [mine / work for mine, work in lean]
        lean_us, lean_parts = statistics.median(m for m, _ in lean), statistics.median(w for _, w in lean)
        print(
            f"      with a fake that keeps no record of its calls, paired: worker {lean_us:.1f} us/message, its parts "
            f"{lean_parts:.1f} -> {statistics.median(lean_ratios):.2f}x (rounds {min(lean_ratios):.2f}-"
            f"{max(lean_ratios):.2f}x)"
        )
        # Each side in a process of its own (bench/fresh_worker.py): the figures above run in one long process.
        print(fresh_worker.summary(concurrency, fresh_worker.rounds(concurrency, 4 * messages, rounds)))
        if profile:
            with thread_profiles() as profiles:
                cpu_worker(messages, concurrency, emf)
            print_profile(*profiles)
    devnull.close()


def fmt(counts: dict[str, float]) -> str:
    return ", ".join(f"{op} {value:.3f}" for op, value in counts.items())


@contextlib.contextmanager
def thread_profiles() -> Iterator[list[cProfile.Profile]]:
    """A cProfile of every thread started meanwhile (the worker's work is on its threads)."""
    profiles: list[cProfile.Profile] = []
    real = threading.Thread.run

    def run(thread: threading.Thread) -> None:
        profiler = cProfile.Profile(time.thread_time)
        profiles.append(profiler)
        profiler.enable()
        try:
            real(thread)
        finally:
            profiler.disable()

    threading.Thread.run = run  # type: ignore[method-assign]
    try:
        yield profiles
    finally:
        threading.Thread.run = real  # type: ignore[method-assign]


def print_profile(*profilers: cProfile.Profile) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profilers[0], stream=out)
    for other in profilers[1:]:
        stats.add(other)
    stats.sort_stats("tottime").print_stats(18)
    print("\n".join("      " + line for line in out.getvalue().splitlines()[6:]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer invocations and messages")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the sqslease side")
    parser.add_argument("--only", choices=("lambda", "worker"), help="run one of the two benchmarks")
    args = parser.parse_args()
    scale = 5 if args.quick else 1
    if args.only != "worker":
        bench_lambda(invocations=2_000 // scale, rounds=5, profile=args.profile)
    if args.only != "lambda":
        bench_worker(messages=5_000 // scale, rounds=5, profile=args.profile)


if __name__ == "__main__":
    main()
