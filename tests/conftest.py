"""Shared fixtures: a real local AWS emulator (moto_server over HTTP) for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from local_emulator.server import LocalServer, running_server

pytest_plugins = ["emulator_fixtures"]


@pytest.fixture(scope="session")
def local_aws() -> Iterator[LocalServer]:
    """One moto_server process (with jobqueues' CloudFormation handlers) on a free localhost port."""
    with running_server() as server:
        yield server


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test run (the JVM takes seconds to start)."""
    from jobstats.session import spark_session

    session = spark_session("local[2]", app_name="jobstats-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
