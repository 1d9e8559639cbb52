"""The example app deployed to the local emulator once per test process, as ``make local`` deploys it.

Registered by ``tests/conftest.py`` (``pytest_plugins``). A session fixture is per pytest-xdist worker: keep
the tests that use :func:`example_deployment` in one module (``tests/test_demo.py``), so that ``--dist loadfile``
runs them in one worker and the app is deployed once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from local_emulator.deploy import PROJECT_DIR, DeployReport, deploy
from local_emulator.server import LocalServer, running_server

#: Why a test that deploys is skipped: the ``cdk`` CLI (``npm ci``) is missing.
NEEDS_CDK = pytest.mark.skipif(
    not (PROJECT_DIR / "node_modules" / ".bin" / "cdk").exists(), reason="needs `npm ci` (make test runs it)"
)


@dataclass(frozen=True)
class Deployment:
    """An app deployed with the real ``cdk`` CLI on its own emulator: the emulator, the report, the assembly."""

    server: LocalServer
    report: DeployReport
    assembly: Path


@contextmanager
def deployment(tmp_path_factory: pytest.TempPathFactory, app: Path | None = None) -> Iterator[Deployment]:
    """``app`` (default: the example app) deployed and verified on an emulator of its own (not the shared
    ``local_aws``), for as long as the ``with`` lasts."""
    assembly = tmp_path_factory.mktemp("cdk.out")
    with running_server() as server:
        report = deploy(server, output_dir=assembly) if app is None else deploy(server, output_dir=assembly, app=app)
        yield Deployment(server, report, assembly)


@pytest.fixture(scope="session")
def example_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The example app deployed and verified, once per test process."""
    with deployment(tmp_path_factory) as deployed:
        yield deployed
