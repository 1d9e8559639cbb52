"""What every command shares: the AWS clients (endpoint, region, profile), discovery, and how errors end."""

from __future__ import annotations

import functools
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlparse

import click
from click.core import ParameterSource

from jobqueues.ops.discovery import Discovery, JobType, discover
from jobqueues.ops.endpoint import endpoint_problem, guard
from jobqueues.ops.errors import EXIT_INTERRUPTED, BadInput, OpsError, aws_error
from jobqueues.ops.queues import name_missing_queues
from jobqueues.ops.timeouts import client_config

#: Hosts of a local endpoint (the emulator): credentials and region default to ``testing`` and LOCAL_REGION.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
LOCAL_REGION = "us-east-1"


@dataclass(frozen=True)
class AwsOption:
    """One of the options every command takes, before or after its name (as the AWS CLI takes its globals)."""

    flag: str
    attribute: str  # of :class:`Aws`
    envvar: str
    metavar: str
    help: str


#: The AWS options: their one definition (:func:`aws_parameters` makes the group's and each command's).
AWS_OPTIONS = (
    AwsOption(
        "--endpoint-url",
        "endpoint_url",
        "AWS_ENDPOINT_URL",
        "URL",
        "AWS endpoint, e.g. the local emulator's http://localhost:4566. Default: $AWS_ENDPOINT_URL, else AWS.",
    ),
    AwsOption("--region", "region", "AWS_REGION", "REGION", "AWS region. Default: boto3's (AWS_REGION, config)."),
    AwsOption("--profile", "profile", "AWS_PROFILE", "PROFILE", "AWS profile. Default: boto3's (AWS_PROFILE)."),
)


@dataclass
class Aws:
    """AWS clients for one endpoint, region and profile; ``None`` s mean botocore's defaults (as boto3's).
    ``sources``: where each value came from (its option or variable), for the error that names it."""

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        """A client for ``service`` (botocore's, as boto3 makes it), made once; a bad endpoint is a
        :class:`BadInput` before any request."""
        if service not in self._clients:
            if self.endpoint_url is not None:
                problem = endpoint_problem(self.endpoint_url, self.sources.get("endpoint_url", "--endpoint-url"))
                if problem is not None:
                    raise BadInput(problem)
            session = _botocore_session(self.profile)
            region = self.region or session.get_config_variable("region")
            local: dict[str, str] = {}
            if self.endpoint_url and urlparse(self.endpoint_url).hostname in LOCAL_HOSTS:
                # The emulator takes any credentials, in its one region: none configured is no reason to fail.
                if session.get_credentials() is None:
                    local.update(aws_access_key_id="testing", aws_secret_access_key="testing")
                region = region or LOCAL_REGION
            client = session.create_client(
                service, region_name=region, endpoint_url=self.endpoint_url, config=client_config(), **local
            )
            self._clients[service] = name_missing_queues(guard(client)) if service == "sqs" else guard(client)
        return self._clients[service]

    def discover(self, stacks: tuple[str, ...] | list[str] = ()) -> Discovery:
        """The job types of the deployed stacks (all, or ``stacks``)."""
        return discover(self.client("cloudformation"), list(stacks) or None)

    def job_type(self, name: str, stack: str | None = None) -> JobType:
        """One job type by name (or ``STACK/NAME``), in ``stack`` when given. Every stack is read, as for
        ``STACK/NAME``: a line for a name not found says where it is (:mod:`jobqueues.ops.unknown_names`)."""
        return self.discover().find(name, stack)


def _one_stack(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> str | None:
    """``--stack`` of one stack: click's last-one-wins would act on one stack of two silently (the same stack
    given twice is that stack)."""
    if len(set(values)) > 1:
        raise BadInput(f"--stack given {len(values)} times ({', '.join(values)}): give one stack")
    return values[0] if values else None


#: ``--stack`` of the commands that act on one job type (``send``, ``dlq list|redrive|purge``).
STACK_OPTION = click.option(
    "--stack",
    multiple=True,
    callback=_one_stack,
    metavar="STACK",
    help="The job type's stack, when two have it (or name the job type STACK/JOB_TYPE).",
)


def _botocore_session(profile: str | None) -> Any:
    """A new botocore session (of ``profile``, default botocore's) that reads botocore's model and endpoint files
    through :func:`_data_loader`. A client needs nothing boto3 adds to botocore's (its resources, S3's transfers)."""
    import botocore.session

    session = botocore.session.Session(profile=profile)
    session.register_component("data_loader", _data_loader(session.get_config_variable("data_path")))
    return session


@functools.cache
def _data_loader(data_path: str | None) -> Any:
    """botocore's loader of its data files, one a process: each new session's own would parse the files again
    (about 0.1 s of CPU for a client), and a process that runs several commands (a test's) makes a session each.
    What it loads is read only, as when one session's clients share it."""
    from botocore.loaders import create_loader

    return create_loader(data_path)


def aws_parameters(read_environment: bool) -> list[click.Option]:
    """:data:`AWS_OPTIONS` as click options that set the context's :class:`Aws`. The group's read the
    environment too (``read_environment``); a command's are given on its command line only, and win over the
    group's, so ``jobqueues status --region R`` and ``jobqueues --region R status`` are one command."""

    def setter(option: AwsOption) -> Any:
        def store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
            if value is None:
                return
            aws = ctx.ensure_object(Aws)
            setattr(aws, option.attribute, value)
            from_environment = ctx.get_parameter_source(str(param.name)) == ParameterSource.ENVIRONMENT
            aws.sources[option.attribute] = option.envvar if from_environment else option.flag

        return store

    return [
        click.Option(
            [option.flag],
            envvar=option.envvar if read_environment else None,
            default=None,
            metavar=option.metavar,
            help=option.help,
            expose_value=False,
            callback=setter(option),
        )
        for option in AWS_OPTIONS
    ]


def given_aws_options(ctx: click.Context) -> list[str]:
    """The AWS options given on ``ctx``'s command line (not from the environment)."""
    return [
        option.flag
        for option in AWS_OPTIONS
        if ctx.get_parameter_source(option.flag.lstrip("-").replace("-", "_")) == ParameterSource.COMMANDLINE
    ]


def pass_aws(function: Any) -> Any:
    """Give a command the :class:`Aws` of the group as its first argument."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(click.get_current_context().find_object(Aws), *args, **kwargs)

    return wrapper


def run_command(group: click.Command, argv: list[str]) -> int:
    """Run ``group`` on ``argv``: an :class:`OpsError` or an AWS failure is one line on stderr and its exit
    status; Ctrl-C is 130. Returns the exit status (the console script exits with it)."""
    try:
        result = group.main(args=argv, prog_name="jobqueues", standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except OpsError as error:
        click.echo(f"error: {error}", err=True)
        return error.exit_status
    except Exception as error:
        translated = aws_error(error)
        if translated is None:
            raise
        click.echo(f"error: {translated}", err=True)
        return translated.exit_status
    # A command returns its exit status (drift's 1), or None for 0.
    return result if isinstance(result, int) else 0


def ctrl_c_interrupts() -> None:
    """Ctrl-C raises ``KeyboardInterrupt``, even when a script started the command in the background, where SIGINT
    comes ignored (or blocked): for ``local``, which Ctrl-C ends. Main thread only."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


#: Seconds between two looks at a recorded Ctrl-C: how soon its line comes, and a wait on the stop event ends.
CTRL_C_LOOK_S = 0.1


class CtrlCStop(threading.Event):
    """A command's stop event, set by Ctrl-C (:func:`ctrl_c_sets`) through a flag. The signal handler
    (:meth:`press`) only records the press: it runs on the main thread between two of its steps, maybe inside
    ``Event.wait`` with this event's lock held (setting the event there waits for good for a lock its own thread
    holds) or inside a write to stderr (printing there raises ``RuntimeError: reentrant call``). A look
    (:meth:`is_set`, :meth:`wait`) turns a recorded press into ``saying()`` on stderr (what stopping does; nothing
    for ``None``), then the set event, once: the command's own looks (so it stops at its first look after the
    press) and :func:`ctrl_c_sets`'s thread's, every :data:`CTRL_C_LOOK_S` seconds (so the line comes while a
    request is in flight). No look answers ``True`` before the line is out."""

    def __init__(self, saying: Callable[[], str] | None) -> None:
        super().__init__()
        self.saying = saying
        self.pressed = False  # written by the signal handler: a plain store, no lock
        self._acting = threading.Lock()  # taken by looks only, never in the handler

    def press(self, signum: int = signal.SIGINT, frame: Any = None) -> None:
        """The SIGINT handler: a first press is recorded; a second one raises ``KeyboardInterrupt`` at once."""
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True

    def is_set(self) -> bool:
        """Whether the command should stop (a recorded press acted on first)."""
        if self.pressed and not super().is_set():
            with self._acting:
                if not super().is_set():
                    try:
                        if self.saying is not None:
                            click.echo(self.saying(), err=True)
                    finally:
                        super().set()
        return super().is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Up to ``timeout`` seconds (default: until set) for the stop; whether it came."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = CTRL_C_LOOK_S if end is None else min(CTRL_C_LOOK_S, end - time.monotonic())
            if left <= 0:
                return False
            super().wait(left)
        return True


@contextmanager
def ctrl_c_sets(saying: Callable[[], str] | None) -> Iterator[CtrlCStop]:
    """While inside, a first Ctrl-C sets the :class:`CtrlCStop` it gives, which prints ``saying()`` (what
    stopping does; nothing for ``None``) on stderr within :data:`CTRL_C_LOOK_S` seconds; a second one raises
    ``KeyboardInterrupt`` at once. Ctrl-C is taken even where it came ignored or blocked (a command a script
    started in the background). Main thread only (where handlers run)."""
    stop = CtrlCStop(saying)
    done = threading.Event()

    def look() -> None:  # the line while the main thread waits on a request, not at its next look
        while not done.wait(CTRL_C_LOOK_S):
            stop.is_set()

    looking = threading.Thread(target=look, name="jobqueues-ctrl-c", daemon=True)
    previous = signal.signal(signal.SIGINT, stop.press)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    looking.start()
    try:
        yield stop
        stop.is_set()  # a press during the command's last step: its line, as any press's
    finally:
        done.set()
        looking.join()
        signal.signal(signal.SIGINT, previous)


def standard_input() -> TextIO | None:
    """``sys.stdin``, or ``None`` when there is none to read (closed: ``jobqueues ... <&-``)."""
    stdin = sys.stdin
    if stdin is None:
        return None
    try:
        stdin.fileno()
    except (OSError, ValueError):  # closed, or detached
        return None
    return stdin


def messages(count: int) -> str:
    """``1 message``, ``1,200 messages``."""
    return f"{count:,} message" if count == 1 else f"{count:,} messages"  # 1,200, as status prints counts
