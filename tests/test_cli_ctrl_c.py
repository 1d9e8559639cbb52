"""The commands' Ctrl-C handler (``jobqueues.cli.context.ctrl_c_sets``) takes no lock and writes nothing.

A signal handler runs on the main thread between two of its steps: inside ``Event.wait`` with the stop event's lock
held, or inside a write to stderr with the stream's buffer lock held. A handler that set the event there waited for
good for a lock its own thread held; one that printed there raised ``RuntimeError: reentrant call``. GIVEN the
handler the command installs, run at such a moment, THEN it returns at once; the stop takes effect at the command's
next look, and its line comes from that look or, while the command waits on a request, from the handler's thread.
"""

from __future__ import annotations

import io
import signal
import sys
import threading
from typing import Any

import click
import pytest
from support.waiting import wait_for

from jobqueues.cli.context import ctrl_c_sets

SAYING = "stopping: the batch in hand finishes (Ctrl-C again to interrupt at once)"


def test_a_ctrl_c_that_lands_while_the_main_thread_holds_the_stop_event_s_lock_returns_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ctrl_c_sets(lambda: SAYING) as stop:
        on_ctrl_c: Any = signal.getsignal(signal.SIGINT)

        # WHEN Ctrl-C lands while the main thread is inside Event.wait, re-taking the stop event's lock: the handler
        # then runs on that thread with the lock held
        def main_thread_in_event_wait() -> None:
            with stop._cond:  # type: ignore[attr-defined]
                on_ctrl_c(signal.SIGINT, None)

        interrupted = threading.Thread(target=main_thread_in_event_wait, daemon=True)
        interrupted.start()
        interrupted.join(10)  # a bound on failure only: the handler takes no lock, so it returns at once
        # THEN the handler returned, and the command's next look stops, saying so once
        assert not interrupted.is_alive(), "the Ctrl-C handler blocked on the lock its own thread holds"
        assert stop.is_set() and stop.wait(0)
    assert capsys.readouterr().err == SAYING + "\n"


class InterruptedWrite(io.RawIOBase):
    """stderr's bytes, where Ctrl-C lands during the first write: the handler runs while the main thread is inside
    the buffered stream's write, holding its lock."""

    def __init__(self, on_ctrl_c: Any) -> None:
        self.on_ctrl_c, self.written, self.landed = on_ctrl_c, bytearray(), False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if not self.landed:
            self.landed = True
            self.on_ctrl_c(signal.SIGINT, None)
        self.written += bytes(data)
        return len(data)


def test_a_ctrl_c_that_lands_while_the_main_thread_writes_to_stderr_prints_nothing_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ctrl_c_sets(lambda: SAYING) as stop:
        raw = InterruptedWrite(signal.getsignal(signal.SIGINT))
        monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8"))
        # WHEN Ctrl-C lands while the command writes a line to stderr
        click.echo("progress", err=True)
        assert raw.landed
        # THEN that write went through (the handler wrote nothing into it), and the next look stops and says so
        assert stop.is_set()
    sys.stderr.flush()
    assert raw.written.decode() == f"progress\n{SAYING}\n"


def test_a_second_ctrl_c_interrupts_at_once() -> None:
    with ctrl_c_sets(None) as stop:
        on_ctrl_c: Any = signal.getsignal(signal.SIGINT)
        on_ctrl_c(signal.SIGINT, None)
        with pytest.raises(KeyboardInterrupt):
            on_ctrl_c(signal.SIGINT, None)
        assert stop.is_set()
    assert signal.getsignal(signal.SIGINT) is not on_ctrl_c


def test_a_ctrl_c_while_the_command_waits_on_a_request_says_so_without_its_next_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with ctrl_c_sets(lambda: SAYING) as stop:
        # WHEN Ctrl-C comes while the main thread waits on a request (it does not look at the stop event)
        on_ctrl_c: Any = signal.getsignal(signal.SIGINT)
        on_ctrl_c(signal.SIGINT, None)
        # THEN the line comes anyway, and the event is set (a bound on failure only: it comes within 0.1 s)
        assert wait_for(lambda: SAYING in err.getvalue(), 10), err.getvalue()
        assert threading.Event.is_set(stop)
    assert err.getvalue() == SAYING + "\n"
