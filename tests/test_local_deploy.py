"""End to end: the real `cdk` CLI deploys apps to moto_server; boto3 reads back what exists.

`tests/emulator_apps/stages_app.py` (a top-level stack beside two Stages, deployed with `--concurrency 2`):
every stack of every nested assembly must be deployed and verified. The example app's deploy is checked in
`tests/test_demo.py`, which deploys it once for the demo too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, deployment

from jobqueues.emulator.deploy import DeployError, DeployReport, verify
from jobqueues.emulator.server import LocalServer

pytestmark = [NEEDS_CDK, pytest.mark.heavy]


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
    with deployment(tmp_path_factory, app=STAGES_APP, concurrency=2) as deployed:
        yield deployed.server, deployed.report, deployed.assembly


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


def test_a_stack_bound_to_another_region_is_refused_before_any_deploy(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs

    from jobqueues.emulator.user_app import check_environments
    from jobqueues.ops.synth import SynthError

    def synth(stage_env: cdk.Environment) -> Path:
        out = tmp_path / f"{stage_env.account}-{stage_env.region}"
        app = cdk.App(outdir=str(out))
        sqs.Queue(cdk.Stack(app, "Agnostic"), "Q")
        sqs.Queue(cdk.Stack(cdk.Stage(app, "Prod", env=stage_env), "Billing"), "Q")
        app.synth()
        return out

    # GIVEN the emulator's account and region, or none: nothing to say
    check_environments(synth(cdk.Environment(account="123456789012", region="us-east-1")))
    # WHEN a Stage's stack is bound to another region THEN the error names it, and the fix
    with pytest.raises(SynthError) as refused:
        check_environments(synth(cdk.Environment(account="123456789012", region="eu-west-1")))
    assert "Prod/Billing (aws://123456789012/eu-west-1)" in str(refused.value)
    assert "os.environ['CDK_DEFAULT_REGION']" in str(refused.value)
