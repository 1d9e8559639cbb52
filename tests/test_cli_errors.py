"""How every ``jobqueues`` command ends when AWS cannot be asked: one line and an exit status, never a traceback.

GIVEN no credentials, an unreachable endpoint or an AccessDenied, WHEN a command runs, THEN stderr holds one line
``error: ...`` saying what to do and the exit status is 3 (docs/cli.md, "Exit statuses"); Ctrl-C is 130.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from botocore.exceptions import ClientError

from jobqueues.cli import main
from jobqueues.cli.context import Aws, pass_aws, run_command
from jobqueues.ops.errors import EXIT_AWS, EXIT_INTERRUPTED, EXIT_USAGE, aws_error

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
