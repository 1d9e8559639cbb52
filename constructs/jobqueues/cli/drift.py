"""``jobqueues drift --profiles profiles.json [--stack S | --app CMD] [--tolerance 0.25] [--json]``: the CI check of
deployed visibility timeouts against jobstats' measurements (:mod:`jobqueues.ops.drift`)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from jobqueues.cli.context import Aws, given_aws_options, pass_aws
from jobqueues.ops.drift import DEFAULT_TOLERANCE, NO_PROFILE, Drift, compare_all, no_profile_reason
from jobqueues.ops.errors import EXIT_FAILED, BadInput
from jobqueues.ops.profiles import load_profiles, profiles_outside
from jobqueues.ops.queues import Deployed, read_deployed


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g} s"


def table(rows: list[Drift]) -> Table:
    """One row per job type: deployed VT, expected VT, p99s, receives, status."""
    view = Table(title_justify="left")
    for column in ("job type", "VT", "expected VT", "declared p99", "measured p99", "samples", "max rcv", "status"):
        view.add_column(column, justify="left" if column in ("job type", "status") else "right", no_wrap=True)
    for row in rows:
        receives = "-" if row.max_receive_count is None else str(row.max_receive_count)
        if row.recommended_max_receive_count is not None:
            receives += f" (rec. {row.recommended_max_receive_count})"
        status = f"[bold red]{row.status}[/]" if row.drifted else row.status
        view.add_row(
            row.name,
            _seconds(row.visibility_timeout_s),
            _seconds(row.expected_visibility_timeout_s),
            _seconds(row.declared_p99_s),
            _seconds(row.measured_p99_s),
            "-" if row.samples is None else f"{row.samples:,}",
            receives,
            status,
        )
    return view


@click.command("drift")
@click.option(
    "--profiles",
    "profiles_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="jobstats' profiles.json.",
)
@click.option("--stack", "stacks", multiple=True, metavar="STACK", help="Only this deployed stack (repeatable).")
@click.option(
    "--app",
    default=None,
    metavar="CMD",
    help='Compare the app in the current directory, synthesized ("python app.py"), instead of what is deployed.',
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0),
    default=DEFAULT_TOLERANCE,
    show_default=True,
    help="How far above the expected VT a deployed VT may be (0.25: 25 %).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (keys: docs/cli.md).")
@pass_aws
def command(
    aws: Aws, profiles_path: Path, stacks: tuple[str, ...], app: str | None, tolerance: float, as_json: bool
) -> int:
    """Deployed VTs against jobstats' profiles.json (the CI check): exit 1 when one is below the measured need or
    more than 1 + TOLERANCE times above it, with the change to make in stack code; 2 for a bad profiles.json."""
    profiles = load_profiles(profiles_path)
    if app is not None and stacks:
        raise BadInput("--stack reads deployed stacks, --app synthesizes the app: pass one of them")
    ctx = click.get_current_context()
    given = [flag for c in (ctx.parent, ctx) if c is not None for flag in given_aws_options(c)]
    if app is not None and given:  # an AWS variable of the shell is no mistake: only options given here are
        given_once = ", ".join(dict.fromkeys(given))
        raise BadInput(f"{given_once}: not with --app, which synthesizes the app and reads no deployment")
    deployed: dict[str, Deployed] = {}
    if app is not None:
        from jobqueues.ops.assembly import stack_artifacts
        from jobqueues.ops.discovery import discover_templates
        from jobqueues.ops.stack_template import StackTemplate
        from jobqueues.ops.synth import SynthError, synth_unbuilt

        with tempfile.TemporaryDirectory(prefix="jobqueues-drift-") as output:
            # No AWS needed: an app whose env reads CDK_DEFAULT_ACCOUNT/REGION (set by cdk from credentials) gets
            # placeholders where there are none; the queues' numbers do not depend on the account.
            placeholders = {"CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "us-east-1"}
            environment = {name: value for name, value in placeholders.items() if not os.environ.get(name)}
            try:
                synth_unbuilt(Path.cwd(), app, Path(output), environment=environment)
            except SynthError as error:  # 1 is what drift found: an app that cannot be compared is bad input
                raise BadInput(str(error)) from error
            templates = [StackTemplate(a.name, a.template()) for a in stack_artifacts(Path(output))]
        job_types = discover_templates(templates).job_types
    else:
        job_types = aws.discover(stacks).job_types
        deployed = read_deployed(aws.client("sqs"), job_types)
    outside = profiles_outside(profiles, stacks or None)
    rows = compare_all(job_types, {n: e for n, e in profiles.items() if n not in outside}, deployed, tolerance)
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
    else:
        console = Console() if Console().is_terminal else Console(width=200)
        console.print(table(rows))
        for row in rows:
            if row.drifted or row.fixes or row.status == "no_recommendation" or _says_more(row):  # why not compared
                click.echo(f"{row.name}: {row.reason}")
                for fix in row.fixes:
                    click.echo(f"  change: {fix} on job type {row.job_type}")
    if outside:
        names = ", ".join(outside[:3]) + (" ..." if len(outside) > 3 else "")
        several = f"{len(outside)} profiles of stacks" if len(outside) > 1 else "1 profile of a stack"
        click.echo(f"note: not compared: {several} not searched (--stack): {names}", err=as_json)
    drifted = [row.name for row in rows if row.drifted]
    if drifted and not as_json:
        click.echo(f"drift: {len(drifted)} of {len(rows)} job types ({', '.join(drifted)})", err=True)
    return EXIT_FAILED if drifted else 0


def _says_more(row: Drift) -> bool:
    """A ``no_profile`` row whose reason is more than the table's status (a profile shared by two deployments, a
    missing queue): printed under the table like a refusal."""
    return row.status == NO_PROFILE and row.reason != no_profile_reason(row.name)
