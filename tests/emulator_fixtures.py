"""Apps deployed to the local emulator with the real ``cdk`` CLI, once per test process, as ``make local`` deploys.

Registered by ``tests/conftest.py`` (``pytest_plugins``). A session fixture is per pytest-xdist worker:
``tests/conftest.py`` sends every test that uses one of :data:`SHARED_DEPLOYMENTS` to one worker, so that each app
is deployed once in a run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobqueues.emulator.deploy import PROJECT_DIR, DeployReport
from jobqueues.emulator.server import LocalServer, running_server
from jobqueues.emulator.user_app import deploy_app

#: The pinned ``cdk`` CLI, which ``make setup`` installs (``npm ci``).
CDK_CLI = PROJECT_DIR / "node_modules" / ".bin" / "cdk"


def require_cdk() -> Path:
    """The pinned ``cdk`` CLI; a test that needs it fails without it, never skips (a run whose deploy tests all
    skipped would pass without deploying anything)."""
    if not CDK_CLI.exists():
        pytest.fail(f"{CDK_CLI} is missing: run `make setup` (it runs `npm ci`), as `make test` does", pytrace=False)
    return CDK_CLI


@pytest.fixture(scope="session")
def cdk_cli() -> Path:
    """:func:`require_cdk` as a fixture (:data:`NEEDS_CDK`)."""
    return require_cdk()


#: A test that runs the ``cdk`` CLI (a deploy, a synth): it fails when the CLI is missing.
NEEDS_CDK = pytest.mark.usefixtures("cdk_cli")


@dataclass(frozen=True)
class Deployment:
    """An app deployed with the real ``cdk`` CLI on its own emulator: the emulator, the report, the assembly."""

    server: LocalServer
    report: DeployReport
    assembly: Path


#: A new team's own app (Stages, FIFO + KMS, a 3 s Lambda, a queue name of its own): what the command is tested on.
OPS_APP_DIR = Path(__file__).resolve().parent / "ops_app"


@contextmanager
def deployment(
    tmp_path_factory: pytest.TempPathFactory,
    app: Path | None = None,
    app_dir: Path | None = None,
    concurrency: int = 1,
) -> Iterator[Deployment]:
    """``app`` (a CDK app script; default: the directory's ``cdk.json`` app) deployed and verified on an emulator
    of its own, as ``jobqueues local deploy`` deploys it, for as long as the ``with`` lasts; ``cdk`` runs in
    ``app_dir`` (default: the project's, i.e. the example app)."""
    require_cdk()
    assembly = tmp_path_factory.mktemp("cdk.out")
    command = None if app is None else f"{sys.executable} {app}"
    with running_server() as server:
        report = deploy_app(server, app_dir or PROJECT_DIR, command, assembly, concurrency=concurrency)
        yield Deployment(server, report, assembly)


@pytest.fixture(scope="session")
def ops_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """``tests/ops_app`` deployed (from its own directory) and verified, once per test process. Tests that
    change its queues' contents use their own job bodies and leave the queues empty."""
    with deployment(tmp_path_factory, app=OPS_APP_DIR / "app.py", app_dir=OPS_APP_DIR) as deployed:
        yield deployed


#: The deployment-options apps' three stacks in one app (``tests/emulator_apps/options_app.py``).
OPTIONS_APP = Path(__file__).resolve().parent / "emulator_apps" / "options_app.py"


@pytest.fixture(scope="session")
def options_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The ECS, Lambda and queue options stacks deployed and verified, once per test process."""
    with deployment(tmp_path_factory, OPTIONS_APP) as deployed:
        yield deployed


#: Session fixtures that deploy an app: the tests using one run in one worker (``tests/conftest.py``).
SHARED_DEPLOYMENTS = ("ops_deployment", "example_deployment", "options_deployment")  # longest first


@pytest.fixture(scope="session")
def example_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The example app deployed and verified, once per test process."""
    with deployment(tmp_path_factory) as deployed:
        yield deployed
