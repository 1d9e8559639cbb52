"""Shared fixtures: a real local AWS emulator (moto_server over HTTP) for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from support.tool_env import TEST_ENV

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# Before aws_cdk starts its kernel; inherited by every tool a test starts. What the environment sets wins.
os.environ.update({name: value for name, value in TEST_ENV.items() if name not in os.environ})

# Imported here for its names, before pytest loads it as a plugin: registered first, so that its asserts are
# rewritten as a test module's are (pytest warned once a process that it could not).
pytest.register_assert_rewrite("emulator_fixtures")
from emulator_fixtures import SHARED_DEPLOYMENTS  # noqa: E402

from jobqueues.emulator.server import LocalServer, running_server  # noqa: E402

pytest_plugins = ["emulator_fixtures"]

#: Session fixtures that take long to build. A session fixture is per pytest-xdist worker, so every test that uses
#: one goes to one worker and it is built once a run: the apps deployed (``emulator_fixtures``) and the JVM. Listed
#: longest first: the units start in this order.
SHARED_FIXTURES = ("spark", *SHARED_DEPLOYMENTS)
#: The share of the other unshared units over which the ``waits`` units are spread (the rest come after them).
WAITS_SPREAD = 0.6
#: Fixture scopes that a module's tests share: a module using one is one unit, so its fixture is built once.
_SHARED_SCOPES = frozenset({"module", "class", "package"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Work units for ``pytest -n N --dist loadgroup --no-loadscope-reorder`` (``make test``), and their order.

    - Every test that uses one of :data:`SHARED_FIXTURES` is one unit; the Spark tests of the modules marked
      ``heavy`` (a minute-long end-to-end run each) are a second Spark unit, with a JVM of its own, beside it.
    - A module one of whose tests uses a module-scoped fixture (an app synthesized or deployed once) is one unit.
    - Any other test is a unit of its own, so that a module's independent end-to-end runs go to several workers.

    Those shared units go first (longest first), then the ``heavy`` modules' tests, so that the run does not end on
    one of them while the other workers idle, then the other tests, with the ``waits`` modules' tests spread among
    them (:func:`_spread_waits`), so that their waits overlap the others' CPU."""
    sharing = {_module(item) for item in items if _shares_a_fixture(item)}
    units = {item: _unit(item, sharing) for item in items}
    order = {unit: rank for rank, unit in enumerate(SHARED_FIXTURES)}
    order["spark-heavy"] = 0.5
    items.sort(key=lambda item: order.get(units[item], len(order) + _late(item)))
    items[:] = _spread_waits(items, units)
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker under --dist loadgroup
        for item in items:
            _join_group(item, units[item])


def _late(item: pytest.Item) -> int:
    """Where an unshared test starts: 0 ``heavy``, 1 ``waits``, 2 any other."""
    return 0 if item.get_closest_marker("heavy") else 1 if item.get_closest_marker("waits") else 2


def _spread_waits(items: list[pytest.Item], units: dict[pytest.Item, str]) -> list[pytest.Item]:
    """``items`` with the ``waits`` units spread evenly over the first :data:`WAITS_SPREAD` of the units after them:
    run together, they left both cores idle for half a minute; run last, they end the run on waits."""
    waiting: dict[str, list[pytest.Item]] = {}
    rest: dict[str, list[pytest.Item]] = {}
    start = next((i for i, item in enumerate(items) if _late(item) == 1 and units[item] not in SHARED_FIXTURES), None)
    if start is None:
        return items
    for item in items[start:]:
        (waiting if _late(item) == 1 else rest).setdefault(units[item], []).append(item)
    spread, w, r = list(items[:start]), list(waiting.values()), list(rest.values())
    taken_w = taken_r = 0
    while taken_w < len(w) or taken_r < len(r):
        if taken_r >= len(r) or (taken_w < len(w) and taken_w * len(r) * WAITS_SPREAD <= taken_r * len(w)):
            spread += w[taken_w]
            taken_w += 1
        else:
            spread += r[taken_r]
            taken_r += 1
    return spread


def _unit(item: pytest.Item, sharing: set[str]) -> str:
    """The work unit of ``item`` (:func:`pytest_collection_modifyitems`); ``sharing``: the modules one of whose
    tests uses a module-scoped fixture."""
    names = getattr(item, "fixturenames", ())
    shared = [name for name in SHARED_FIXTURES if name in names]
    if shared:
        return "spark-heavy" if shared[0] == "spark" and item.get_closest_marker("heavy") else shared[0]
    return _module(item) if _module(item) in sharing else item.nodeid


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _shares_a_fixture(item: pytest.Item) -> bool:
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(defs and defs[-1].scope in _SHARED_SCOPES for defs in definitions.values())


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
