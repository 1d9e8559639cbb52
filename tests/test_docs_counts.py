"""The counts the docs state are the code's: each is read from its page and compared with what the code builds.

A count that changes with the code (a job queue's resources, what a Lambda or an ECS job adds, how many fit in a
stack, the example app's resources and the properties ``make local`` compares, the suite's fault fleet) fails here
until its page says the new figure. So does a size the build makes (the ``sqslease`` layer's) once its page's
figure is further from the built one than :data:`SIZE_TOLERANCE`. Measurements (times, ratios) are not counts:
each page says how and when it measured them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk.assertions import Template
from aws_cdk.aws_lambda import Code
from emulator_fixtures import NEEDS_CDK, Deployment
from support.bench_modules import load_bench

from jobqueues import EcsJob, JobQueue, LambdaJob
from jobqueues.stack_limits import (
    CLOUDFORMATION_MAX_RESOURCES,
    RESOURCES_PER_JOB_QUEUE,
    RESOURCES_PER_STACK,
    job_types_that_fit,
)
from jobqueues.stack_spreading import DEFAULT_JOB_TYPES_PER_STACK

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: How far a stated size may be from the built one, as a share of the built one: an edit of sqslease moves its layer
#: by a percent or so, a figure left stale for a few rounds by more.
SIZE_TOLERANCE = 0.05


def section(page: str, heading: str) -> str:
    """The text of ``page``'s section under ``heading`` (a ``## `` line), up to the next heading."""
    text = (DOCS / page).read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start : end if end != -1 else None].split())


def figure(text: str, pattern: str) -> int:
    """The number ``pattern``'s group ``n`` finds in ``text`` (thousands separators allowed)."""
    found = re.search(pattern, text)
    assert found, f"the docs no longer say {pattern!r}: update this test with the page"
    return int(found["n"].replace(",", ""))


def resources(*builders: Callable[[cdk.Stack, str], object]) -> int:
    """The resources of a stack holding one job type per builder."""
    app = cdk.App()
    stack = cdk.Stack(app, "Counted", env=cdk.Environment(account="123456789012", region="us-east-1"))
    for index, build in enumerate(builders):
        build(stack, f"Job{index}")
    return len(Template.from_stack(stack).to_json()["Resources"])


def job_queue(stack: cdk.Stack, name: str) -> object:
    return JobQueue(stack, name, processing_p99=Duration.seconds(3))


def job_queue_with_queue_time(stack: cdk.Stack, name: str) -> object:
    return JobQueue(stack, name, processing_p99=Duration.seconds(3), max_queue_time=Duration.minutes(5))


def job_queue_with_payload_bucket(stack: cdk.Stack, name: str) -> object:
    return JobQueue(stack, name, processing_p99=Duration.seconds(3), payload_bucket=True)


def lambda_job(stack: cdk.Stack, name: str) -> object:
    code = Code.from_asset(str(DOCS.parent / "lambda_src" / "handlers"))
    return LambdaJob(stack, name, code=code, handler="thumbs.handle", timeout=Duration.seconds(30))


def ecs_job(stack: cdk.Stack, name: str) -> object:
    return EcsJob(stack, name, handler="media.transcode:handle", processing_p99=Duration.minutes(4))


def test_the_resources_per_job_type_are_what_a_stack_holds() -> None:
    text = section("constructs.md", "Many job types: the resources-per-stack limit")
    per_queue = figure(text, r"A job queue is (?P<n>\d+) resources")
    assert figure(text, r"plus (?P<n>\d+) per stack") == RESOURCES_PER_STACK
    assert per_queue == resources(job_queue) - RESOURCES_PER_STACK
    assert (
        figure(text, r"; (?P<n>\d+) with `max_queue_time`")
        == resources(job_queue_with_queue_time) - RESOURCES_PER_STACK
    )
    bucket = figure(text, r"(?P<n>\d+) more with\s+`payload_bucket=True`")
    assert bucket == resources(job_queue_with_payload_bucket) - RESOURCES_PER_STACK - per_queue
    # A consumer's shared resources (the stack's sqslease layer, EcsJob's default cluster and VPC) come with the
    # first job of its kind: what a job type adds is what a second one adds, its queue pair aside.
    lambda_adds = resources(lambda_job, lambda_job) - resources(lambda_job) - per_queue
    ecs_adds = resources(ecs_job, ecs_job) - resources(ecs_job) - per_queue
    assert figure(text, r"a Lambda job adds (?P<n>\d+)") == lambda_adds
    assert figure(text, r"and an ECS job (?P<n>\d+)") == ecs_adds


def test_the_stack_limit_figures_are_the_rules() -> None:
    text = section("constructs.md", "Many job types: the resources-per-stack limit")
    per_queue = figure(text, r"A job queue is (?P<n>\d+) resources")
    fit = job_types_that_fit(CLOUDFORMATION_MAX_RESOURCES, per_queue)
    assert figure(text, r"so a stack holds at most (?P<n>\d+)") == fit
    assert figure(text, r"default (?P<n>\d+), 0 turns") == CLOUDFORMATION_MAX_RESOURCES
    # The error quoted is the one test_stack_limits.py raises with one job queue too many.
    assert figure(text, r"declares (?P<n>\d+) job types") == fit + 1
    assert figure(text, r"job types = (?P<n>\d+) resources") == (fit + 1) * per_queue + RESOURCES_PER_STACK
    assert figure(text, r"at most (?P<n>\d+) per stack at") == fit
    assert figure(text, r"with (?P<n>\d+) job types each") == DEFAULT_JOB_TYPES_PER_STACK
    assert figure(text, r"\((?P<n>\d+) resources each with every alarm on\)") == RESOURCES_PER_JOB_QUEUE


@NEEDS_CDK
def test_the_make_local_transcript_counts_the_example_app(example_deployment: Deployment) -> None:
    # The transcript is a real run, trimmed; the counts it shows are the example app's, deployed and checked.
    text = section("emulator.md", "What `make local` prints")
    report = example_deployment.report
    assert figure(text, r"stack JobQueuesExample: (?P<n>\d+) resources created") == len(
        report.stacks["JobQueuesExample"]
    )
    assert figure(text, r"(?P<n>[\d,]+) properties match their templates") == report.properties_compared


@NEEDS_CDK
def test_the_local_deploy_transcript_counts_the_ops_app(ops_deployment: Deployment) -> None:
    # docs/cli.md's `jobqueues local deploy` is a run on tests/ops_app: a Stage's stack and a top-level one.
    text = section("cli.md", "jobqueues local")
    stacks = ops_deployment.report.stacks
    for stack in ("Prod-Billing", "OpsShared"):
        assert figure(text, rf"stack {stack}: (?P<n>\d+) resources created") == len(stacks[stack])


def test_the_fault_fleet_is_described_as_the_suite_runs_it() -> None:
    from test_fault_injection import IDEMPOTENCY_FLEET as fleet

    text = section("testing.md", "The fault fleet")
    assert figure(text, r"each with (?P<n>\d+) jobs") == fleet.jobs
    assert figure(text, r"\((?P<n>\d+) % longer than the") == round(fleet.long_share * 100)
    assert figure(text, r"longer than the (?P<n>\d+) s lease") == fleet.visibility_timeout
    assert figure(text, r"on (?P<n>\d+) workers x") == fleet.workers
    assert figure(text, r"workers x (?P<n>\d+) handlers") == fleet.concurrency
    assert figure(text, r"(?P<n>\d+) % of SQS requests faulted") == round(fleet.fault_rate * 100)
    assert figure(text, r"(?P<n>\d+) % of DynamoDB requests faulted") == round(fleet.dynamodb_fault_rate * 100)
    assert figure(text, r"(?P<n>\d+) % of delete requests") == round(fleet.redeliver_rate * 100)
    assert figure(text, r"SIGTERM every (?P<n>\d+) s") == fleet.kill_every_s
    summary = section("reliability.md", "The runs")
    assert figure(summary, r"test_fault_injection.py`: (?P<n>\d+) jobs per queue") == fleet.jobs
    assert figure(summary, r"a kill every (?P<n>\d+) s\)") == fleet.kill_every_s


def test_the_sqslease_layer_size_is_the_built_layer_s() -> None:
    # GIVEN the sizes docs/benchmarks.md states for the layer
    text = " ".join((DOCS / "benchmarks.md").read_text().split())
    pattern = r"The `sqslease` layer is \*\*(?P<zipped>[\d.]+) KiB zipped\*\* \((?P<unzipped>[\d.]+) KiB unzipped"
    stated = re.search(pattern, text)
    assert stated, f"the docs no longer say {pattern!r}: update this test with the page"
    # WHEN the layer is built as a stack with a LambdaJob builds it (jobqueues.lease_layer) and zipped, as
    # bench/consumer_synth_bench.py measures it
    load_bench("synth_bench")  # consumer_synth_bench imports it
    zipped, unzipped = load_bench("consumer_synth_bench").layer_size()
    # THEN each stated size is within the tolerance of the built one
    for name, built in (("zipped", zipped), ("unzipped", unzipped)):
        kib = float(stated[name])
        assert abs(kib * 1024 - built) <= SIZE_TOLERANCE * built, (
            f"docs/benchmarks.md says the sqslease layer is {kib} KiB {name}; it builds to {built / 1024:.1f} KiB "
            "(bench/consumer_synth_bench.py prints both): update the page"
        )


def test_the_attributes_that_create_a_deleted_queue_again_are_its_stacks() -> None:
    # GIVEN docs/cli.md's attributes.json for the queue of JobQueue(stack, "Render", 20 s) in a stack Jobs
    text = (DOCS / "cli.md").read_text()
    shown = json.loads(
        text[text.index("### A queue deleted outside its stack") :].split("```json\n")[1].split("```")[0]
    )
    # WHEN that queue is synthesized
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=cdk.Environment(account="123456789012", region="us-east-1"))
    JobQueue(stack, "Render", processing_p99=Duration.seconds(20))
    resources = Template.from_stack(stack).to_json()["Resources"]
    queues = {
        r["Properties"]["QueueName"]: (k, r["Properties"])
        for k, r in resources.items()
        if r["Type"] == "AWS::SQS::Queue"
    }
    logical_id, properties = queues["Jobs-Render"]
    arns = {queues[name][0]: f"arn:aws:sqs:us-east-1:123456789012:{name}" for name in queues}
    policy = next(
        r["Properties"]["PolicyDocument"]
        for r in resources.values()
        if r["Type"] == "AWS::SQS::QueuePolicy" and r["Properties"]["Queues"] == [{"Ref": logical_id}]
    )

    def written_out(value: Any) -> Any:  # each Fn::GetAtt of a queue's Arn as the ARN the docs tell to write
        if isinstance(value, dict) and list(value) == ["Fn::GetAtt"]:
            return arns[value["Fn::GetAtt"][0]]
        if isinstance(value, dict):
            return {k: written_out(v) for k, v in value.items()}
        return [written_out(v) for v in value] if isinstance(value, list) else value

    # THEN the docs' attributes are its properties as SQS takes them (strings, JSON text), and its policy
    expected = {k: written_out(v) for k, v in properties.items() if k != "QueueName"}
    assert {k: v for k, v in shown.items() if k != "Policy"}.keys() == expected.keys()
    for name, value in expected.items():
        assert (json.loads(shown[name]) if isinstance(value, dict) else shown[name]) == (
            value if isinstance(value, dict) else str(value).lower() if isinstance(value, bool) else str(value)
        ), name
    assert json.loads(shown["Policy"]) == written_out(policy)
