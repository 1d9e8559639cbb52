"""End to end: deploy with the real ``cdk`` CLI to moto_server, then run the demo ``make local`` runs.

The example app is deployed once it declares its ``LambdaJob`` and ``EcsJob``; until then the stand-in
``tests/emulator_apps/demo_app.py`` emits the same consumer resources. The assertions are the demo's
guarantees (invariants, not timings): nothing lost, nothing run twice at once, the poison message in the
DLQ, the long job finished once with its lease extended, the profile written for both consumer job types.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_emulator.demo import DemoResult, run_demo
from local_emulator.deploy import EXAMPLE_APP, PROJECT_DIR, deploy
from local_emulator.server import running_server

pytestmark = pytest.mark.skipif(
    not (PROJECT_DIR / "node_modules" / ".bin" / "cdk").exists(), reason="needs `npm ci` (make test runs it)"
)

STAND_IN_APP = Path(__file__).resolve().parent / "emulator_apps" / "demo_app.py"


def demo_app() -> Path:
    """The example app once its stack declares the consumers, else the stand-in.

    ``JOBQUEUES_DEMO_APP=stand-in`` (or ``example``) picks one explicitly.
    """
    choice = os.environ.get("JOBQUEUES_DEMO_APP")
    if choice:
        return {"example": EXAMPLE_APP, "stand-in": STAND_IN_APP}[choice]
    source = (PROJECT_DIR / "stacks" / "job_queues_stack.py").read_text()
    return EXAMPLE_APP if "LambdaJob(" in source and "EcsJob(" in source else STAND_IN_APP


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DemoResult, list[str]]]:
    lines: list[str] = []
    with running_server() as server:
        deploy(server, output_dir=tmp_path_factory.mktemp("cdk.out"), app=demo_app())
        result = run_demo(server, logs_dir=tmp_path_factory.mktemp("demo-logs"), out=lines.append)
        yield result, lines


def test_every_job_is_processed_once_and_nothing_is_lost(demo: tuple[DemoResult, list[str]]) -> None:
    result, lines = demo
    rows = result.job_types
    assert {rows["Thumbnails"].consumer, rows["Transcode"].consumer} == {"Lambda", "ECS"}
    for name in ("Thumbnails", "Transcode"):
        row = rows[name]
        assert row.lost == 0 and row.duplicates == 0 and row.concurrent == 0, row
        assert row.processed > 0 and row.leases_lost == 0, row
    # 20 Lambda jobs; ECS: 12 + the long one + 16 drained + the killed one (the poison one is not processed).
    assert rows["Thumbnails"].processed == 20 and rows["Transcode"].processed == 30
    assert result.ok
    assert lines[-1].endswith("every job processed exactly once")


def test_poison_message_reaches_the_dlq_after_max_receive_count(demo: tuple[DemoResult, list[str]]) -> None:
    result, _ = demo
    assert result.poison["in_dlq"] and result.poison["deliveries"] == 3  # maxReceiveCount of Transcode
    assert result.job_types["Transcode"].dead_lettered == 1 and result.job_types["Thumbnails"].dead_lettered == 0


def test_long_job_outlives_its_visibility_timeout_once_thanks_to_extensions(
    demo: tuple[DemoResult, list[str]],
) -> None:
    long_job = demo[0].long_job
    assert long_job["duration_s"] > long_job["visibility_timeout_s"]
    assert long_job["runs"] == 1 and long_job["completions"] == 1 and long_job["extensions"] > 0


def test_kill_9_redelivers_within_one_lease_and_sigterm_drains(demo: tuple[DemoResult, list[str]]) -> None:
    result, _ = demo
    assert result.kill["receive_count"] == 2
    # Redelivered once the killed worker's lease ran out: not before (the lease held), about one lease after.
    assert 0 < result.kill["back_after_s"] <= result.kill["lease_s"] + 10
    drain = result.drain
    assert drain["exit_codes"] == [0, 0] and drain["finished"] == drain["running_at_sigterm"] > 0


def test_lambda_driver_ran_the_deployed_layer_with_the_mappings_batches(demo: tuple[DemoResult, list[str]]) -> None:
    stats = demo[0].lambda_stats
    assert "/opt/python/sqslease/lambda_entry.py" in stats["handler_file"]
    assert max(stats["batch_sizes"]) <= 10 and stats["deleted"] == 20
    assert stats["reported_failures"] >= 1  # the job that fails its first delivery


def test_jobstats_profiles_both_consumer_job_types(demo: tuple[DemoResult, list[str]]) -> None:
    result, lines = demo
    assert Path(result.profile["path"]).exists()
    profiled = result.profile["document"]["job_types"]
    assert {"Thumbnails", "Transcode"} <= set(profiled)
    assert profiled["Thumbnails"]["count"] >= 20 and profiled["Transcode"]["count"] >= 30
    assert any(line.startswith("measured (jobstats) vs declared") for line in lines)
