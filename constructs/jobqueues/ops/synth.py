"""Running the ``cdk`` CLI on a user's app, in the app's own directory (``jobqueues local``, ``drift --app``).

``cdk`` runs in the app's directory, so its ``cdk.json`` and context apply; the app command is ``--app`` or
``cdk.json``'s ``app``, run with the interpreter ``jobqueues`` runs on (its directory goes first on ``PATH``, so
the command's ``python`` is ``sys.executable``). No aws_cdk is imported here: the app runs as a process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.ops.errors import OpsError

#: Lines of cdk's output kept in an error.
ERROR_TAIL_LINES = 15
#: The ECS jobs' image where nothing is built (context ``jobqueues:image``): ``jobqueues local`` (whose workers
#: run as local processes) and ``drift --app`` (which reads the queues only). No Docker, no Dockerfile needed.
UNBUILT_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
#: A checkout of this repository (an editable install): its ``node_modules`` holds the pinned cdk CLI.
CHECKOUT_DIR = Path(__file__).resolve().parents[3]


class SynthError(OpsError):
    """The app could not be found, or cdk failed on it; the message says what to do (exit status 1)."""


def app_command(app_dir: Path, app: str | None) -> str:
    """``app``, else ``cdk.json``'s ``app`` in ``app_dir``."""
    if app:
        return app
    cdk_json = app_dir / "cdk.json"
    if not cdk_json.exists():
        raise SynthError(f'no cdk.json in {app_dir}: run in your CDK app\'s directory, or pass --app "python app.py"')
    try:
        command = json.loads(cdk_json.read_text()).get("app")
    except ValueError as error:
        raise SynthError(f"{cdk_json} is not JSON: {error}") from error
    if not command:
        raise SynthError(f'{cdk_json} has no "app": pass --app "python app.py"')
    return str(command)


def find_cdk(app_dir: Path) -> str:
    """The ``cdk`` CLI: the app's ``node_modules``, else this checkout's, else ``cdk`` on ``PATH``."""
    for candidate in (app_dir / "node_modules" / ".bin" / "cdk", CHECKOUT_DIR / "node_modules" / ".bin" / "cdk"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("cdk")
    if found is None:
        raise SynthError(
            "the cdk CLI was not found (./node_modules/.bin/cdk, or cdk on PATH): "
            "run `npm install aws-cdk@2` in your app's directory"
        )
    return found


def run_cdk(app_dir: Path, what: str, args: list[str], environment: Mapping[str, str] | None = None) -> None:
    """``cdk <args>`` in ``app_dir``, with ``environment`` over this one's; :class:`SynthError` naming ``what``
    with the end of cdk's output. ``JOBQUEUES_VERBOSE=1`` shows all of it."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CI": "true",  # no interactive progress bars
        **(environment or {}),
        "PATH": path,
    }
    command = [find_cdk(app_dir), *args, "--no-notices", "--no-version-reporting"]
    completed = subprocess.run(command, cwd=app_dir, env=env, capture_output=True, text=True)
    if os.environ.get("JOBQUEUES_VERBOSE"):
        sys.stderr.write(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-ERROR_TAIL_LINES:])
        raise SynthError(f"{what} failed (cdk exit status {completed.returncode}):\n{tail}")


def synth(
    app_dir: Path,
    app: str | None,
    output_dir: Path,
    context: Mapping[str, str] | None = None,
    environment: Mapping[str, str] | None = None,
) -> Path:
    """``cdk synth`` of the app in ``app_dir`` (every stack, Stages too) into ``output_dir``; returns it.

    :param app: the app command. Default: ``cdk.json``'s ``app``.
    :param context: ``--context`` values. Default: none.
    :param environment: variables set for cdk and the app. Default: none.
    """
    command = app_command(app_dir, app)
    arguments = ["synth", "--quiet", "--app", command, "--output", str(output_dir)]
    for key, value in (context or {}).items():
        arguments += ["--context", f"{key}={value}"]
    run_cdk(app_dir, f"the app `{command}`", arguments, environment)
    return output_dir


def synth_unbuilt(
    app_dir: Path, app: str | None, output_dir: Path, environment: Mapping[str, str] | None = None
) -> Path:
    """:func:`synth` with every ``EcsJob`` without ``image=`` given :data:`UNBUILT_IMAGE` (context
    ``jobqueues:image``) instead of an image built from its ``image_directory``: for what never runs the image
    (``jobqueues local``, ``drift --app``), so an app with no Dockerfile yet needs nothing in its ``cdk.json``."""
    return synth(app_dir, app, output_dir, context={IMAGE_CONTEXT: UNBUILT_IMAGE}, environment=environment)
