"""End to end: the real `cdk` CLI deploys apps to moto_server; boto3 reads back what exists.

The example app, and `tests/emulator_apps/stages_app.py` (a top-level stack beside two Stages, deployed with
`--concurrency 2`): every stack of every nested assembly must be deployed and verified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_emulator.deploy import PROJECT_DIR, DeployError, DeployReport, deploy, verify
from local_emulator.server import LocalServer, running_server

pytestmark = pytest.mark.skipif(
    not (PROJECT_DIR / "node_modules" / ".bin" / "cdk").exists(), reason="needs `npm ci` (make test runs it)"
)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalServer, object]:
    with running_server() as server:
        report = deploy(server, output_dir=tmp_path_factory.mktemp("cdk.out"))
        yield server, report


def test_every_resource_of_the_app_is_created(deployed: tuple) -> None:
    _, report = deployed
    types = sorted(report.stacks["JobQueuesExample"].values())
    assert types.count("AWS::SQS::Queue") == 12
    assert types.count("AWS::SQS::QueuePolicy") == 12
    # 6 job types x 3 queue alarms, 5 Lambda-job and 4 ECS-job consumer alarms, the scale-from-zero alarm
    assert types.count("AWS::CloudWatch::Alarm") == 28
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


def test_queues_have_derived_visibility_timeouts_and_redrive(deployed: tuple) -> None:
    server, _ = deployed
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


def test_fifo_pair_is_deployed(deployed: tuple) -> None:
    server, _ = deployed
    sqs = server.client("sqs")
    url = sqs.get_queue_url(QueueName="JobQueuesExample-OrderEvents.fifo")["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["FifoQueue"] == "true" and attributes["ContentBasedDeduplication"] == "true"


def test_alarms_are_deployed_with_their_thresholds(deployed: tuple) -> None:
    server, _ = deployed
    alarms = server.client("cloudwatch").describe_alarms()["MetricAlarms"]
    by_queue_metric = {(a["Dimensions"][0]["Value"], a["MetricName"]): a for a in alarms if a.get("Dimensions")}
    in_flight = by_queue_metric[("JobQueuesExample-OrderEvents.fifo", "ApproximateNumberOfMessagesNotVisible")]
    assert in_flight["Threshold"] == 96_000 and in_flight["Statistic"] == "Maximum"
    dlq = by_queue_metric[("JobQueuesExample-EmailSend-dlq", "ApproximateNumberOfMessagesVisible")]
    assert dlq["Threshold"] == 1
    age = by_queue_metric[("JobQueuesExample-VideoTranscode", "ApproximateAgeOfOldestMessage")]
    assert age["Threshold"] == 3 * 480
    topic_arn = in_flight["AlarmActions"][0]
    assert topic_arn.startswith("arn:aws:sns:") and in_flight["OKActions"] == [topic_arn]


def test_unsupported_resource_type_fails_the_deploy_loudly(local_aws: LocalServer) -> None:
    # A template with a type the emulator has no handler for must not "succeed" with it skipped.
    template = {"Resources": {"Thing": {"Type": "AWS::AppConfig::Application", "Properties": {"Name": "x"}}}}
    cloudformation = local_aws.client("cloudformation")
    cloudformation.create_change_set(
        StackName="Unsupported", ChangeSetName="c1", ChangeSetType="CREATE", TemplateBody=json.dumps(template)
    )
    with pytest.raises(Exception, match="not supported by the local emulator"):
        cloudformation.execute_change_set(ChangeSetName="c1", StackName="Unsupported")
    stack = cloudformation.describe_stacks(StackName="Unsupported")["Stacks"][0]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"


STAGES_APP = Path(__file__).resolve().parent / "emulator_apps" / "stages_app.py"
#: CloudFormation names of the stages app's stacks: one top-level, one in each of two Stages.
STAGE_STACKS = ("EmulatorShared", "Dev-EmulatorJobs", "Prod-EmulatorJobs")


@pytest.fixture(scope="module")
def deployed_stages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalServer, DeployReport, Path]]:
    assembly = tmp_path_factory.mktemp("cdk.out")
    with running_server() as server:
        yield server, deploy(server, output_dir=assembly, app=STAGES_APP, concurrency=2), assembly


def test_stacks_inside_stages_are_deployed_and_verified(deployed_stages: tuple) -> None:
    server, report, assembly = deployed_stages
    assert sorted(report.stacks) == sorted(STAGE_STACKS)
    cloudformation = server.client("cloudformation")
    for name in STAGE_STACKS:
        [stack] = cloudformation.describe_stacks(StackName=name)["Stacks"]
        assert stack["StackStatus"] == "CREATE_COMPLETE", name
    queues = {q.name: q.attributes for q in report.queues}
    assert queues["Prod-EmulatorJobs-Orders.fifo"]["FifoQueue"] == "true"
    assert "Dev-EmulatorJobs-Emails" in queues and "EmulatorShared-Emails" in queues
    # verify() reads the Stages' templates: a property changed in a Stage's stack is reported.
    sqs = server.client("sqs")
    url = sqs.get_queue_url(QueueName="Dev-EmulatorJobs-Emails")["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "99"})
    try:
        with pytest.raises(DeployError, match=r"Dev-EmulatorJobs/\w+ \(AWS::SQS::Queue\): VisibilityTimeout"):
            verify(server, assembly)
    finally:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "10"})
    assert sorted(verify(server, assembly).stacks) == sorted(STAGE_STACKS)


def test_change_sets_of_one_name_are_told_apart_by_stack(local_aws: LocalServer) -> None:
    # cdk names every stack's change set "cdk-deploy-change-set"; with --concurrency two are open at once.
    cloudformation = local_aws.client("cloudformation")
    template = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
    ids = {
        stack: cloudformation.create_change_set(
            StackName=stack, ChangeSetName="same-name", ChangeSetType="CREATE", TemplateBody=template
        )["Id"]
        for stack in ("SameNameA", "SameNameB")
    }
    for stack, change_set_id in ids.items():
        described = cloudformation.describe_change_set(StackName=stack, ChangeSetName="same-name")
        assert (described["StackName"], described["ChangeSetId"]) == (stack, change_set_id)
    cloudformation.delete_change_set(StackName="SameNameA", ChangeSetName="same-name")
    with pytest.raises(cloudformation.exceptions.ChangeSetNotFoundException):
        cloudformation.describe_change_set(StackName="SameNameA", ChangeSetName="same-name")
    left = cloudformation.describe_change_set(StackName="SameNameB", ChangeSetName="same-name")
    assert left["ChangeSetId"] == ids["SameNameB"]
    cloudformation.execute_change_set(StackName="SameNameB", ChangeSetName="same-name")
    assert cloudformation.describe_stacks(StackName="SameNameB")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"


def test_queue_encryption_is_read_back_and_compared_with_the_template(deployed_stages: tuple) -> None:
    server, report, assembly = deployed_stages
    queues = {q.name: q.attributes for q in report.queues}
    kms_queue, sse_sqs_queue = queues["Prod-EmulatorJobs-Orders.fifo"], queues["Dev-EmulatorJobs-Emails"]
    assert kms_queue["SqsManagedSseEnabled"] == "false" and ":key/" in kms_queue["KmsMasterKeyId"]  # as in SQS
    assert sse_sqs_queue["SqsManagedSseEnabled"] == "true" and "KmsMasterKeyId" not in sse_sqs_queue
    sqs = server.client("sqs")
    kms_url = sqs.get_queue_url(QueueName="Prod-EmulatorJobs-Orders.fifo")["QueueUrl"]
    sse_sqs_url = sqs.get_queue_url(QueueName="Dev-EmulatorJobs-Emails")["QueueUrl"]
    # Each queue switched to the other kind of encryption no longer matches its template.
    sqs.set_queue_attributes(QueueUrl=kms_url, Attributes={"SqsManagedSseEnabled": "true"})
    sqs.set_queue_attributes(QueueUrl=sse_sqs_url, Attributes={"KmsMasterKeyId": kms_queue["KmsMasterKeyId"]})
    try:
        with pytest.raises(DeployError) as raised:
            verify(server, assembly)
        for stack, attribute in (("Prod", "KmsMasterKeyId"), ("Dev", "SqsManagedSseEnabled")):
            assert re.search(rf"{stack}-EmulatorJobs/\w+ \(AWS::SQS::Queue\): {attribute}: template", str(raised.value))
    finally:
        sqs.set_queue_attributes(QueueUrl=kms_url, Attributes={"KmsMasterKeyId": kms_queue["KmsMasterKeyId"]})
        sqs.set_queue_attributes(QueueUrl=sse_sqs_url, Attributes={"SqsManagedSseEnabled": "true"})
    verify(server, assembly)
