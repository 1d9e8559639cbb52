"""``jobqueues local deploy`` and ``jobqueues local up``: your own CDK app on the embedded emulator.

Both start the emulator (moto_server with jobqueues' CloudFormation handlers: the optional extra
``cdk-jobqueues[local]``), deploy every stack of every Stage of the app in the current directory with the real
``cdk`` CLI, verify the deploy and print ``export AWS_ENDPOINT_URL=...``. ``up`` then runs the app's consumers
(:mod:`jobqueues.emulator.consumers`) with a live status table until Ctrl-C, or until idle (``--until-idle``).
What of ``jobqueues.emulator`` needs moto is imported inside the commands: the other commands need no moto.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jobqueues.cli.context import ctrl_c_interrupts
from jobqueues.cli.local_view import chaos_report, summary, watch
from jobqueues.emulator.consumers.scaler import SCALE_IN_AFTER_S  # a pure module: no moto
from jobqueues.ops.errors import EXIT_FAILED, EXIT_INTERRUPTED, BadInput, OpsError

if TYPE_CHECKING:
    from jobqueues.emulator.chaos import Chaos
    from jobqueues.emulator.consumers.local_env import LocalEnv
    from jobqueues.emulator.consumers.runner import ConsumerRunner
    from jobqueues.emulator.server import LocalServer

APP_HELP = 'The CDK app command, e.g. "python app.py". Default: cdk.json\'s "app" in the current directory.'
PORT_HELP = "The emulator's port. Default: a free one."


def _check_directory(option: str, path: Path) -> None:
    """Refuse, before the deploy, a ``path`` that cannot be made a directory (its nearest existing part is a
    file, or cannot be written), without making it yet."""
    path = path.resolve()
    existing = next(part for part in (path, *path.parents) if part.exists())
    if not existing.is_dir():
        raise BadInput(f"{option} {path}: cannot make it a directory: {existing} is a file")
    if existing != path and not os.access(existing, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: cannot make it a directory: {existing} is not writable")


def _local_env(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    """``--env`` values, parsed before anything starts (:mod:`jobqueues.emulator.consumers.local_env`)."""
    from jobqueues.emulator.consumers.local_env import parse_env

    return parse_env(values)  # a BadInput: one line, as every refusal of a value (not click's usage block)


def _require_moto() -> None:
    try:
        import moto  # noqa: F401
    except ModuleNotFoundError:
        raise OpsError("the local emulator needs moto: pip install 'cdk-jobqueues[local]'") from None


def _stop_on_signals() -> None:
    """SIGTERM (a ``kill``, a CI step's timeout) stops as Ctrl-C does: the consumers drained, the emulator stopped,
    status 130. Ctrl-C works too when a script started us in the background, where SIGINT comes ignored."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    ctrl_c_interrupts()


@contextlib.contextmanager
def _deployed(
    app: str | None, port: int | None, check_synthesized: Callable[[Path], None] | None = None
) -> Iterator[LocalServer]:
    """The emulator with the app in the current directory deployed and verified, for as long as the ``with``;
    ``check_synthesized`` runs on the cloud assembly before the deploy."""
    _require_moto()
    _stop_on_signals()
    from jobqueues.emulator.adopted_queues import adopted_queue_notes
    from jobqueues.emulator.consumers.runner import sigint_blocked
    from jobqueues.emulator.deploy import DeployError, format_report
    from jobqueues.emulator.server import running_server
    from jobqueues.emulator.user_app import app_command, deploy_app, find_cdk
    from jobqueues.ops.discovery import discover

    try:  # bad input fails before anything starts
        app = app_command(Path.cwd(), app)
        find_cdk(Path.cwd())
    except DeployError as error:
        raise OpsError(str(error)) from error
    with contextlib.ExitStack() as stack:
        try:
            with sigint_blocked():  # Ctrl-C stops the consumers first; the emulator is stopped last, by us
                server = stack.enter_context(running_server(port))
        except (RuntimeError, TimeoutError) as error:
            raise OpsError(f"the emulator did not start (port {port} in use?): {error}") from error
        click.echo(f"local AWS emulator (moto_server) at {server.endpoint}")
        assembly = Path(tempfile.mkdtemp(prefix="jobqueues-local-cdk.out-"))
        stack.callback(shutil.rmtree, assembly, ignore_errors=True)
        click.echo("cdk synth, bootstrap, deploy '**' ...")
        started = time.monotonic()
        try:
            report = deploy_app(server, Path.cwd(), app, assembly, check_synthesized=check_synthesized)
        except DeployError as error:
            raise OpsError(str(error)) from error
        click.echo(format_report(report))
        job_types = discover(server.client("cloudformation")).job_types
        for note in adopted_queue_notes(job_types, server.client("sqs"), server.endpoint):  # no stack creates them
            click.echo(note)
        click.echo(f"deployed in {time.monotonic() - started:.0f} s")
        click.echo(f"export AWS_ENDPOINT_URL={server.endpoint}")
        yield server


@click.group("local")
def command() -> None:
    """Your CDK app on the embedded emulator: no AWS account, no Docker (needs cdk-jobqueues[local])."""


@command.command("deploy")
@click.option("--app", default=None, help=APP_HELP)
@click.option("--port", type=int, default=None, help=PORT_HELP)
@click.option("--keep-running", is_flag=True, help="Leave the emulator up until Ctrl-C, to inspect it.")
@click.option("--demo", is_flag=True, help="Then run the demo (the example app: make local).")
@click.option(
    "--logs", type=click.Path(path_type=Path), default=Path("demo-logs"), show_default=True, help="The demo's logs."
)
def deploy(app: str | None, port: int | None, keep_running: bool, demo: bool, logs: Path) -> int:
    """Deploy every stack of the app in the current directory to the emulator, and verify it."""
    if demo:
        _check_directory("--logs", logs)
    stopped = False
    with _deployed(app, port) as server:
        if demo:
            from jobqueues.emulator.demo import DemoError, run_demo
            from jobqueues.emulator.deployed import DeployedError

            click.echo("\ndemo: the deployed consumers at work")
            try:
                result = run_demo(server, logs_dir=logs.resolve(), out=click.echo)
            except (DemoError, DeployedError) as error:
                raise OpsError(str(error)) from error
            if not result.ok:
                return EXIT_FAILED
        if keep_running:
            click.echo("emulator running (Ctrl-C to stop)")
            try:
                while server.process.poll() is None:
                    time.sleep(1)
            except KeyboardInterrupt:  # how it ends: 130, as `local up`'s Ctrl-C (docs/cli.md's exit statuses)
                stopped = True
    if stopped:
        click.echo("interrupted: the emulator is stopped")
        return EXIT_INTERRUPTED
    if not keep_running:  # the endpoint printed above is gone with the emulator
        click.echo(
            "emulator stopped. Next: `jobqueues local up` in your app's directory runs its consumers here "
            "(README: Run your own app locally); `--keep-running` keeps the emulator up to inspect it"
        )
    return 0


@command.command("up")
@click.option("--app", default=None, help=APP_HELP)
@click.option("--port", type=int, default=None, help=PORT_HELP)
@click.option(
    "--handlers",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The ECS workers' handler directory. Default: each EcsJob's image_directory (and its handlers/).",
)
@click.option("--chaos", type=click.FloatRange(0, 1), default=None, metavar="RATE", help="SQS faults and kills.")
@click.option(
    "--chaos-seed",
    type=int,
    default=0,
    show_default=True,
    help="Random number seed: which requests fault and which workers die (the same seed repeats a run).",
)
@click.option(
    "--until-idle",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Exit once every consumed queue is empty, nothing is in flight and no worker runs, for SECONDS.",
)
@click.option(
    "--scale-in-after",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help=f"Seconds of a smaller backlog before ECS workers stop. Default {SCALE_IN_AFTER_S:g}.",
)
@click.option(
    "--env",
    "local_env",
    multiple=True,
    metavar="[JOB_TYPE:]NAME=VALUE",
    callback=_local_env,
    help="A local-only variable for every consumer, or for JOB_TYPE's (repeatable); the consumers get their "
    "deployed environment, not the shell's.",
)
@click.option(
    "--logs",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".jobqueues/logs"),
    show_default=True,
    help="Where each consumer process's output is kept (EMF lines alone under DIR/emf, for jobstats).",
)
def up(
    app: str | None,
    port: int | None,
    handlers: Path | None,
    chaos: float | None,
    chaos_seed: int,
    until_idle: float | None,
    scale_in_after: float | None,
    local_env: LocalEnv,
    logs: Path,
) -> int:
    """Deploy the app, then run its consumers locally until Ctrl-C: ECS workers scaled like the deployed
    service, Lambda functions through an event-source driver, their logs in the emulator's CloudWatch Logs."""
    _check_directory("--logs", logs)
    from jobqueues.emulator.consumers.local_env import check_synthesized

    with _deployed(app, port, lambda assembly: check_synthesized(local_env, assembly)) as server:
        logs = logs.resolve()
        runner, chaos_run = _consumers(server, local_env, logs, handlers, scale_in_after, chaos, chaos_seed)
        if chaos_run is not None:
            chaos_run.start(runner.worker_processes)
            click.echo(f"chaos: {chaos:g} of SQS requests faulted through {chaos_run.endpoint}, kills every 15 s")
        started = time.monotonic()
        try:
            runner.start()
            click.echo(f"consumers running (logs: {logs}); Ctrl-C stops them")
            status = watch(runner, until_idle)
        finally:
            problems = runner.stop()
            if chaos_run is not None:
                chaos_run.stop()
        for problem in problems:
            click.echo(f"warning: {problem}", err=True)
        summary(runner, time.monotonic() - started)
        if chaos_run is not None:
            chaos_report(chaos_run, runner, server)
        return status


def _consumers(
    server: LocalServer,
    local_env: LocalEnv,
    logs: Path,
    handlers: Path | None,
    scale_in_after: float | None,
    chaos: float | None,
    chaos_seed: int,
) -> tuple[ConsumerRunner, Chaos | None]:
    """The deployed app's consumers, not started yet, and the chaos run between them and the emulator (``None``
    without ``--chaos``)."""
    from jobqueues.emulator.consumers.local_env import environments
    from jobqueues.emulator.consumers.runner import ConsumerRunner
    from jobqueues.emulator.server import Emulator
    from jobqueues.ops.discovery import discover

    found = discover(server.client("cloudformation"))
    job_types = found.job_types
    consumed = [job.name for job in job_types if job.consumer is not None]
    environment = environments(local_env, found, consumed)
    logs.mkdir(parents=True, exist_ok=True)
    chaos_run: Chaos | None = None
    endpoint: Emulator = server
    if chaos is not None:
        from jobqueues.emulator.chaos import Chaos

        chaos_run = Chaos(server.endpoint, rate=chaos, seed=chaos_seed)
        endpoint = Emulator(chaos_run.endpoint)
    runner = ConsumerRunner(
        server,
        job_types,
        app_dir=Path.cwd(),
        logs_dir=logs,
        code_dir=Path.cwd() / ".jobqueues" / "lambda-code",
        endpoint=endpoint,
        handlers=handlers,
        scale_in_after_s=SCALE_IN_AFTER_S if scale_in_after is None else scale_in_after,
        out=click.echo,
        environment=environment,
    )
    return runner, chaos_run
