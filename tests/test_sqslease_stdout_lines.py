"""A worker process's stdout, which its EMF lines share with its handlers' ``print()``: each thread's text goes out a
whole line at a time, under the EMF logger's stream lock. ``print()`` writes its text and its newline in two writes;
a line written by another thread between them was glued to the printed text, so a deleted message's ``success``
line could not be read (the chaos report counts such a message lost). Found by a docs-only trial: two of 404 lines,
a handler printing at concurrency 4."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable

import pytest
from support.fakes import FakeSQS
from support.waiting import until
from support.worker_threads import running_worker

from sqslease.emf import EmfLogger
from sqslease.emf_writer import LineWriter
from sqslease.message import Message
from sqslease.stdout_lines import SWEEP_AT, WholeLines

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


def in_thread(*steps: Callable[[], object]) -> tuple[threading.Thread, list[threading.Event]]:
    """A thread running ``steps`` in order, each after the test sets its event (the first at once)."""
    gates = [threading.Event() for _ in steps]
    gates[0].set()

    def run() -> None:
        for gate, step in zip(gates, steps, strict=True):
            assert gate.wait(30)
            step()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, gates


def test_a_line_written_between_a_print_s_text_and_its_newline_comes_out_whole_after_it() -> None:
    # GIVEN a worker's stdout over the EMF logger's stream, and a handler thread that printed its text, not yet its
    # newline (print's two writes)
    real = io.StringIO()
    logger = EmfLogger(real)
    stdout = WholeLines(logger)
    printed = threading.Event()
    thread, gates = in_thread(lambda: (stdout.write("debug " + "x" * 300), printed.set()), lambda: stdout.write("\n"))
    assert printed.wait(30)
    # WHEN another thread's EMF line is written meanwhile, then the print's newline
    LineWriter(logger, "Jobs", "jobs").emit("m-1", 12.5, "success", 1, 0, False)
    gates[1].set()
    thread.join(timeout=30)
    # THEN both are whole lines: the EMF line, then the print
    first, second = real.getvalue().splitlines()
    assert json.loads(first)["MessageId"] == "m-1"
    assert second == "debug " + "x" * 300


def test_each_thread_s_partial_line_waits_for_its_newline_and_the_rest_goes_out_at_once() -> None:
    # GIVEN a worker's stdout
    real = io.StringIO()
    stdout = WholeLines(EmfLogger(real))
    # WHEN a write holds two lines and the start of a third, and a flush comes before its end
    stdout.write("one\ntwo\nthr")
    stdout.flush()
    # THEN the two whole lines are out, the partial one is not
    assert real.getvalue() == "one\ntwo\n"
    # AND once its end comes, it is; a write of another thread never joins it
    thread, _ = in_thread(lambda: stdout.write("other\n"))
    thread.join(timeout=30)
    stdout.write("ee\n")
    assert real.getvalue() == "one\ntwo\nother\nthree\n"


def test_what_a_thread_left_without_a_newline_is_written_as_a_line_at_close() -> None:
    # GIVEN partial lines of two threads
    real = io.StringIO()
    stdout = WholeLines(EmfLogger(real))
    stdout.write("progress 50%")
    thread, _ = in_thread(lambda: stdout.write("other's"))
    thread.join(timeout=30)
    # WHEN the worker ends: THEN each is written, a line each
    stdout.close_lines()
    assert sorted(real.getvalue().splitlines()) == ["other's", "progress 50%"]
    assert real.getvalue().endswith("\n")


def test_a_printing_handler_at_concurrency_4_leaves_every_emf_line_whole() -> None:
    # GIVEN a worker of 4 handlers that print (two writes each, with a GIL switch between) on a WholeLines stdout
    real = io.StringIO()
    logger = EmfLogger(real)
    stdout = WholeLines(logger)

    def noisy(body: str, message: Message) -> None:
        stdout.write(f"handling {body} " + "x" * 200)
        stdout.write("\n")

    sqs = FakeSQS()
    with running_worker(sqs, URL, noisy, concurrency=4, stream=logger) as worker:
        # WHEN 200 messages are run
        sqs.add(*(f"b{i}" for i in range(200)))
        until(lambda: worker.processed == 200, 60, "200 runs")
    # THEN every line is a whole EMF line or a whole print, and each message has its success line
    lines = real.getvalue().splitlines()
    emf = [json.loads(line) for line in lines if line.startswith("{")]
    assert sorted(line for line in lines if not line.startswith("{")) == sorted(
        f"handling b{i} " + "x" * 200 for i in range(200)
    )
    assert sorted(record["MessageId"] for record in emf if record["Outcome"] == "success") == sorted(
        f"m-b{i}" for i in range(200)
    )


def test_what_a_text_stream_has_beyond_textiobase_is_the_real_stdout_s() -> None:
    # GIVEN a worker's stdout over a real text stream
    real = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", line_buffering=False)
    stdout = WholeLines(EmfLogger(real))
    # WHEN a handler asks it what a TextIOWrapper has: THEN it is answered as by the real stdout
    assert stdout.line_buffering is False and stdout.encoding == "utf-8" and not stdout.isatty()
    stdout.reconfigure(line_buffering=True)
    assert real.line_buffering is True


def test_a_print_that_cannot_be_encoded_fails_alone_and_the_held_lines_are_written() -> None:
    # GIVEN a worker's stdout over a strict UTF-8 stream (a container's C.UTF-8 locale), and a success line held
    # for its delete (found by two docs-only trials: 10 of 200 lines lost, another message's line in the error)
    raw = io.BytesIO()
    real = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    logger = EmfLogger(real)
    stdout = WholeLines(logger)
    LineWriter(logger, "Jobs", "jobs", deferred=True).emit("m-1", 12.5, "success", 1, 0, False)
    # WHEN a handler prints text that cannot be encoded (an unpaired surrogate from a decoded body)
    with pytest.raises(UnicodeEncodeError) as failed:
        stdout.write("caf\udce9\n")
    # THEN its error is about its own text alone, as plain Python's print() would raise it
    assert failed.value.object == "caf\udce9\n" and failed.value.start == 3
    # AND the held line is written, whole, before anything else, and nothing of the text
    assert [json.loads(line)["MessageId"] for line in raw.getvalue().decode().splitlines()] == ["m-1"]
    # AND the stream goes on: the next print and line are written, and a flush finds nothing held
    stdout.write("next\n")
    logger.flush()
    assert raw.getvalue().decode().splitlines()[1:] == ["next"]


def test_an_emf_line_written_at_once_is_not_lost_with_a_held_one_when_the_stream_refuses_a_print() -> None:
    # GIVEN held lines, and a stream whose encoding a handler changed to one that refuses its text (latin-1)
    raw = io.BytesIO()
    real = io.TextIOWrapper(raw, encoding="latin-1", errors="strict", write_through=True)
    logger = EmfLogger(real)
    stdout = WholeLines(logger)
    writer = LineWriter(logger, "Jobs", "jobs", deferred=True)
    writer.emit("m-1", 1.0, "success", 1, 0, False)
    writer.emit("m-2", 1.0, "success", 1, 0, False)
    # WHEN a handler's print of text latin-1 cannot hold fails, then a failure line is written at once
    with pytest.raises(UnicodeEncodeError):
        stdout.write("\u20ac 5\n")
    LineWriter(logger, "Jobs", "jobs").emit("m-3", 1.0, "failure", 1, 0, False, ValueError("boom"))
    # THEN every line is there, in order
    assert [json.loads(line)["MessageId"] for line in raw.getvalue().decode("latin-1").splitlines()] == [
        "m-1",
        "m-2",
        "m-3",
    ]


def test_text_a_finished_thread_left_without_a_newline_never_joins_a_new_thread_s_line() -> None:
    # GIVEN a thread that wrote text without a newline and ended (Python may give its id to the next thread)
    real = io.StringIO()
    stdout = WholeLines(EmfLogger(real))
    for i in range(5):
        thread, _ = in_thread(lambda i=i: stdout.write(f"left-{i}"))
        thread.join(timeout=30)
        # WHEN a new thread writes a whole line
        thread, _ = in_thread(lambda i=i: stdout.write(f"fresh-{i}\n"))
        thread.join(timeout=30)
    # THEN each new line is its own, and what the finished threads left is written at the end, a line each
    assert real.getvalue().splitlines() == [f"fresh-{i}" for i in range(5)]
    stdout.close_lines()
    assert sorted(real.getvalue().splitlines()[5:]) == [f"left-{i}" for i in range(5)]


def test_errors_is_the_real_stdout_s() -> None:
    real = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    assert WholeLines(EmfLogger(real)).errors == "surrogateescape"


def test_once_many_threads_have_text_waiting_what_ended_threads_left_is_written_before_the_end() -> None:
    # GIVEN more threads than SWEEP_AT that each left text without a newline and ended (a handler starting a thread a
    # message), and a live one whose text waits
    real = io.StringIO()
    stdout = WholeLines(EmfLogger(real))
    stdout.write("mine, not ended")
    for i in range(SWEEP_AT + 1):
        thread, _ = in_thread(lambda i=i: stdout.write(f"left-{i}"))
        thread.join(timeout=30)
    # THEN the text of the threads that had ended when the sweep ran (all but the one writing then and the one after)
    # is out, a line each, and the live thread's still waits for its newline
    assert sorted(real.getvalue().splitlines()) == sorted(f"left-{i}" for i in range(SWEEP_AT - 1))
    stdout.write("\n")
    assert real.getvalue().splitlines()[-1] == "mine, not ended"
    # AND the rest comes at the end, a line each
    stdout.close_lines()
    assert sorted(real.getvalue().splitlines()[SWEEP_AT:]) == [f"left-{SWEEP_AT - 1}", f"left-{SWEEP_AT}"]


def test_a_sweep_writes_what_an_ended_thread_holds_when_it_is_taken_not_when_the_sweep_began() -> None:
    # GIVEN two ended threads' text waiting, and a sweep whose first write lets the second thread's text grow (it
    # wrote more before it ended, while the sweep's list was taken: found by a docs-only trial, its tail lost)
    real = io.StringIO()
    logger = EmfLogger(real)
    stdout = WholeLines(logger)
    first, second = (threading.Thread(target=lambda: None) for _ in range(2))
    for thread in (first, second):
        thread.start()
        thread.join(timeout=30)
    stdout._partial[first], stdout._partial[second] = "first", "Y27"
    write = logger._write

    def grows(text: str) -> None:
        if text == "first\n":
            stdout._partial[second] += "-y27"
        write(text)

    logger._write = grows  # type: ignore[method-assign]
    # WHEN the sweep runs: THEN each ended thread's whole text is written
    stdout._sweep()
    assert real.getvalue().splitlines() == ["first", "Y27-y27"]


def test_the_error_of_a_print_that_cannot_be_encoded_is_not_chained_to_the_worker_s_own_write() -> None:
    raw = io.BytesIO()
    logger = EmfLogger(io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True))
    LineWriter(logger, "Jobs", "jobs", deferred=True).emit("m-1", 12.5, "success", 1, 0, False)
    with pytest.raises(UnicodeEncodeError) as failed:
        WholeLines(logger).write("caf\udce9\n")
    assert failed.value.__context__ is None and failed.value.object == "caf\udce9\n"
