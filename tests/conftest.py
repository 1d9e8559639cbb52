"""Shared fixtures: a real local AWS emulator (moto_server over HTTP) for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from emulator_fixtures import SHARED_DEPLOYMENTS

from jobqueues.emulator.server import LocalServer, running_server

pytest_plugins = ["emulator_fixtures"]

#: Session fixtures that take long to build. A session fixture is per pytest-xdist worker, so every test that uses
#: one goes to one worker and it is built once a run: the apps deployed (``emulator_fixtures``) and the JVM.
SHARED_FIXTURES = (*SHARED_DEPLOYMENTS, "spark")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Work units for ``pytest -n N --dist loadgroup --no-loadscope-reorder`` (``make test``): a test module, or
    every test that uses one of :data:`SHARED_FIXTURES`. Those units, and the modules marked ``heavy`` (a
    minute-long end-to-end run), go first, so the run does not end on one of them while the other worker idles."""
    groups = {}
    for item in items:
        shared = [name for name in SHARED_FIXTURES if name in getattr(item, "fixturenames", ())]
        groups[item] = shared[0] if shared else item.nodeid.split("::", 1)[0]
    heavy = {*SHARED_FIXTURES, *(groups[item] for item in items if item.get_closest_marker("heavy"))}
    items.sort(key=lambda item: groups[item] not in heavy)  # stable: collection order within each
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker under --dist loadgroup
        for item in items:
            _join_group(item, groups[item])


def _join_group(item: pytest.Item, group: str) -> None:
    """Put ``item`` in work unit ``group``: ``--dist loadgroup`` groups the node ids that end in ``@group``.

    pytest-xdist 3.8 appends that suffix to ``item._nodeid`` for ``xdist_group`` marks, which pytest 9 no longer
    reads (a node's id is ``item._id``): the marks then group nothing, and every test is a unit of its own (the
    session fixtures were built in both workers, the demo's deploy twice). So the id is set here, where pytest 9
    keeps it; ``tests/test_scheduling.py`` checks that the units hold.
    """
    from _pytest.nodeid import coerce_node_id

    item._id = coerce_node_id(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


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
