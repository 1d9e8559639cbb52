"""GIVEN job types declared with jobqueues and the same resources written by hand in aws-cdk-lib
(``bench/synth_bench.py``) WHEN both apps are built and synthesized THEN jobqueues makes no more round trips to the
CDK's Node kernel per job type than the hand-written app, but for its marker's three.

A round trip (a property read, a call, an object created in the kernel) is most of a construct's synth cost, and a
count does not flake as a time would: a change that adds some per job type fails here instead of hiding in a
benchmark table (``docs/benchmarks.md`` has the times).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.jsii_calls import counting_jsii_calls

#: What jobqueues adds per job type that the hand-written app has no equivalent of: the marker on the source queue
#: (its resource, two reads, and the metadata, one call; jobqueues.marker).
MARKER_ROUND_TRIPS = 3
JOB_TYPES = 20


@pytest.fixture(scope="module")
def synth_bench() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "bench" / "synth_bench.py"
    spec = importlib.util.spec_from_file_location("synth_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("synth_bench", module)
    spec.loader.exec_module(module)
    return module


def _round_trips_per_job_type(build: object) -> float:
    with counting_jsii_calls() as calls:
        build(JOB_TYPES).synth()  # type: ignore[operator]
    return sum(calls.values()) / JOB_TYPES


def test_a_job_queue_costs_the_hand_written_round_trips_plus_its_marker(synth_bench: ModuleType) -> None:
    synth_bench.with_jobqueues(2).synth()  # the imports' and the kernel's first-use costs out of the count
    synth_bench.hand_written(2).synth()
    jobqueues = _round_trips_per_job_type(synth_bench.with_jobqueues)
    hand_written = _round_trips_per_job_type(synth_bench.hand_written)
    assert jobqueues <= hand_written + MARKER_ROUND_TRIPS, (jobqueues, hand_written)
