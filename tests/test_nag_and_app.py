"""The example app synthesizes with zero unacknowledged cdk-nag AwsSolutions findings."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations, cx_api
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_helpers import lint_template
from cdk_nag import AwsSolutionsChecks
from emulator_apps import consumers_app, ecs_options_app, stages_app

from app import build_app
from jobqueues import JobQueue
from jobqueues.ops.assembly import stack_artifacts


@pytest.fixture(scope="module")
def example_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[cdk.App, cx_api.CloudAssembly]:
    """The example app synthesized as `cdk` runs it with credentials: with a concrete account."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
        app = build_app(cdk.App(outdir=str(tmp_path_factory.mktemp("example.out"))))
        return app, app.synth()  # raises ValidationFailed on any unacknowledged finding


def test_example_app_is_nag_clean_and_declares_the_seed_job_types(
    example_app: tuple[cdk.App, cx_api.CloudAssembly],
) -> None:
    app, assembly = example_app
    (stack,) = [s for s in app.node.children if isinstance(s, cdk.Stack)]
    vts = {
        queue["Properties"]["QueueName"]: queue["Properties"].get("VisibilityTimeout")
        for queue in Template.from_stack(stack).find_resources("AWS::SQS::Queue").values()
    }
    assert vts["JobQueuesExample-VideoTranscode"] == 480
    assert vts["JobQueuesExample-EmailSend"] == 10
    assert vts["JobQueuesExample-Thumbnails"] == 185
    assert assembly.get_stack_by_name("JobQueuesExample").template


def test_nag_is_live_and_job_queues_pass_it() -> None:
    # The same check fails on a bare queue, so a clean result above means something.
    app = cdk.App()
    stack = cdk.Stack(app, "Nag")
    JobQueue(stack, "Job", processing_p99=Duration.seconds(3))
    sqs.Queue(stack, "Bare")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match=r"AwsSolutions-SQS3[\s\S]*AwsSolutions-SQS4|Nag/Bare") as raised:
        app.synth()
    assert "Nag/Job" not in str(raised.value)


def test_cfn_lint_and_nag_pass_on_every_template_of_the_example_and_emulator_apps_with_no_lookup(
    example_app: tuple[cdk.App, cx_api.CloudAssembly], tmp_path: Path
) -> None:
    consumers = consumers_app.build_app(cdk.App(outdir=str(tmp_path / "consumers.out"))).synth()
    stages = stages_app.build_app(cdk.App(outdir=str(tmp_path / "stages.out"))).synth()
    ecs_options_app.build_app(options := cdk.App(outdir=str(tmp_path / "ecs_options.out")))
    Validations.of(options).add_plugins(AwsSolutionsChecks(options))
    ecs_options = options.synth()  # raises ValidationFailed on any unacknowledged finding
    templates = []
    for assembly in (example_app[1], consumers, stages, ecs_options):
        for directory in [Path(assembly.directory), *(Path(a.full_path) for a in assembly.nested_assemblies)]:
            manifest = json.loads((directory / "manifest.json").read_text())
            assert not manifest.get("missing"), manifest["missing"]  # synth looked nothing up in the account
        templates += [stack.template_file for stack in stack_artifacts(Path(assembly.directory))]
    # the example, the consumers app, the Stages app's top-level stack + 2 Stages, the ECS options app
    assert len(templates) == 6
    findings = [
        f"{template.name}: {match.rule.id} {match.message}"
        for template in templates
        for match in lint_template(template)
    ]
    assert findings == []  # errors and warnings


def test_the_tests_lint_finds_what_cfn_lint_finds_template_after_template(tmp_path: Path) -> None:
    """``lint_template`` builds cfn-lint's rules once a process; each template still gets every finding."""
    from cfnlint.api import ManualArgs, lint_file

    # GIVEN two templates, each with its own mistakes (an unknown property, a VT over SQS's 12 h, a missing
    # resource, a runtime long retired), linted one after the other
    queue = {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 999_999, "Bogus": 1}}
    function = {
        "Type": "AWS::Lambda::Function",
        "Properties": {"Runtime": "python2.7", "Handler": "a.b", "Code": {"ZipFile": "x"}, "Role": "arn:x"},
        "DependsOn": "Missing",
    }
    templates = []
    for name, resource in (("Queue", queue), ("Function", function)):
        templates.append(tmp_path / f"{name}.template.json")
        templates[-1].write_text(json.dumps({"Resources": {name: resource}}))
    for template in templates:
        # WHEN the tests' helper lints it THEN it finds what cfn-lint's own lint_file finds, and finds something
        found = sorted((m.rule.id, m.message) for m in lint_template(template))
        assert found == sorted((m.rule.id, m.message) for m in lint_file(template, ManualArgs(regions=["us-east-1"])))
        assert found, template.name
