"""``jobqueues``: run your own app locally, and operate your job types after ``cdk deploy``.

Every command works against AWS (boto3's default credentials and region) and against the emulator
(``--endpoint-url``, or ``AWS_ENDPOINT_URL``). Job types are found from the deployed stacks' markers
(:mod:`jobqueues.ops.discovery`). Exit statuses: :mod:`jobqueues.ops.errors` (docs/cli.md).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from jobqueues.cli.context import Aws, aws_parameters, given_aws_options, run_command
from jobqueues.ops.errors import BadInput


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="cdk-jobqueues", prog_name="jobqueues")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Run your CDK app's job types locally, and operate them after `cdk deploy`."""
    ctx.ensure_object(Aws)
    given = given_aws_options(ctx)
    if ctx.invoked_subcommand in OWN_EMULATOR and given:
        command = ctx.invoked_subcommand
        raise BadInput(f"{', '.join(given)}: not for jobqueues {command}, which runs its own emulator")


cli.params += aws_parameters(read_environment=True)

#: Commands that start their own emulator: the AWS options do not apply to them.
OWN_EMULATOR = ("local",)


def _with_aws_options(command: click.Command) -> None:
    """Give ``command``, and every command under it, the AWS options (one definition: :data:`AWS_OPTIONS`)."""
    command.params += aws_parameters(read_environment=False)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _with_aws_options(sub)


def _register() -> None:
    """Add the command modules' commands (each module is one concern), each with the AWS options."""
    import importlib

    for name in ("status", "dlq", "send", "drift", "local"):
        command = importlib.import_module(f"jobqueues.cli.{name}").command
        if name not in OWN_EMULATOR:
            _with_aws_options(command)
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> Any:
    """The console script: run :func:`cli`, turning operation errors into one line and an exit status."""
    return run_command(cli, argv if argv is not None else sys.argv[1:])
