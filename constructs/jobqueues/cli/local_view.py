"""What ``jobqueues local up`` shows of its consumers: the live status table while they run, then what they did
(outcomes per deployment, from their EMF lines) and, with ``--chaos``, the report on the handlers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from jobqueues.ops.errors import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from jobqueues.emulator.chaos import Chaos
    from jobqueues.emulator.consumers.runner import ConsumerRunner
    from jobqueues.emulator.server import LocalServer

#: Seconds between two looks at the queues (scaling, the table).
TICK_S = 1.0


def watch(runner: ConsumerRunner, until_idle: float | None) -> int:
    """Tick the runner with a live table (on a terminal) or a line per change; 0 when idle, 130 on Ctrl-C."""
    console = Console()
    idle_since: float | None = None
    live: Any = None
    if console.is_terminal:
        from rich.live import Live

        live = Live(console=console, refresh_per_second=2, transient=False)
        live.start()
    try:
        while True:
            events = runner.tick()
            for event in events:
                (live.console.print if live is not None else click.echo)(event)
            if live is not None:
                live.update(status_table(runner))
            if until_idle is not None:
                now = time.monotonic()
                idle_since = (idle_since or now) if runner.idle() else None
                if idle_since is not None and now - idle_since >= until_idle:
                    click.echo(f"idle for {until_idle:g} s: stopping")
                    return 0
            time.sleep(TICK_S)
    except KeyboardInterrupt:
        click.echo("interrupted: draining the workers")
        return EXIT_INTERRUPTED
    finally:
        if live is not None:
            live.stop()


def status_table(runner: ConsumerRunner) -> Table:
    """Per job type: visible, in flight, DLQ, and the local workers or Lambda invocations."""
    table = Table(title="jobqueues local up", title_justify="default")  # left, without padding
    for column in ("job type", "consumer", "visible", "in flight", "DLQ", "local"):
        table.add_column(column, justify="left" if column in ("job type", "consumer", "local") else "right")
    for row in runner.rows():
        kind = row.consumer.split(";")[0]  # "lambda; DLQ missing": a missing queue's note after the kind
        if kind == "ecs":
            local = _plural(row.workers, "worker") + (f", {row.draining} draining" if row.draining else "")
        elif kind == "lambda":
            local = _plural(row.invocations, "invocation") + (f", [red]{row.errors} failed[/]" if row.errors else "")
        else:
            local = "-"
        dlq = "-" if row.dead_lettered is None else str(row.dead_lettered)
        visible, in_flight = ("-", "-") if row.queue_missing else (str(row.visible), str(row.in_flight))
        table.add_row(row.job_type, row.consumer, visible, in_flight, dlq, local)
    return table


def _plural(count: int, noun: str) -> str:
    """``1 worker``, ``2 workers``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def summary(runner: ConsumerRunner, wall_s: float) -> None:
    """What the consumers did, from their EMF lines: outcomes per deployment (``STACK/JOB_TYPE``)."""
    from jobqueues.emulator.deployments import outcome_counts

    outcomes = outcome_counts(runner.shipper.emf_lines_by_stream().values(), runner.job_types)
    runner.refresh()
    Console().print(status_table(runner))
    for job in runner.consumed():
        counts = outcomes.get(job.name, {})
        text = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no message processed"
        ecs = runner.ecs.get(job.name)
        started = f"; {_plural(ecs.pool.started_total, 'worker')} started" if ecs is not None else ""
        row = runner.rows_by_name.get(job.name)
        if row is not None and row.errors:
            started += f"; {row.errors} of {_plural(row.invocations, 'invocation')} failed (the function's log has why)"
        click.echo(f"summary {job.name}: {text}{started}")
    click.echo(f"ran {wall_s:.0f} s; {runner.shipper.shipped} log lines sent to CloudWatch Logs")


def chaos_report(chaos_run: Chaos, runner: ConsumerRunner, server: LocalServer) -> None:
    """The chaos run's report on the handlers, from the queues' end state read now (the consumers stopped)."""
    from jobqueues.emulator.chaos import read_queue_state

    sqs = server.client("sqs")
    final = [
        read_queue_state(sqs, j.name, j.queue_url, j.dead_letter_queue_url, timeout_s=j.visibility_timeout_s or 0)
        for j in runner.consumed()
        if j.queue_url is not None
    ]
    report = chaos_run.report(runner.shipper.emf_lines_by_stream(), final, runner.stopped_receiving())
    click.echo(report.format())
