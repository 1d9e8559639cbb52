"""How every ``jobqueues`` command ends when AWS cannot be asked: one line and an exit status, never a traceback.

GIVEN no credentials, an unreachable endpoint or an AccessDenied, WHEN a command runs, THEN stderr holds one line
``error: ...`` saying what to do and the exit status is 3 (docs/cli.md, "Exit statuses"); Ctrl-C is 130.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from botocore.exceptions import ClientError
from support.not_aws import not_aws

from jobqueues.cli import main
from jobqueues.cli.app import cli
from jobqueues.cli.context import Aws, pass_aws, run_command
from jobqueues.emulator.server import LocalServer
from jobqueues.ops import timeouts
from jobqueues.ops.errors import EXIT_AWS, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, aws_error
from jobqueues.profiles_document import PROFILES_FIELD, SUPPORTED_SCHEMA_VERSION

JOBQUEUES = Path(sys.executable).parent / "jobqueues"


def _closed_port() -> int:
    """A localhost port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _no_aws_environment(**extra: str) -> dict[str, str]:
    """The environment without any AWS credential source, so boto3 finds none (and asks no metadata service)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    environment.update(
        AWS_CONFIG_FILE="/nonexistent/config",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent/credentials",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_REGION="us-east-1",
        **extra,
    )
    return environment


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_an_unreachable_endpoint_is_one_line_and_exit_3() -> None:
    # GIVEN an endpoint nothing listens on, WHEN the console script asks it for the job types
    url = f"http://localhost:{_closed_port()}"
    done = subprocess.run(
        [str(JOBQUEUES), "--endpoint-url", url, "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_no_aws_environment(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing"),
    )
    # THEN one line names the endpoint, and the status is 3
    assert done.returncode == EXIT_AWS, done
    line = _one_error_line(done.stderr)
    assert url in line and "is it running?" in line
    # AND the URL ends at a blank, so that a double-click copies it alone (not "/:" with it)
    assert any(word in (url, f"{url}/") for word in line.split()), line


def test_missing_credentials_are_one_line_and_exit_3() -> None:
    done = subprocess.run(
        [str(JOBQUEUES), "status"], capture_output=True, text=True, timeout=120, env=_no_aws_environment()
    )
    assert done.returncode == EXIT_AWS, done
    line = _one_error_line(done.stderr)
    assert "no AWS credentials" in line and "--endpoint-url" in line


def test_access_denied_names_the_operation() -> None:
    error = ClientError(
        {"Error": {"Code": "AccessDenied", "Message": "User: arn:aws:iam::1:user/x is not authorized"}},
        "ListStacks",
    )
    translated = aws_error(error)
    assert translated is not None and translated.exit_status == EXIT_AWS
    assert str(translated) == "access denied to ListStacks: User: arn:aws:iam::1:user/x is not authorized"


def test_other_client_errors_are_failures_not_aws_unavailable() -> None:
    error = ClientError({"Error": {"Code": "QueueDoesNotExist", "Message": "gone"}}, "GetQueueAttributes")
    translated = aws_error(error)
    assert translated is not None and translated.exit_status == 1
    assert aws_error(ValueError("not AWS")) is None


def _group_raising(error: BaseException) -> click.Group:
    @click.group()
    @click.pass_context
    def group(ctx: click.Context) -> None:
        ctx.obj = Aws()

    @group.command()
    @pass_aws
    def boom(aws: Aws) -> None:
        raise error

    return group


def test_ctrl_c_is_exit_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(_group_raising(KeyboardInterrupt()), ["boom"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip() == "interrupted"


def test_a_bug_is_not_swallowed() -> None:
    # An exception that is neither an operation error nor AWS's is a bug: its traceback must reach the user.
    with pytest.raises(ZeroDivisionError):
        run_command(_group_raising(ZeroDivisionError()), ["boom"])


def test_a_wrong_option_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--no-such-option"]) == EXIT_USAGE
    assert "No such option" in capsys.readouterr().err


def test_every_command_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    listed: Any = capsys.readouterr().out
    for command in ("status", "dlq", "send", "drift", "local"):
        assert f"  {command} " in listed, listed


# Every command against endpoints that answer but are not AWS, with the AWS options after the subcommand.

#: What each command needs to reach AWS (its required arguments). A command of the CLI missing here fails
#: test_the_matrix_covers_every_command, so a new command is tested against every endpoint below too.
REACHES_AWS: dict[tuple[str, ...], list[str]] = {
    ("status",): [],
    ("dlq", "list"): ["Invoices"],
    ("dlq", "redrive"): ["Invoices"],
    ("dlq", "purge"): ["Invoices", "--yes"],
    ("send",): ["Invoices", "--body", "{}"],
    ("drift",): ["--profiles", "{profiles}"],
}
#: Commands that reach no endpoint of yours: ``local`` starts its own emulator.
OWN_EMULATOR = ("local",)


def leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command under ``group`` that is not a group itself."""
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += leaf_commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_the_matrix_covers_every_command() -> None:
    commands = {path for path in leaf_commands(cli) if path[0] not in OWN_EMULATOR}
    assert commands == set(REACHES_AWS)


@pytest.fixture
def team_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No AWS variable of this machine; a config file with profile ``team`` (access key TEAMKEY, region
    us-east-1); one attempt per request (botocore would retry a connection error with backoff); a profiles.json."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    config = tmp_path / "config"
    config.write_text(
        "[profile team]\naws_access_key_id = TEAMKEY\naws_secret_access_key = secret\nregion = us-east-1\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    (tmp_path / "profiles.json").write_text(
        json.dumps({"schema_version": SUPPORTED_SCHEMA_VERSION, PROFILES_FIELD: {}})
    )
    yield tmp_path


def run_in_process(path: tuple[str, ...], endpoint: str, directory: Path, *options: str) -> list[str]:
    arguments = [a.replace("{profiles}", str(directory / "profiles.json")) for a in REACHES_AWS[path]]
    return [*path, *arguments, "--endpoint-url", endpoint, *options]


#: Each endpoint kind: the answer of the server (None: a port nothing listens on), the URL's scheme, the exit
#: status, and what the one line says (every part).
ENDPOINTS: dict[str, tuple[str | None, str, int, tuple[str, ...]]] = {
    "error page 501": ("error page 501", "http", EXIT_AWS, ("is not AWS: it answered with an HTML page (HTTP 501)",)),
    "welcome page 200": (
        "welcome page 200", "http", EXIT_AWS, ("is not AWS: it answered with an HTML page (HTTP 200)",)
    ),
    "empty 404": ("empty 404", "http", EXIT_AWS, ("is not AWS: it answered HTTP 404 without an AWS error",)),
    "closed connection": ("closed connection", "http", EXIT_AWS, ("closed the connection without an answer",)),
    "https to http": ("error page 501", "https", EXIT_AWS, ("TLS failed",)),
    "closed port": (None, "http", EXIT_AWS, ("is it running?",)),
    "no scheme": ("error page 501", "", EXIT_USAGE, ("is not a URL",)),
    # answers botocore parsed into a KeyError traceback, an error with an empty code, or a line naming no endpoint
    "xml 200": (
        "xml 200", "http", EXIT_AWS, ("is not AWS: it answered ListStacks with HTTP 200 (text/xml)", "<hello/>")
    ),
    "xml error 500": (
        "xml error 500",
        "http",
        EXIT_AWS,
        ("is not AWS: it answered ListStacks with HTTP 500 (text/xml), an error not in AWS's error format", "it broke"),
    ),
    "empty 200": ("empty 200", "http", EXIT_AWS, ("is not AWS: it answered ListStacks with HTTP 200", "an empty body")),
    "json 200": ("json 200", "http", EXIT_AWS, ("is not AWS: it answered ListStacks", '{"hello": "world"}')),
    "json 400": ("json 400", "http", EXIT_AWS, ("is not AWS: it answered ListStacks with HTTP 400", "nope")),
    "text 502": ("text 502", "http", EXIT_AWS, ("is not AWS: it answered ListStacks with HTTP 502", "Bad Gateway")),
    # a port that takes the request and never answers: the clients' read timeout (made short here) ends it
    "no answer": ("no answer", "http", EXIT_AWS, ("did not answer within 0.5 s",)),
}  # fmt: skip


@pytest.mark.parametrize("path", sorted(REACHES_AWS), ids="-".join)
@pytest.mark.parametrize("kind", sorted(ENDPOINTS))
def test_every_command_says_what_is_wrong_with_an_endpoint_in_one_line(
    path: tuple[str, ...],
    kind: str,
    team_profile: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer, scheme, status, says = ENDPOINTS[kind]
    if kind == "no answer":  # made short where the timeout is what is checked (the real one, 10 s, is below);
        # an answer that comes is given the real one: on a loaded machine a prompt answer took over 0.5 s
        monkeypatch.setattr(timeouts, "READ_TIMEOUT_S", 0.5)
    # GIVEN an endpoint of that kind, and the AWS options after the subcommand, as the AWS CLI takes them
    with not_aws(answer or "error page 501") as server:
        host = server.url.removeprefix("http://") if answer is not None else f"127.0.0.1:{_closed_port()}"
        endpoint = f"{scheme}://{host}" if scheme else host
        options = ("--region", "eu-west-2", "--profile", "team")
        # WHEN the command runs
        exit_status = main(run_in_process(path, endpoint, team_profile, *options))
    # THEN one line says what is wrong with the endpoint, with its exit status (docs/cli.md)
    err = capsys.readouterr().err
    assert exit_status == status, err
    line = _one_error_line(err)
    assert host in line and all(part in line for part in says), line
    # ... and the requests that reached the server were signed with the profile's key, for the region asked
    assert set(server.scopes) <= {("TEAMKEY", "eu-west-2")}
    assert bool(server.scopes) == (answer is not None and scheme == "http"), server.scopes


def test_the_clients_wait_seconds_not_minutes_for_an_answer() -> None:
    # botocore's own 60 s read timeout, 3 attempts, kept a command 3 minutes on a port that never answered
    aws = Aws(endpoint_url="http://localhost:4566")
    config = aws.client("sqs").meta.config
    assert (config.connect_timeout, config.read_timeout) == (timeouts.CONNECT_TIMEOUT_S, timeouts.READ_TIMEOUT_S)
    assert (timeouts.CONNECT_TIMEOUT_S, timeouts.READ_TIMEOUT_S) == (5, 10)


def test_an_endpoint_without_a_scheme_names_the_variable_it_came_from(
    team_profile: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "localhost:4566")
    assert main(["status"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "error: AWS_ENDPOINT_URL=localhost:4566 is not a URL: write http://localhost:4566 (the emulator) or "
        "https://HOST\n"
    )


def test_an_unknown_profile_names_those_that_exist(team_profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--profile", "taem"]) == EXIT_USAGE
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("error: no AWS profile taem") and line.endswith("; profiles: team"), line


@pytest.mark.parametrize(
    ("arguments", "region"),
    [
        (["--region", "eu-west-1", "status"], "eu-west-1"),
        (["status", "--region", "eu-west-2"], "eu-west-2"),
        (["--region", "eu-west-1", "status", "--region", "eu-west-2"], "eu-west-2"),  # the later one, as the AWS CLI
        (["--profile", "team", "dlq", "list", "X"], "us-east-1"),  # the profile's region
        (["dlq", "list", "X", "--profile", "team"], "us-east-1"),
    ],
)
def test_region_and_profile_are_taken_before_or_after_the_subcommand(
    arguments: list[str], region: str, team_profile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with not_aws("empty 404") as server:
        main(["--endpoint-url", server.url, *arguments])
    assert server.scopes and set(server.scopes) == {("TEAMKEY" if "team" in arguments else "testing", region)}


def test_the_https_mistake_is_one_line_from_the_console_script() -> None:
    # GIVEN https:// on a port that speaks plain HTTP (the emulator's): 120 lines of SSL traceback before
    with not_aws("error page 501") as server:
        https = server.url.replace("http://", "https://")
        done = subprocess.run(
            [str(JOBQUEUES), "dlq", "redrive", "Invoices", "--dry-run", "--endpoint-url", https],
            capture_output=True,
            text=True,
            timeout=120,
            env=_no_aws_environment(AWS_MAX_ATTEMPTS="1"),
        )
    assert done.returncode == EXIT_AWS, done
    assert "TLS failed" in _one_error_line(done.stderr)


# Paths outside AWS where an exception could escape: a closed output, a file that is not text, no input at all.


@pytest.mark.parametrize("arguments", [["--help"], ["status"], ["status", "--json"]])
def test_output_to_a_closed_pipe_is_status_1_without_a_traceback(arguments: list[str], local_aws: LocalServer) -> None:
    # GIVEN a reader that went away before the command wrote (`jobqueues status | head -1` once head has its line)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [str(JOBQUEUES), "--endpoint-url", local_aws.endpoint, *arguments],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=_no_aws_environment(),
        )
    finally:
        os.close(write_end)
    # THEN it ends quietly, status 1 (docs/cli.md): what was left to print is dropped
    assert (done.returncode, done.stderr) == (EXIT_FAILED, "")


def test_a_file_that_is_not_utf8_sends_nothing_and_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_bytes(b'{"id": 1}\n{"id": 2}\n{"name": "caf\xe9"}\n')  # Latin-1, not UTF-8
    # No endpoint is asked: the file is read whole, and refused, before anything is sent.
    status = main(["send", "Invoices", "--file", str(jobs), "--endpoint-url", f"http://localhost:{_closed_port()}"])
    assert status == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"error: --file {jobs}: line 3 is not UTF-8 text (byte 0xe9 at column 14): nothing sent\n"
    )


def closed_stdin() -> None:
    """In the child before exec: standard input closed, as `jobqueues ... <&-` runs it."""
    os.close(0)


def test_a_file_from_a_closed_standard_input_is_one_line() -> None:
    done = subprocess.run(
        [str(JOBQUEUES), "send", "Invoices", "--file", "-", "--endpoint-url", f"http://localhost:{_closed_port()}"],
        preexec_fn=closed_stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=_no_aws_environment(),
    )
    assert done.returncode == EXIT_USAGE, done
    assert _one_error_line(done.stderr) == "error: --file -: standard input is closed: nothing to send"


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["send", "Invoices", "--file", str(tmp_path / "missing.jsonl")])
    assert status == EXIT_USAGE
    assert _one_error_line(capsys.readouterr().err) == (
        f"error: --file {tmp_path / 'missing.jsonl'}: No such file or directory"
    )


def test_ctrl_c_while_the_command_loads_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.abc

    # GIVEN Ctrl-C while the command's modules are imported (its first half second)
    class CtrlCOnImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> None:
            if name == "jobqueues.cli.app":
                raise KeyboardInterrupt

    for name in [m for m in sys.modules if m.startswith("jobqueues.cli.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [CtrlCOnImport(), *sys.meta_path])
    # WHEN the console script runs THEN one line and the interrupted status, as later, never a traceback
    assert main(["status"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
