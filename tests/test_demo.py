"""End to end, what ``make local`` does: deploy the example app with the real ``cdk`` CLI to moto_server, then
run the demo against it.

The app is deployed once (``example_deployment``, ``tests/emulator_fixtures.py``): the deploy's checks read
back what exists with boto3; the demo's assertions are its guarantees (invariants, not timings): nothing lost,
nothing run twice at once, the poison message in the DLQ, the long job finished once with its lease extended,
a redelivered completed job not run again, the profile written for both consumer job types. The demo only adds
messages, which the deploy's checks do not read, so the order of the tests does not matter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, Deployment

from jobqueues.emulator.demo import DemoResult, run_demo
from jobqueues.emulator.demo.ledger import Run
from jobqueues.emulator.demo.scenarios import poison_summary

pytestmark = NEEDS_CDK


def test_every_resource_of_the_app_is_created(example_deployment: Deployment) -> None:
    report = example_deployment.report
    types = sorted(report.stacks["JobQueuesExample"].values())
    assert types.count("AWS::SQS::Queue") == 12
    assert types.count("AWS::SQS::QueuePolicy") == 12
    # 6 job types x 3 queue alarms, Transcode's queue-time alarm, 6 Lambda-job and 5 ECS-job consumer alarms (the
    # stall alarm each), Thumbnails' time-to-drain alarm, the scale-from-zero alarm
    assert types.count("AWS::CloudWatch::Alarm") == 32
    # One per consumer, and the fleet view of the stack's six job types
    assert types.count("AWS::CloudWatch::Dashboard") == 3
    assert types.count("AWS::DynamoDB::Table") == 1  # Transcode's idempotency records
    assert {"AWS::SNS::Topic", "AWS::SNS::TopicPolicy", "AWS::KMS::Key"} <= set(types)
    consumers = {
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::EventSourceMapping",
        "AWS::ECS::Cluster",
        "AWS::ECS::TaskDefinition",
        "AWS::ECS::Service",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "AWS::CloudWatch::Dashboard",
        "AWS::EC2::FlowLog",
    }
    assert consumers <= set(types)


def test_queues_have_derived_visibility_timeouts_and_redrive(example_deployment: Deployment) -> None:
    server = example_deployment.server
    sqs = server.client("sqs")
    expected = {
        "VideoTranscode": (480, 3),
        "EmailSend": (10, 5),
        "Thumbnails": (185, 5),
        "ReportExport": (300, 3),
        "Transcode": (10, 3),
    }
    for job_type, (vt, receives) in expected.items():
        url = sqs.get_queue_url(QueueName=f"JobQueuesExample-{job_type}")["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert int(attributes["VisibilityTimeout"]) == vt
        redrive = json.loads(attributes["RedrivePolicy"])
        assert redrive["maxReceiveCount"] == receives
        assert redrive["deadLetterTargetArn"].endswith(f":JobQueuesExample-{job_type}-dlq")
        dlq_url = sqs.get_queue_url(QueueName=f"JobQueuesExample-{job_type}-dlq")["QueueUrl"]
        dlq = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["All"])["Attributes"]
        assert int(dlq["MessageRetentionPeriod"]) == 14 * 86_400
        allow = json.loads(dlq["RedriveAllowPolicy"])
        assert allow["sourceQueueArns"] == [attributes["QueueArn"]]
        for policy in (attributes["Policy"], dlq["Policy"]):
            statements = json.loads(policy)["Statement"]
            assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements)


def test_fifo_pair_is_deployed(example_deployment: Deployment) -> None:
    server = example_deployment.server
    sqs = server.client("sqs")
    url = sqs.get_queue_url(QueueName="JobQueuesExample-OrderEvents.fifo")["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["FifoQueue"] == "true" and attributes["ContentBasedDeduplication"] == "true"


def test_alarms_are_deployed_with_their_thresholds(example_deployment: Deployment) -> None:
    server = example_deployment.server
    alarms = server.client("cloudwatch").describe_alarms()["MetricAlarms"]
    by_queue_metric = {(a["Dimensions"][0]["Value"], a["MetricName"]): a for a in alarms if a.get("Dimensions")}
    in_flight = by_queue_metric[("JobQueuesExample-OrderEvents.fifo", "ApproximateNumberOfMessagesNotVisible")]
    assert in_flight["Threshold"] == 96_000 and in_flight["Statistic"] == "Maximum"
    dlq = by_queue_metric[("JobQueuesExample-EmailSend-dlq", "ApproximateNumberOfMessagesVisible")]
    assert dlq["Threshold"] == 1
    age = by_queue_metric[("JobQueuesExample-VideoTranscode", "ApproximateAgeOfOldestMessage")]
    assert age["Threshold"] == 3 * 480
    queue_time = by_queue_metric[("Transcode", "QueueTime")]  # max_queue_time=2 min, on the EMF metric's p99
    assert queue_time["Threshold"] == 120_000 and queue_time["ExtendedStatistic"] == "p99"
    assert queue_time["Namespace"] == "jobqueues" and queue_time["ComparisonOperator"] == "GreaterThanThreshold"
    topic_arn = in_flight["AlarmActions"][0]
    assert topic_arn.startswith("arn:aws:sns:") and in_flight["OKActions"] == [topic_arn]


def test_the_stall_and_drain_alarms_and_the_fleet_view_are_deployed(example_deployment: Deployment) -> None:
    # The deploy compared each alarm's metric-math ids and expressions with the template; here, what they watch.
    cloudwatch = example_deployment.server.client("cloudwatch")
    alarms = cloudwatch.describe_alarms()["MetricAlarms"]
    stalled = {
        a["Metrics"][-1]["MetricStat"]["Metric"]["Dimensions"][0]["Value"]: a
        for a in alarms
        if any(q.get("Expression", "").startswith("IF(FILL(age, 0) >") for q in a.get("Metrics", []))
    }
    assert set(stalled) == {"JobQueuesExample-Thumbnails", "JobQueuesExample-Transcode"}  # each consumer's queue
    assert all(a["TreatMissingData"] == "notBreaching" for a in stalled.values())
    (drain,) = [
        a for a in alarms if any("FILL(deleted, 0) + 1" in q.get("Expression", "") for q in a.get("Metrics", []))
    ]
    assert drain["Threshold"] == 30 * 60  # Thumbnails' max_time_to_drain
    body = json.loads(cloudwatch.get_dashboard(DashboardName="JobQueuesExample_fleet")["DashboardBody"])
    assert body["widgets"][0]["properties"]["title"].startswith("Open first")
    backlog = next(w for w in body["widgets"] if w["properties"].get("title", "").startswith("Backlog"))
    labels = {m[-1]["label"] for m in backlog["properties"]["metrics"] if m[-1].get("visible", True)}
    assert labels == {"VideoTranscode", "EmailSend", "Thumbnails", "Transcode", "OrderEvents", "ReportExport"}


@pytest.fixture(scope="module")
def demo(example_deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, list[str]]:
    lines: list[str] = []
    result = run_demo(example_deployment.server, logs_dir=tmp_path_factory.mktemp("demo-logs"), out=lines.append)
    return result, lines


def test_every_job_is_processed_once_and_nothing_is_lost(demo: tuple[DemoResult, list[str]]) -> None:
    result, lines = demo
    rows = result.job_types
    assert {rows["Thumbnails"].consumer, rows["Transcode"].consumer} == {"Lambda", "ECS"}
    for name in ("Thumbnails", "Transcode"):
        row = rows[name]
        assert row.lost == 0 and row.duplicates == 0 and row.concurrent == 0, row
        assert row.processed > 0 and row.leases_lost == 0, row
    # 20 Lambda jobs; ECS: the duplicate delivery's + 12 + the long one + 16 drained + the killed one (the poison one
    # is not processed).
    assert rows["Thumbnails"].processed == 20 and rows["Transcode"].processed == 31
    assert result.ok
    assert lines[-1].endswith("every job processed exactly once")


def test_poison_message_reaches_the_dlq_after_max_receive_count(demo: tuple[DemoResult, list[str]]) -> None:
    result, _ = demo
    assert result.poison["in_dlq"] and result.poison["deliveries"] == 3  # maxReceiveCount of Transcode
    assert result.job_types["Transcode"].dead_lettered == 1 and result.job_types["Thumbnails"].dead_lettered == 0


def test_a_poison_receive_released_unstarted_by_a_stopping_worker_counts_as_a_delivery() -> None:
    # GIVEN a poison message a stopping worker's last poll received and released unstarted (receive 1), then run
    # and failed twice (receives 2 and 3) before SQS moved it on its 4th receive
    runs = [Run("Transcode", "p", 1, count, 10.0 + count, 10.5 + count, "failure") for count in (2, 3)]
    # WHEN the demo sums it up
    line, summary = poison_summary(runs, "Transcode-dlq")
    # THEN the deliveries are the receives SQS counted (maxReceiveCount), and the line says one was not run
    assert summary == {"in_dlq": True, "deliveries": 3, "runs": 2}
    assert line == (
        "poison message in Transcode-dlq after 3 deliveries, 2 of them run, each failed (the others released "
        "unstarted by a stopping worker; receive counts [2, 3])"
    )
    # AND when each delivery ran: the line the demo always printed
    runs.insert(0, Run("Transcode", "p", 1, 1, 11.0, 11.5, "failure"))
    assert poison_summary(runs, "Transcode-dlq") == (
        "poison message in Transcode-dlq after 3 failed deliveries (receive counts [1, 2, 3])",
        {"in_dlq": True, "deliveries": 3, "runs": 3},
    )


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


def test_a_job_whose_delete_was_lost_is_delivered_again_and_not_run_again(
    demo: tuple[DemoResult, list[str]],
) -> None:
    result, lines = demo
    duplicate = result.duplicate
    # GIVEN a Transcode job that completed on a worker whose every delete failed (it gave up at its SIGTERM)
    assert duplicate["completions"] == 1 and duplicate["deletes_failed"] > 0
    # THEN SQS delivered it again, and the second delivery found the COMPLETED record and was deleted unrun. Its
    # receive count is 2, or more when a receive between left no line: the demo's kill -9 may take a worker down
    # with the message in its prefetch, which SQS then delivers again (that is no run: runs and outcomes below)
    first, again = duplicate["receive_counts"]
    assert first == 1 and again >= 2
    assert duplicate["outcomes"] == ["success", "duplicate"]
    assert duplicate["runs"] == 1 and duplicate["record_status"] == "COMPLETED"
    assert any("delivered 2 times (its delete lost once), ran once" in line for line in lines)


def test_only_deletes_are_lost_and_a_duplicate_that_ran_again_fails_the_demo() -> None:
    from jobqueues.emulator.demo.duplicate import lose_deletes
    from jobqueues.emulator.demo.report import JobTypeResult

    # GIVEN the proxy's rule: deletes fail, the rest (receives, extensions) pass
    assert lose_deletes("DeleteMessageBatch", b"{}") == lose_deletes("DeleteMessage", b"{}") is not None
    assert lose_deletes("ReceiveMessage", b"{}") is None and lose_deletes("ChangeMessageVisibilityBatch", b"{}") is None
    # WHEN the redelivered job ran again (its record did not stop it), though every other guarantee held
    ok = {"poison": {"in_dlq": True}, "long_job": {"completions": 1, "extensions": 2}}
    ran_again = {"runs": 2, "outcomes": ["success", "success"]}
    rows = {"Transcode": JobTypeResult("Transcode", "ECS", processed=1)}
    # THEN the demo is not ok; with the duplicate not run it is, and without the scenario (no idempotency) too
    assert not DemoResult(rows, duplicate=ran_again, **ok).ok
    assert DemoResult(rows, duplicate={"runs": 1, "outcomes": ["success", "duplicate"]}, **ok).ok
    assert DemoResult(rows, **ok).ok


def test_lambda_driver_ran_the_deployed_layer_with_the_mappings_batches(demo: tuple[DemoResult, list[str]]) -> None:
    stats = demo[0].lambda_stats
    assert "/opt/python/sqslease/lambda_entry.py" in stats["handler_file"]
    assert max(stats["batch_sizes"]) <= 10 and stats["deleted"] == 20
    assert stats["reported_failures"] >= 1  # the job that fails its first delivery


def test_jobstats_profiles_both_consumer_job_types(demo: tuple[DemoResult, list[str]]) -> None:
    result, lines = demo
    assert Path(result.profile["path"]).exists()
    profiled = result.profile["document"]["deployments"]  # the deployed consumers write their stack on each line
    assert {"JobQueuesExample/Thumbnails", "JobQueuesExample/Transcode"} <= set(profiled)
    assert (
        profiled["JobQueuesExample/Thumbnails"]["count"] >= 20 and profiled["JobQueuesExample/Transcode"]["count"] >= 30
    )
    assert any(line.startswith("measured (jobstats) vs declared") for line in lines)


def test_the_demo_reads_an_ecs_job_types_declared_p99_from_its_deployed_marker(
    demo: tuple[DemoResult, list[str]],
) -> None:
    # the example app's Transcode declares processing_p99=5 s; its marker in the deployed template says so
    assert demo[0].profile["declared"]["Transcode"] == "p99 5 s"


def test_a_second_demo_run_starts_from_empty_logs(tmp_path: Path) -> None:
    # GIVEN what a first run left (EMF and stderr logs, the ledger, profiles, a Lambda workdir) and a file of yours
    from jobqueues.emulator.demo.harness import fresh_logs

    for name in ("emf/Transcode-worker-1.log", "stderr/Transcode-worker-1.log", "lambda-abc/opt/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("from the first run\n")
    for name in ("ledger.jsonl", "profiles.json", "notes.txt"):
        (tmp_path / name).write_text("{}\n")
    # WHEN the next run prepares its logs
    fresh_logs(tmp_path)
    # THEN its counts cannot include the first run's lines (they doubled on every `make local`), and only the
    # demo's own files went
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emf", "notes.txt", "stderr"]
    assert not any((tmp_path / "emf").iterdir()) and not any((tmp_path / "stderr").iterdir())
