"""``jobqueues``: run your own app locally, and operate your job types after ``cdk deploy``.

Every command works against AWS (boto3's default credentials and region) and against the emulator
(``--endpoint-url``, or ``AWS_ENDPOINT_URL``). Job types are found from the deployed stacks' markers
(:mod:`jobqueues.ops.discovery`). Exit statuses: :mod:`jobqueues.ops.errors` (docs/cli.md).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from jobqueues.cli.context import Aws, run_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option(
    "--endpoint-url",
    envvar="AWS_ENDPOINT_URL",
    default=None,
    metavar="URL",
    help="AWS endpoint, e.g. the local emulator's http://localhost:4566. Default: $AWS_ENDPOINT_URL, else AWS.",
)
@click.option("--region", envvar="AWS_REGION", default=None, help="AWS region. Default: boto3's (AWS_REGION, config).")
@click.option("--profile", envvar="AWS_PROFILE", default=None, help="AWS profile. Default: boto3's.")
@click.version_option(package_name="cdk-jobqueues", prog_name="jobqueues")
@click.pass_context
def cli(ctx: click.Context, endpoint_url: str | None, region: str | None, profile: str | None) -> None:
    """Run your CDK app's job types locally, and operate them after `cdk deploy`."""
    ctx.obj = Aws(endpoint_url=endpoint_url, region=region, profile=profile)


def _register() -> None:
    """Add the command modules' commands (each module is one concern)."""
    import importlib

    for name in ("status", "dlq", "send", "drift", "local"):
        cli.add_command(importlib.import_module(f"jobqueues.cli.{name}").command)


_register()


def main(argv: list[str] | None = None) -> Any:
    """The console script: run :func:`cli`, turning operation errors into one line and an exit status."""
    return run_command(cli, argv if argv is not None else sys.argv[1:])
