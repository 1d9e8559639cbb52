"""``make test``'s work units (tests/conftest.py): each module's tests run in one pytest-xdist worker, and so do
all the tests that share a deployed app or the SparkSession. pytest-xdist's own ``xdist_group`` marks group
nothing under pytest 9 (this file found it: every test was a unit, the session fixtures were built twice)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_module_runs_in_one_worker_under_the_make_test_options() -> None:
    # GIVEN two small modules; WHEN they run as `make test` runs the suite
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-v"),
            *("-p", "no:cacheprovider", "tests/test_layout.py", "tests/test_rules.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    # THEN every test of a module ran on the same worker, and its node id names its unit
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"^\[(gw\d)\] \[\s*\d+%\] PASSED (.+?) *$", done.stdout, re.M):
        module, _, unit = nodeid.partition("@")
        assert unit == module.split("::", 1)[0], nodeid
        workers[unit].add(worker)
    assert set(workers) == {"tests/test_layout.py", "tests/test_rules.py"}
    assert all(len(ran_on) == 1 for ran_on in workers.values()), dict(workers)
