"""Every job type leaves a marker in its stack's template, and ``jobqueues.ops.discovery`` finds the job types
from the markers alone: a queue name of your own, Stages, a consumer in another stack, an imported queue.
Templates are synthesized here (no deploy); the deployed path is in ``tests/test_cli_*.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from cdk_helpers import ENV, cfn_lint_findings
from emulator_fixtures import OPS_APP_DIR

from jobqueues import JobQueue
from jobqueues.marker_format import CONSUMER_MARKER, QUEUE_MARKER, resource_metadata
from jobqueues.ops import intrinsics
from jobqueues.ops.assembly import stack_artifacts
from jobqueues.ops.discovery import EcsConsumer, LambdaConsumer, StackTemplate, discover_templates
from jobqueues.ops.errors import NotFound, OpsError

ROOT = Path(__file__).resolve().parent.parent


def templates(app: cdk.App) -> list[StackTemplate]:
    assembly = app.synth()
    return [StackTemplate(s.stack_name, s.template) for s in assembly.stacks_recursively]


def intrinsics_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [k for k in value if k == "Ref" or k.startswith("Fn::")]
        return own + [i for v in value.values() for i in intrinsics_in(v)]
    if isinstance(value, list):
        return [i for v in value for i in intrinsics_in(v)]
    return []


@pytest.fixture(scope="module")
def ops_app_templates(tmp_path_factory: pytest.TempPathFactory) -> list[StackTemplate]:
    """tests/ops_app synthesized as `cdk synth` runs it: `python app.py` in its own directory (its asset paths are
    relative to it), the assembly read back with every nested Stage."""
    out = tmp_path_factory.mktemp("ops.out")
    env = {
        **os.environ,
        "CDK_OUTDIR": str(out),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        # what cdk sets from credentials, and the app's env reads (the README's pattern)
        "CDK_DEFAULT_ACCOUNT": "123456789012",
        "CDK_DEFAULT_REGION": "us-east-1",
    }
    subprocess.run([sys.executable, "app.py"], cwd=OPS_APP_DIR, env=env, check=True, capture_output=True)
    return [StackTemplate(a.name, a.template()) for a in stack_artifacts(out)]


def test_a_new_team_s_app_is_found_from_its_markers(ops_app_templates: list[StackTemplate]) -> None:
    # GIVEN tests/ops_app synthesized: a Stage, a FIFO+KMS EcsJob, a 3 s LambdaJob, a queue named by the team
    # WHEN discovery reads its templates
    found = discover_templates(ops_app_templates)
    # THEN every job type is found with what it declared, whatever its queue is called
    by_type = {j.job_type: j for j in found.job_types}
    assert sorted(by_type) == ["Emails", "Invoices", "Receipts"]
    emails, invoices, receipts = by_type["Emails"], by_type["Invoices"], by_type["Receipts"]
    assert (emails.stack, emails.processing_p99_s, emails.visibility_timeout_s, emails.consumer) == (
        "OpsShared",
        2,
        10,
        None,
    )
    assert invoices.stack == "Prod-Billing" and invoices.fifo and invoices.max_receive_count == 2
    assert isinstance(invoices.consumer, EcsConsumer)
    assert (invoices.consumer.min_tasks, invoices.consumer.max_tasks, invoices.consumer.target_backlog_per_task) == (
        0,
        3,
        2,
    )
    assert invoices.consumer.image_directory == "worker" and invoices.consumer.log_stream_prefix == "Invoices"
    assert isinstance(receipts.consumer, LambdaConsumer)
    assert (receipts.lambda_timeout_s, receipts.visibility_timeout_s, receipts.consumer.timeout_s) == (3, 18, 3)
    # synthesized, not deployed: no physical ids to name the queues by
    assert emails.queue_url is None and found.stacks == ["OpsShared", "Prod-Billing"]


def test_markers_hold_no_reference(ops_app_templates: list[StackTemplate]) -> None:
    # CloudFormation reads a Ref in metadata as a dependency (a queue's marker on itself is a cycle)
    markers = [
        metadata[key]
        for stack in ops_app_templates
        for metadata in resource_metadata(stack.template).values()
        for key in (QUEUE_MARKER, CONSUMER_MARKER)
        if key in metadata
    ]
    assert len(markers) == 5 and intrinsics_in(markers) == []


def test_an_unknown_or_ambiguous_job_type_names_what_exists(ops_app_templates: list[StackTemplate]) -> None:
    found = discover_templates(ops_app_templates)
    with pytest.raises(NotFound, match=r"no job type Nope in 2 stacks searched; job types: OpsShared/Emails, "):
        found.find("Nope")
    twice = discover_templates(
        [
            *ops_app_templates,
            StackTemplate("Dev-Billing", next(t for t in ops_app_templates if t.name == "Prod-Billing").template),
        ]
    )
    with pytest.raises(NotFound, match=r"Invoices is in 2 stacks \(Dev-Billing, Prod-Billing\): pass --stack"):
        twice.find("Invoices")
    assert twice.find("Dev-Billing/Invoices").stack == "Dev-Billing"
    assert twice.find("Invoices", stack="Prod-Billing").stack == "Prod-Billing"
    assert NotFound("x").exit_status == 2


def test_a_function_of_your_own_and_an_imported_queue_are_joined_to_their_job_types() -> None:
    # GIVEN a job queue consumed by a function of your own, and a queue made elsewhere with its own consumer
    app = cdk.App()
    consumers = cdk.Stack(app, "Consumers", env=ENV)
    emails = JobQueue(consumers, "Emails", lambda_timeout=Duration.seconds(30))
    emails.add_lambda_consumer(own_function(consumers, "EmailsFn"))
    adopted = JobQueue.from_queue_attributes(
        consumers,
        "Adopted",
        job_type="Adopted",
        queue=sqs.Queue.from_queue_arn(consumers, "Q", "arn:aws:sqs:us-east-1:123456789012:legacy-jobs"),
        dead_letter_queue=sqs.Queue.from_queue_arn(consumers, "D", "arn:aws:sqs:us-east-1:123456789012:legacy-dlq"),
        visibility_timeout=Duration.minutes(3),
    )
    adopted.add_lambda_consumer(own_function(consumers, "AdoptedFn"))
    # WHEN discovery reads the template
    by_type = {j.job_type: j for j in discover_templates(templates(app)).job_types}
    # THEN the function is Emails' consumer; the adopted queue is known by its ARN, with its consumer
    assert isinstance(by_type["Emails"].consumer, LambdaConsumer) and by_type["Emails"].lambda_timeout_s == 30
    adopted_type = by_type["Adopted"]
    assert adopted_type.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/legacy-jobs"
    assert adopted_type.dead_letter_queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/legacy-dlq"
    assert adopted_type.visibility_timeout_s == 180 and isinstance(adopted_type.consumer, LambdaConsumer)


def test_a_marker_of_a_newer_version_is_refused_with_the_fix() -> None:
    template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Metadata": {QUEUE_MARKER: {"version": 99}}}}}
    with pytest.raises(OpsError, match=r"newer jobqueues .marker version 99.: upgrade cdk-jobqueues"):
        discover_templates([StackTemplate("S", template)])


def own_function(stack: cdk.Stack, name: str) -> lambda_.Function:
    role = iam.Role(stack, f"{name}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, f"{name}Logs", retention=logs.RetentionDays.ONE_MONTH)
    log_group.grant_write(role)
    return lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        code=lambda_.Code.from_asset(str(ROOT / "lambda_src" / "handlers")),
        handler="thumbs.handler",
        timeout=Duration.seconds(30),
        role=role,
        log_group=log_group,
    )


def test_the_marker_survives_json(ops_app_templates: list[StackTemplate]) -> None:
    # what GetTemplate returns is the JSON text: the markers read the same from it
    again = [StackTemplate(t.name, json.loads(json.dumps(t.template))) for t in ops_app_templates]
    assert discover_templates(again) == discover_templates(ops_app_templates)


def test_a_consumer_in_another_stack_is_joined_to_its_job_queue() -> None:
    # GIVEN a Dev and a Prod Stage, each with a job queue in its Jobs stack consumed by a function of its Consumers
    # stack (a team's queues stack, and the function it brings)
    app = cdk.App()
    for stage_name in ("Dev", "Prod"):
        stage = cdk.Stage(app, stage_name, env=ENV)
        resize = JobQueue(cdk.Stack(stage, "Jobs"), "Resize", lambda_timeout=Duration.seconds(30))
        resize.add_lambda_consumer(own_function(cdk.Stack(stage, "Consumers"), "ResizeFunction"))
    # WHEN discovery reads the templates
    found = discover_templates(templates(app))
    # THEN each job type has its own stage's function as its consumer, in the consumers stack
    assert [(j.name, j.consumer and j.consumer.stack) for j in found.job_types] == [
        ("Dev-Jobs/Resize", "Dev-Consumers"),
        ("Prod-Jobs/Resize", "Prod-Consumers"),
    ]
    dev = found.find("Dev-Jobs/Resize")
    assert isinstance(dev.consumer, LambdaConsumer) and dev.consumer.timeout_s == 30
    assert dev.consumer.function_name is None  # synthesized: no physical id yet
    # ... and the consumer's stack finds it too
    assert found.find("Resize", stack="Dev-Consumers") is dev


def marked(stack: str, *, queue_path: str | None = None, consumer_path: str | None = None, imports: str = "") -> Any:
    """A template of one job queue (``queue_path``) or one ECS consumer (``consumer_path``), importing from
    ``imports``: what two apps deploying a job queue of the same construct path to one account leave."""
    resources: dict[str, Any] = {}
    if queue_path is not None:
        marker = {"version": 1, "job_type": queue_path.rsplit("/", 1)[1], "path": queue_path, "queue": None}
        resources["Q"] = {"Type": "AWS::SQS::Queue", "Metadata": {QUEUE_MARKER: marker}}
    if consumer_path is not None:
        marker = {"version": 1, "path": consumer_path, "kind": "ecs", "service": {"logical_id": "S"}}
        properties = {"Cluster": {"Fn::ImportValue": f"{imports}:ExportsOutputRefCluster"}}
        resources["S"] = {"Type": "AWS::ECS::Service", "Properties": properties, "Metadata": {CONSUMER_MARKER: marker}}
    return StackTemplate(stack, {"Resources": resources})


def test_of_two_job_queues_of_one_path_the_consumer_s_is_the_one_its_stack_imports() -> None:
    # GIVEN two apps' Jobs stacks (named apart) with a job queue of one construct path, and a consumer stack
    stacks = [
        marked("TeamA-Jobs", queue_path="Jobs/Encode"),
        marked("TeamB-Jobs", queue_path="Jobs/Encode"),
        marked("TeamB-Workers", consumer_path="Jobs/Encode", imports="TeamB-Jobs"),
    ]
    # WHEN discovery joins them THEN the consumer is TeamB's, whose exports its stack imports; TeamA's has none
    by_name = {j.name: j for j in discover_templates(stacks).job_types}
    consumer = by_name["TeamB-Jobs/Encode"].consumer
    assert isinstance(consumer, EcsConsumer) and consumer.stack == "TeamB-Workers"
    assert by_name["TeamA-Jobs/Encode"].consumer is None
    # ... and one it does not import from is joined to neither (never to a guess)
    lost = discover_templates([*stacks[:2], marked("Elsewhere", consumer_path="Jobs/Encode", imports="Other")])
    assert [j.consumer for j in lost.job_types] == [None, None]


def test_an_imported_value_is_computed_from_the_exports() -> None:
    # a consumer of another stack's job queue names the queue's URL with Fn::ImportValue (the worker's command)
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/Jobs-Encode"
    stack = StackTemplate("Workers", {}, exports={"Jobs:ExportsOutputRefEncodeQueue": url})
    assert stack.value({"Fn::ImportValue": "Jobs:ExportsOutputRefEncodeQueue"}) == url
    with pytest.raises(intrinsics.Unresolvable, match="Fn::ImportValue Jobs:Other locally: no stack exports it"):
        intrinsics.resolve({"Fn::ImportValue": "Jobs:Other"}, stack)


def test_a_queue_adopted_with_no_consumer_bound_is_found_with_what_it_declared(tmp_path: Path) -> None:
    # GIVEN a queue made elsewhere adopted with no consumer bound through jobqueues (a service of the team's own runs
    # its worker_command), its p99 no integer; beside it an adopted queue with a function of its own
    app = cdk.App(outdir=str(tmp_path))
    jobs = cdk.Stack(app, "Jobs", env=ENV)
    arn = "arn:aws:sqs:us-east-1:123456789012:{}"
    for name in ("Billing", "Render"):
        adopted = JobQueue.from_queue_attributes(
            jobs,
            name,
            job_type=name,
            queue=sqs.Queue.from_queue_arn(jobs, f"{name}Queue", arn.format(name.lower())),
            dead_letter_queue=sqs.Queue.from_queue_arn(jobs, f"{name}Dlq", arn.format(f"{name.lower()}-dlq")),
            visibility_timeout=Duration.minutes(3),
            processing_p99=Duration.millis(12_500),
        )
    adopted.add_lambda_consumer(own_function(jobs, "RenderFn"))
    # WHEN discovery reads the template
    by_type = {j.job_type: j for j in discover_templates(templates(app)).job_types}
    # THEN both job types are found, with their queues and declared numbers; the function joined to its own
    billing = by_type["Billing"]
    assert sorted(by_type) == ["Billing", "Render"] and billing.consumer is None
    assert (billing.path, billing.visibility_timeout_s, billing.processing_p99_s) == ("Jobs/Billing", 180, 12.5)
    assert billing.queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/billing"
    assert billing.dead_letter_queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/billing-dlq"
    assert isinstance(by_type["Render"].consumer, LambdaConsumer) and by_type["Render"].processing_p99_s == 12.5
    # AND the template stays cfn-lint clean (a marker's p99 of 12.5 s is decimal text in the template's metadata)
    assert cfn_lint_findings(Path(app.synth().directory)) == []
