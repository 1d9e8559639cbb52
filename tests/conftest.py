"""Shared fixtures: a real local AWS emulator (moto_server over HTTP) for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from local_emulator.server import LocalServer, running_server


@pytest.fixture(scope="session")
def local_aws() -> Iterator[LocalServer]:
    """One moto_server process (with jobqueues' CloudFormation handlers) on a free localhost port."""
    with running_server() as server:
        yield server
