"""``make test``'s work units (tests/conftest.py): a module whose tests share a module-scoped fixture runs in one
pytest-xdist worker, as do all the tests that share a deployed app or the SparkSession; any other test is a unit of
its own. pytest-xdist's own ``xdist_group`` marks group nothing under pytest 9 (this file found it: every test was a
unit, the session fixtures were built twice)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from conftest import WAITS_SPREAD

ROOT = Path(__file__).resolve().parent.parent
#: A module of tests sharing a module-scoped fixture (the plans made once), and one of independent tests.
SHARING, INDEPENDENT = "tests/test_prop_defaults.py", "tests/test_rules.py"


def test_each_unit_runs_in_one_worker_under_the_make_test_options() -> None:
    # GIVEN a module whose tests share a module-scoped fixture, and one whose tests share nothing
    # WHEN they run as `make test` runs the suite
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-v"),
            *("-p", "no:cacheprovider", SHARING, INDEPENDENT),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    # THEN every test of the sharing module ran on one worker, and its node id names the module as its unit
    workers: dict[str, set[str]] = defaultdict(set)
    units: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"^\[(gw\d)\] \[\s*\d+%\] PASSED (.+?) *$", done.stdout, re.M):
        test, _, unit = nodeid.partition("@")
        module = test.split("::", 1)[0]
        units[module].add(unit)
        workers[unit].add(worker)
    assert units[SHARING] == {SHARING}
    assert len(workers[SHARING]) == 1, dict(workers)
    # ... and each test of the other module is a unit of its own (which worker runs it is xdist's choice)
    independent = units[INDEPENDENT]
    ran = len(re.findall(rf"PASSED {INDEPENDENT}::", done.stdout))
    assert len(independent) == ran > 8 and all(unit.startswith(f"{INDEPENDENT}::") for unit in independent), independent


def test_heavy_modules_start_first_then_the_ones_that_wait_spread_among_the_rest() -> None:
    # GIVEN a module of plain tests, one marked `waits` (most of its time is real-time waiting) and one marked `heavy`
    plain, waiting, heavy = INDEPENDENT, "tests/test_sqslease_heartbeat.py", "tests/test_sqslease_statemachine.py"
    # WHEN the suite is ordered as `make test` orders it (tests/conftest.py)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", plain, waiting, heavy],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    modules = [line.split("::", 1)[0] for line in done.stdout.splitlines() if "::" in line]
    assert set(modules) == {heavy, waiting, plain}, modules
    # THEN the heavy module's tests come first
    heavy_count = modules.count(heavy)
    assert modules[:heavy_count] == [heavy] * heavy_count, modules
    # ... then the waiting ones, spread among the plain ones (run together, they left both cores idle), starting
    # with one and all placed before the last plain ones (a run that ends on waits leaves the cores idle too)
    rest = modules[heavy_count:]
    waits_at = [i for i, module in enumerate(rest) if module == waiting]
    assert waits_at[0] == 0 and waits_at[1] > 1, rest
    assert waits_at[-1] < len(rest) * (1 - (1 - WAITS_SPREAD) / 2), rest
