"""What every command shares: the AWS clients (endpoint, region, profile), discovery, and how errors end."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import click

from jobqueues.ops.discovery import Discovery, JobType, discover
from jobqueues.ops.errors import EXIT_INTERRUPTED, OpsError, aws_error

#: Hosts of a local endpoint (the emulator): credentials and region default to ``testing`` and LOCAL_REGION.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
LOCAL_REGION = "us-east-1"


@dataclass
class Aws:
    """boto3 clients for one endpoint, region and profile; ``None`` s mean boto3's defaults."""

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        """A boto3 client for ``service``, made once."""
        if service not in self._clients:
            import boto3

            session = boto3.Session(profile_name=self.profile, region_name=self.region)
            local: dict[str, str] = {}
            if self.endpoint_url and urlparse(self.endpoint_url).hostname in LOCAL_HOSTS:
                # The emulator takes any credentials, in its one region: none configured is no reason to fail.
                if session.get_credentials() is None:
                    local.update(aws_access_key_id="testing", aws_secret_access_key="testing")
                if session.region_name is None:
                    local["region_name"] = LOCAL_REGION
            self._clients[service] = session.client(service, endpoint_url=self.endpoint_url, **local)
        return self._clients[service]

    def discover(self, stacks: tuple[str, ...] | list[str] = ()) -> Discovery:
        """The job types of the deployed stacks (all, or ``stacks``)."""
        return discover(self.client("cloudformation"), list(stacks) or None)

    def job_type(self, name: str, stack: str | None = None) -> JobType:
        """One job type by name (or ``STACK/NAME``), searched in ``stack`` or every stack."""
        return self.discover([stack] if stack else []).find(name, stack)


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


def messages(count: int) -> str:
    """``1 message``, ``2 messages``."""
    return f"{count} message" if count == 1 else f"{count} messages"
