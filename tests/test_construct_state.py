"""What jobqueues learns while an app is built lives on the construct tree (``jobqueues.registry``): no module of
the constructs keeps state in its globals, and two apps in one process never see each other's job types, queue
names or consumers."""

from __future__ import annotations

import ast
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_helpers import ENV

from jobqueues import EcsJob, JobQueue, JobQueueError, LambdaJob
from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.registry import REGISTRY_ID, AppRegistry, StackRegistry, registry_of

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "constructs" / "jobqueues"
HANDLERS = str(ROOT / "lambda_src" / "handlers")
IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
ARN = "arn:aws:sqs:us-east-1:123456789012:{}"
#: Calls that make a mutable container.
_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary"}


def declare(app: cdk.App) -> cdk.Stack:
    """One stack of every kind of job type, the same job types and names in every app."""
    stack = cdk.Stack(app, "Jobs", env=ENV)
    JobQueue(stack, "Email", processing_p99=Duration.seconds(3), queue_name="orders")
    LambdaJob(
        stack, "Thumbs", code=lambda_.Code.from_asset(HANDLERS), handler="thumbs.handle", timeout=Duration.seconds(30)
    )
    EcsJob(stack, "Render", handler="render:handle", processing_p99=Duration.seconds(30))
    adopted = JobQueue.from_queue_attributes(
        stack,
        "Resize",
        job_type="Resize",
        queue=sqs.Queue.from_queue_arn(stack, "ResizeQueue", ARN.format("resize")),
        dead_letter_queue=sqs.Queue.from_queue_arn(stack, "ResizeDlq", ARN.format("resize-dlq")),
        visibility_timeout=Duration.minutes(5),
    )
    adopted.worker_command("resize:handle")
    return stack


def test_two_apps_in_one_process_declare_the_same_job_types_and_queue_names() -> None:
    # GIVEN two apps in one process, each declaring the same job types (one with a fixed queue name)
    first, second = cdk.App(context={IMAGE_CONTEXT: IMAGE}), cdk.App(context={IMAGE_CONTEXT: IMAGE})
    stacks = [declare(first), declare(second)]
    # WHEN both synthesize THEN neither sees the other's names
    for stack in stacks:
        names = {
            r["Properties"].get("QueueName")
            for r in Template.from_stack(stack).to_json()["Resources"].values()
            if r["Type"] == "AWS::SQS::Queue"
        }
        assert {"orders", "orders-dlq", "Jobs-Thumbs", "Jobs-Render-dlq"} <= names
    # AND each app still refuses a job type declared twice in it, and each job queue a second consumer
    with pytest.raises(JobQueueError, match=r"job type 'Email' is already declared at Jobs/Email"):
        JobQueue(cdk.Stack(second, "More", env=ENV), "Email", processing_p99=Duration.seconds(3))
    thumbs = stacks[1].node.find_child("Thumbs")
    assert isinstance(thumbs, LambdaJob)
    with pytest.raises(JobQueueError, match=r"has a consumer already \(Jobs/Thumbs\)"):
        thumbs.job_queue.add_lambda_consumer(thumbs.function)


def test_the_registries_are_constructs_of_the_tree() -> None:
    app = cdk.App(context={IMAGE_CONTEXT: IMAGE})
    stack = declare(app)
    # the app's names, in a child of the app
    app_registry = app.node.try_find_child(REGISTRY_ID)
    assert isinstance(app_registry, AppRegistry)
    assert sorted(job_type for (*_, job_type) in app_registry.names.job_types) == [
        "Email",
        "Render",
        "Resize",
        "Thumbs",
    ]
    # the stack's facts and budget, in a child of the stack, found by the constructs of jobqueues without a lookup
    stack_registry = stack.node.try_find_child(REGISTRY_ID)
    assert isinstance(stack_registry, StackRegistry) and stack_registry.names is app_registry.names
    assert registry_of(stack) is stack_registry and registry_of(stack.node.find_child("Thumbs")) is stack_registry
    assert stack_registry.facts.name == "Jobs" and stack_registry.budget.job_types == 3
    # plain constructs: nothing in the template
    assert not [r for r in Template.from_stack(stack).to_json()["Resources"] if REGISTRY_ID in r]


def module_state(source: str) -> list[str]:
    """The module-level names of ``source`` bound to a mutable container (constants, in upper case, aside)."""
    found = []
    for node in ast.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        value = getattr(node, "value", None)
        mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp) or (
            isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in _MUTABLE_CALLS
        )
        found += [
            t.id
            for t in targets
            if mutable and isinstance(t, ast.Name) and not t.id.isupper() and not t.id.startswith("__")
        ]
    return found


def test_no_module_of_the_constructs_keeps_state_in_its_globals() -> None:
    # The check finds a registry or a cache at module level
    assert module_state("_cache: dict[int, str] = {}\n_seen = weakref.WeakKeyDictionary()\nLIMITS = {'a': 1}\n") == [
        "_cache",
        "_seen",
    ]
    # and no module of the constructs has one (the command, its operations and the emulator are not the constructs)
    state = {path.name: module_state(path.read_text()) for path in sorted(CORE.glob("*.py"))}
    assert {name: found for name, found in state.items() if found} == {}
