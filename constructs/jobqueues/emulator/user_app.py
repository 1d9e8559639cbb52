"""Deploy any CDK app to the emulator from its own directory (``jobqueues local deploy|up``, and the tests).

The app is synthesized once into a directory of ours (:func:`jobqueues.ops.synth.synth`: ``cdk`` in the app's
directory, so its ``cdk.json`` and context apply, with this interpreter), then that assembly is bootstrapped and
deployed (``cdk deploy '**'``: the stacks of every Stage), and verified (:func:`jobqueues.emulator.deploy.verify`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from jobqueues.emulator.deploy import LOCAL_ACCOUNT, LOCAL_REGION, DeployReport, verify
from jobqueues.emulator.server import LocalServer
from jobqueues.ops.synth import SynthError, app_command, find_cdk, run_cdk, synth_unbuilt

__all__ = ["app_command", "cdk_environment", "deploy_app", "find_cdk"]


def cdk_environment(server: LocalServer) -> dict[str, str]:
    """What cdk and the app need to reach the emulator, in its account and region."""
    return {**server.env(), "CDK_DEFAULT_ACCOUNT": LOCAL_ACCOUNT, "CDK_DEFAULT_REGION": LOCAL_REGION}


def deploy_app(
    server: LocalServer,
    app_dir: Path,
    app: str | None,
    output_dir: Path,
    concurrency: int = 1,
    check_synthesized: Callable[[Path], None] | None = None,
) -> DeployReport:
    """Synthesize the app in ``app_dir`` into ``output_dir``, bootstrap, deploy every stack of it, verify.

    :param app: the app command (default: ``cdk.json``'s ``app``).
    :param concurrency: stacks deployed at once, dependencies respected. Default 1.
    :param check_synthesized: called with ``output_dir`` once synthesized, before anything is deployed (its
        exception stops the deploy: ``local up`` checks its ``--env`` names there). Default: none.
    """
    environment = cdk_environment(server)
    find_cdk(app_dir)  # before anything runs
    # No Docker here: ECS jobs take a registry image instead of building their image directory.
    synth_unbuilt(app_dir, app, output_dir, environment=environment)
    check_environments(output_dir)
    if check_synthesized is not None:
        check_synthesized(output_dir)
    assembly = ["--app", str(output_dir)]
    bootstrap = ["bootstrap", f"aws://{LOCAL_ACCOUNT}/{LOCAL_REGION}", *assembly]
    run_cdk(app_dir, "cdk bootstrap", bootstrap, environment)
    deploy = ["deploy", "**", "--require-approval", "never", "--concurrency", str(concurrency), *assembly]
    run_cdk(app_dir, "cdk deploy", deploy, environment)
    return verify(server, output_dir)


def check_environments(assembly_dir: Path) -> None:
    """Refuse, before anything is deployed, a stack bound to another account or region than the emulator's:
    cdk would try to bootstrap it there and fail with a message about bootstrapping, not about the cause."""
    wrong = []
    directories = [assembly_dir]
    while directories:  # a Stage's stacks are in a nested assembly
        directory = directories.pop()
        manifest = json.loads((directory / "manifest.json").read_text())
        for name, artifact in manifest.get("artifacts", {}).items():
            if artifact.get("type") == "cdk:cloud-assembly":
                directories.append(directory / artifact["properties"]["directoryName"])
            elif artifact.get("type") == "aws:cloudformation:stack":
                environment = artifact.get("environment", "aws://unknown-account/unknown-region")
                account, _, region = environment.removeprefix("aws://").partition("/")
                if account not in (LOCAL_ACCOUNT, "unknown-account") or region not in (LOCAL_REGION, "unknown-region"):
                    wrong.append(f"{artifact.get('displayName', name)} ({environment})")
    if wrong:
        raise SynthError(
            f"the emulator is account {LOCAL_ACCOUNT}, region {LOCAL_REGION}, and these stacks are bound to "
            f"others: {', '.join(wrong)}. Deploy them locally with env=Environment(account="
            "os.environ['CDK_DEFAULT_ACCOUNT'], region=os.environ['CDK_DEFAULT_REGION']) (jobqueues local sets "
            "both to the emulator's), or no env"
        )
