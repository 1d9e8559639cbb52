"""GIVEN job types declared with jobqueues and the same resources written by hand in aws-cdk-lib
(``bench/synth_bench.py``; with their consumers, ``bench/consumer_synth_bench.py``) WHEN both apps are built and
synthesized THEN jobqueues makes fewer round trips to the CDK's Node kernel per job type than the hand-written app,
by the fleet view's body at least.

A round trip (a property read, a call, an object created in the kernel) is most of a construct's synth cost, and a
count does not flake as a time would: a change that adds some per job type fails here instead of hiding in a
benchmark table (``docs/benchmarks.md`` has the times).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from support.bench_modules import load_bench
from support.jsii_calls import counting_jsii_calls

#: What jobqueues adds per job type that the hand-written app has no equivalent of: nothing. Its queue markers go into
#: the template's own metadata, once per stack (jobqueues.marker), where a marker on each source queue cost 3 (the
#: queue's resource, two reads, and the metadata, one call).
MARKER_ROUND_TRIPS = 0
#: What a stack pays once, whatever its job types: the check at synth that its template metadata kept the markers
#: (reading it: two round trips and the dict's key) (jobqueues.marker).
MARKER_CHECK_ROUND_TRIPS_A_STACK = 3
#: What jobqueues saves per job type: the fleet view's body is written in Python (jobqueues.fleet_body) from two
#: names read (the queues'), where aws-cdk-lib's widgets take eight metric and metric-math objects (20.55 against
#: 26.85 a job type when this was written; 26.85 each before).
FLEET_BODY_SAVES_A_JOB_TYPE = 6
JOB_TYPES = 20  # in one stack
#: What a LambdaJob or an EcsJob may cost over the same resources written by hand: nothing. Its consumer marker on the
#: function or service (the metadata, one call: the logical ids it names are computed in Python, the resource it goes
#: on is one the job holds already) is made up for elsewhere: jobqueues shares metric objects and Durations that the
#: hand-written app makes again, and by the fleet view's body (89.15 against 100.5 when this was written, the
#: markers' check included; 92.95 before the body).
CONSUMER_MARKER_ROUND_TRIPS = 0
#: Lambda jobs, and as many ECS jobs.
CONSUMER_JOBS = 10


@pytest.fixture(scope="module")
def synth_bench() -> ModuleType:
    return load_bench("synth_bench")


@pytest.fixture(scope="module")
def consumer_synth_bench(synth_bench: ModuleType) -> ModuleType:
    return load_bench("consumer_synth_bench")  # imports synth_bench's hand-written queues: loaded first


def _round_trips_per_job_type(build: object) -> float:
    with counting_jsii_calls() as calls:
        build(JOB_TYPES).synth()  # type: ignore[operator]
    return sum(calls.values()) / JOB_TYPES


def test_a_job_queue_costs_no_more_round_trips_than_hand_written(synth_bench: ModuleType) -> None:
    synth_bench.with_jobqueues(2).synth()  # the imports' and the kernel's first-use costs out of the count
    synth_bench.hand_written(2).synth()
    jobqueues = _round_trips_per_job_type(synth_bench.with_jobqueues)
    hand_written = _round_trips_per_job_type(synth_bench.hand_written)
    assert jobqueues <= (
        hand_written - FLEET_BODY_SAVES_A_JOB_TYPE + MARKER_ROUND_TRIPS + MARKER_CHECK_ROUND_TRIPS_A_STACK / JOB_TYPES
    ), (
        jobqueues,
        hand_written,
    )


def test_a_consumer_costs_no_more_round_trips_than_hand_written(
    consumer_synth_bench: ModuleType, tmp_path: Path
) -> None:
    # 10 LambdaJobs and 10 EcsJobs against the same resources written out (roles, functions with the layer, event
    # sources, task definitions, services, scaling, alarms, dashboards), construct and synth, per job.
    def per_job(build: object) -> float:
        with counting_jsii_calls() as calls:
            build(CONSUMER_JOBS, str(tmp_path / build.__name__)).synth()  # type: ignore[attr-defined]
        return sum(calls.values()) / (2 * CONSUMER_JOBS)

    consumer_synth_bench.with_jobqueues(2, str(tmp_path / "warm1")).synth()  # first-use costs out of the count
    consumer_synth_bench.hand_written(2, str(tmp_path / "warm2")).synth()
    jobqueues = per_job(consumer_synth_bench.with_jobqueues)
    hand_written = per_job(consumer_synth_bench.hand_written)
    assert jobqueues <= hand_written - FLEET_BODY_SAVES_A_JOB_TYPE + CONSUMER_MARKER_ROUND_TRIPS, (
        jobqueues,
        hand_written,
    )
