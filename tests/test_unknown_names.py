"""The lines for names not found that a lookup of a job type does not give: ``--stack`` of ``status`` and ``drift``
(:func:`jobqueues.ops.discovery.discover`), a stack's or a queue's name given as a job type, and ``local up``'s
``--env`` in a form it does not take. GIVEN/WHEN/THEN, on fake clients: no network.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jobqueues.cli import main
from jobqueues.ops.discovery import NOT_HERE, Discovery, JobType, LambdaConsumer, discover
from jobqueues.ops.errors import BadInput, NotFound
from jobqueues.ops.name_hints import construct_paths, resource_names
from jobqueues.ops.unknown_names import no_deployed_stacks
from jobqueues.profiles_document import SUPPORTED_SCHEMA_VERSION

ACCOUNT = "123456789012"


class Deployed:
    """A CloudFormation client (in us-east-1) of ``templates``' stacks (name -> template), none with a physical
    resource."""

    meta = SimpleNamespace(region_name="us-east-1")

    def __init__(self, templates: dict[str, dict[str, Any]]) -> None:
        self.templates = templates

    def get_paginator(self, operation: str) -> Any:
        if operation == "list_stack_resources":
            return SimpleNamespace(paginate=lambda StackName: [{"StackResourceSummaries": []}])
        assert operation == "list_stacks", operation
        summaries = [
            {
                "StackName": name,
                "StackId": f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/{name}/1",
                "StackStatus": "CREATE_COMPLETE",
            }
            for name in self.templates
        ]
        return SimpleNamespace(paginate=lambda: [{"StackSummaries": summaries}])

    def get_template(self, StackName: str, TemplateStage: str) -> Any:
        return {"TemplateBody": json.dumps(self.templates[StackName])}


def listing(*stacks: str) -> Deployed:
    """Stacks without a job type."""
    return Deployed({name: {} for name in stacks})


def test_a_stack_option_that_names_no_deployed_stack_says_where_it_looked_and_what_to_change() -> None:
    # GIVEN three deployed stacks in one region
    cloudformation = listing("CDKToolkit", "OpsShared", "Prod-Billing")
    # WHEN --stack names none of them, THEN the line names the region, the stacks there and the region advice
    with pytest.raises(NotFound) as elsewhere:
        discover(cloudformation, ["Payments"])
    assert str(elsewhere.value) == (
        f"no deployed stack Payments in region us-east-1, account {ACCOUNT} (stacks there: CDKToolkit, OpsShared, "
        f"Prod-Billing): {NOT_HERE}"
    )
    # WHEN its case slipped, THEN the line names the stack as it is spelled
    with pytest.raises(NotFound) as slip:
        discover(cloudformation, ["OpsShared", "prod-billing"])
    assert str(slip.value).endswith("; did you mean stack Prod-Billing? (names are case-sensitive)"), slip.value
    # WHEN two are missing, THEN both are named
    with pytest.raises(NotFound) as two:
        discover(cloudformation, ["Dev-Billing", "Nope"])
    assert str(two.value).startswith("no deployed stacks Dev-Billing, Nope in region us-east-1"), two.value


def test_a_stack_option_that_names_nothing_is_refused_as_bad_input() -> None:
    # GIVEN deployed stacks
    cloudformation = listing("OpsShared", "Prod-Billing")
    # WHEN --stack is empty, spaced, or a job type's STACK/JOB_TYPE, THEN it is refused, the value quoted
    for given, said in (
        ("", "--stack '': give a stack's name"),
        (" Prod-Billing", "--stack ' Prod-Billing': spaces around a name: give it without them"),
        ("/", "--stack '/': give a stack's name"),
    ):
        with pytest.raises(BadInput) as refused:
            discover(cloudformation, ["OpsShared", given])
        assert str(refused.value).startswith(said), refused.value


def test_a_stack_option_that_names_nothing_is_one_line_and_status_2_in_status_and_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a region whose stacks are listed by a fake client, and a profiles file of no deployment
    from jobqueues.cli.context import Aws

    monkeypatch.setattr(Aws, "client", lambda self, service: listing("OpsShared", "Prod-Billing"))
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": SUPPORTED_SCHEMA_VERSION, "deployments": {}}))
    for command in (["status"], ["drift", "--profiles", str(profiles)]):
        # WHEN the command is given an empty --stack, or one whose case slipped
        assert main([*command, "--stack", ""]) == 2
        # THEN each is one line on stderr, status 2
        assert capsys.readouterr().err == "error: --stack '': give a stack's name\n"
        assert main([*command, "--stack", "opsshared"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.endswith("did you mean stack OpsShared? (names are case-sensitive)\n"), err


def test_a_stack_or_queue_name_given_as_the_job_type_is_named_as_what_it_is() -> None:
    # GIVEN a deployed FIFO job type and a stack without job types
    invoices = JobType(
        "Invoices",
        "Prod-Billing",
        "Prod/Billing/Invoices",
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/Prod-Billing-Invoices.fifo",
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/Prod-Billing-Invoices-dlq.fifo",
    )
    found = Discovery([invoices], ["CDKToolkit", "Prod-Billing"], "region us-east-1", NOT_HERE)
    # WHEN the stack's name is given as the job type, THEN the line says it is a stack and how to name its job types
    with pytest.raises(NotFound) as stack:
        found.find("Prod-Billing")
    assert str(stack.value).endswith(
        "; Prod-Billing is a stack: name one of its job types as STACK/JOB_TYPE, e.g. Prod-Billing/Invoices"
    ), stack.value
    with pytest.raises(NotFound) as empty:
        found.find("CDKToolkit")
    assert str(empty.value).endswith("; CDKToolkit is a stack without job types"), empty.value
    # WHEN a queue's name (copied from the console) is given, THEN the line names the job type it belongs to, as
    # for its URL (one line of what it is, not the list of every job type)
    with pytest.raises(NotFound) as queue:
        found.find("Prod-Billing-Invoices.fifo")
    assert str(queue.value) == (
        "Prod-Billing-Invoices.fifo names a queue, not a job type: it is the queue of Prod-Billing/Invoices"
    )
    with pytest.raises(NotFound) as dead:
        found.find("Prod-Billing-Invoices-dlq.fifo")
    assert str(dead.value) == (
        "Prod-Billing-Invoices-dlq.fifo names a dead-letter queue, not a job type: it is the dead-letter queue of "
        "Prod-Billing/Invoices"
    )


def test_env_in_a_form_local_up_does_not_take_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN --env is not NAME=VALUE, or names a job type with an empty part
    for value, said in (
        ("GREETING", "not NAME=VALUE (every consumer) or JOB_TYPE:NAME=VALUE"),
        ("Prod-Billing/:A=1", "'Prod-Billing/': name a job type JOB_TYPE or STACK/JOB_TYPE"),
    ):
        assert main(["local", "up", "--env", value]) == 2
        # THEN it is one line naming the option, not click's usage block, before anything starts
        err = capsys.readouterr().err
        assert err.startswith(f"error: --env {value!r}: {said}") and err.count("\n") == 1, err


def test_env_of_an_unknown_job_type_lists_only_those_run_locally() -> None:
    from jobqueues.emulator.consumers.local_env import environments, parse_env

    # GIVEN a job type consumed locally and one without a consumer
    receipts = JobType(
        "Receipts", "Prod-Billing", "Prod-Billing/Receipts", None, None, consumer=LambdaConsumer(None, None)
    )
    emails = JobType("Emails", "OpsShared", "OpsShared/Emails", None, None)
    found = Discovery([receipts, emails], ["OpsShared", "Prod-Billing"])
    # WHEN --env names a job type that is not there, THEN the line lists those an --env can name: run locally
    with pytest.raises(NotFound) as unknown:
        environments(parse_env(["Receipt:A=1"]), found, ["Prod-Billing/Receipts"])
    assert str(unknown.value) == (
        "--env Receipt:...: no job type Receipt in 2 stacks searched; job types: Prod-Billing/Receipts; did you mean "
        "Receipts?"
    )


def test_a_queue_url_or_arn_given_as_the_job_type_names_its_job_type() -> None:
    # GIVEN a deployed FIFO job type
    base = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}"
    invoices = JobType(
        "Invoices",
        "Prod-Billing",
        "Prod/Billing/Invoices",
        f"{base}/Prod-Billing-Invoices.fifo",
        f"{base}/Prod-Billing-Invoices-dlq.fifo",
    )
    found = Discovery([invoices], ["Prod-Billing"], "region us-east-1", NOT_HERE)
    # WHEN the queue's URL or ARN (what the console shows) is given, THEN the line names the job type to give
    for given in (f"{base}/Prod-Billing-Invoices.fifo", f"arn:aws:sqs:us-east-1:{ACCOUNT}:Prod-Billing-Invoices.fifo"):
        with pytest.raises(NotFound) as queue:
            found.find(given)
        assert str(queue.value) == f"{given} names a queue, not a job type: it is the queue of Prod-Billing/Invoices"
    with pytest.raises(NotFound) as dead:
        found.find(f"{base}/Prod-Billing-Invoices-dlq.fifo")
    assert str(dead.value).endswith(
        "names a queue, not a job type: it is the dead-letter queue of Prod-Billing/Invoices"
    )
    # WHEN it is no job type's queue, THEN the line says so and lists the job types
    with pytest.raises(NotFound) as other:
        found.find(f"{base}/Legacy")
    assert str(other.value) == (
        f"{base}/Legacy names a queue, not a job type, and no job type's queue is Legacy; job types: "
        "Prod-Billing/Invoices"
    )


def test_a_queue_name_is_recognised_as_typed_in_a_hurry() -> None:
    # GIVEN a deployed FIFO job type
    invoices = JobType(
        "Invoices",
        "Prod-Billing",
        "Prod/Billing/Invoices",
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/Prod-Billing-Invoices.fifo",
        None,
    )
    found = Discovery([invoices], ["Prod-Billing"], "region us-east-1", NOT_HERE)
    # WHEN its queue's name is given in another case, without .fifo, or in its stack, THEN the line names the job type
    for name, stack in (
        ("prod-billing-invoices.fifo", None),
        ("Prod-Billing-Invoices", None),
        ("Prod-Billing/Prod-Billing-Invoices.fifo", None),
        ("Prod-Billing-Invoices.fifo", "Prod-Billing"),
    ):
        with pytest.raises(NotFound) as queue:
            found.find(name, stack)
        assert str(queue.value).endswith("is the queue of Prod-Billing/Invoices"), queue.value


def test_a_typo_gets_the_name_it_is_closest_to() -> None:
    # GIVEN the example app's job types
    jobs = [
        JobType("EmailSend", "JobQueuesExample", "JobQueuesExample/EmailSend", None, None),
        JobType("Transcode", "JobQueuesExample", "JobQueuesExample/Transcode", None, None),
    ]
    found = Discovery(jobs, ["CDKToolkit", "JobQueuesExample"], "region us-east-1", NOT_HERE)
    # WHEN a job type or a stack is mistyped, THEN the line suggests the closest name, in place of other advice
    for name, meant in (
        ("EmailSnd", "did you mean EmailSend?"),
        ("JobQueuesExample/EmailSnd", "did you mean JobQueuesExample/EmailSend?"),
        ("JobQueuesExampl/EmailSend", "did you mean JobQueuesExample/EmailSend?"),
        ("JobQueuesExampl/EmailSnd", "did you mean JobQueuesExample/EmailSend?"),
    ):
        with pytest.raises(NotFound) as typo:
            found.find(name)
        assert f"; {meant}" in str(typo.value), typo.value  # (a stack's with the region advice after it)
    # WHEN nothing is close, THEN no suggestion
    with pytest.raises(NotFound) as far:
        found.find("Billing")
    assert "did you mean" not in str(far.value)
    # WHEN a --stack of status is mistyped, THEN the same
    with pytest.raises(NotFound) as stack:
        discover(listing("CDKToolkit", "JobQueuesExample"), ["JobQueuesExampl"])
    assert "; did you mean stack JobQueuesExample? or pass the --region" in str(stack.value), stack.value


def test_a_job_type_or_a_job_types_name_given_to_stack_names_its_stack() -> None:
    # GIVEN a deployed app of one job queue (synthesized for real)
    import aws_cdk as cdk
    from aws_cdk import Duration

    from jobqueues import JobQueue

    app = cdk.App()
    JobQueue(cdk.Stack(app, "JobQueuesExample"), "EmailSend", processing_p99=Duration.seconds(5))
    template = app.synth().get_stack_by_name("JobQueuesExample").template
    cloudformation = Deployed({"CDKToolkit": {}, "JobQueuesExample": template})
    # WHEN status's --stack is given the job type, THEN the line names its stack
    with pytest.raises(NotFound) as job_type:
        discover(cloudformation, ["EmailSend"])
    assert str(job_type.value).endswith(
        "; EmailSend is a job type of stack JobQueuesExample: --stack JobQueuesExample"
    ), job_type.value
    # WHEN it is given STACK/JOB_TYPE, THEN the line says what to give
    with pytest.raises(NotFound) as both:
        discover(cloudformation, ["JobQueuesExample/EmailSend"])
    assert str(both.value).endswith("; JobQueuesExample/EmailSend is STACK/JOB_TYPE: --stack JobQueuesExample"), (
        both.value
    )


def test_an_env_variable_name_that_a_shell_would_refuse_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    from jobqueues.emulator.consumers.local_env import parse_env

    # WHEN --env's variable name is not one a shell takes, THEN the line says it is the name that is wrong
    for value, name in (("1A=x", "1A"), (" A=1", " A"), ("A B=1", "A B"), ("Job:1A=x", "1A")):
        with pytest.raises(BadInput) as bad:
            parse_env([value])
        assert str(bad.value) == (
            f"--env {value!r}: {name!r} is not a variable name (letters, digits and _, not starting with a digit)"
        )


def test_the_aws_options_given_to_local_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN `jobqueues --endpoint-url ... local up` is run, THEN it is refused in one line, status 2
    assert main(["--endpoint-url", "http://localhost:4566", "local", "up"]) == 2
    assert capsys.readouterr().err == ("error: --endpoint-url: not for jobqueues local, which runs its own emulator\n")


def test_the_same_stack_given_twice_is_that_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a command that acts on one job type, its lookup recorded
    from jobqueues.cli.context import Aws

    asked: list[tuple[str, str | None]] = []

    def job_type(self: Aws, name: str, stack: str | None = None) -> JobType:
        asked.append((name, stack))
        raise NotFound("recorded")

    monkeypatch.setattr(Aws, "job_type", job_type)
    # WHEN --stack names one stack twice, THEN it is looked up in that stack (two different stacks are refused)
    assert main(["dlq", "list", "EmailSend", "--stack", "JobQueuesExample", "--stack", "JobQueuesExample"]) == 2
    assert asked == [("EmailSend", "JobQueuesExample")]


def test_status_of_stacks_without_job_types_says_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a region of stacks without job types
    from jobqueues.cli.context import Aws

    monkeypatch.setattr(Aws, "client", lambda self, service: listing("CDKToolkit", "Network"))
    # WHEN status is asked for one of them, or for all, THEN it says where it looked
    assert main(["status", "--stack", "CDKToolkit"]) == 0
    assert capsys.readouterr().out == (
        f"no job types in region us-east-1, account {ACCOUNT} (stacks searched: CDKToolkit)\n"
    )
    assert main(["status"]) == 0
    assert capsys.readouterr().out.endswith("(stacks searched: CDKToolkit, Network)\n")


def two_stages() -> Discovery:
    """A Dev and a Prod Stage, each of stack Billing (CloudFormation: Dev-Billing, Prod-Billing) with Invoices."""
    jobs = [
        JobType("Invoices", f"{stage}-Billing", f"{stage}/Billing/Invoices", None, None) for stage in ("Dev", "Prod")
    ]
    return Discovery(jobs, ["CDKToolkit", "Dev-Billing", "Prod-Billing"], "region us-east-1", NOT_HERE)


def test_a_cdk_path_is_told_the_name_cloudformation_gives_it() -> None:
    found = two_stages()
    # WHEN a job type is named by its construct path (as the cdk CLI and the markers spell it), THEN the line gives
    # its name
    with pytest.raises(NotFound) as path:
        found.find("Dev/Billing/Invoices")
    assert str(path.value) == "'Dev/Billing/Invoices' is a construct path: name the job type Dev-Billing/Invoices"
    # WHEN --stack is a stack's construct path (`cdk deploy Dev/Billing`), THEN the line gives the stack's name
    with pytest.raises(NotFound) as stack:
        found.find("Invoices", "Dev/Billing")
    assert str(stack.value).endswith("; Dev/Billing is the construct path of stack Dev-Billing: --stack Dev-Billing")


def test_a_stage_or_a_stacks_id_in_its_stages_is_told_the_stacks_names() -> None:
    found = two_stages()
    # WHEN a Stage's name, or a stack's id in its Stages, is given as the stack, THEN the stacks it meant are named,
    # not the advice of another region
    for given in ("Dev", "Billing"):
        with pytest.raises(NotFound) as stage:
            found.find(f"{given}/Invoices")
        said = str(stage.value)
        assert f"{given} is in the construct path" in said and "--region" not in said, said
    with pytest.raises(NotFound) as both:
        found.find("Billing/Invoices")
    assert str(both.value).endswith(
        "; Billing is in the construct path of stacks Dev-Billing, Prod-Billing: give one of them to --stack"
    ), both.value
    # WHEN a job type is given as the stack of send, THEN it is named so
    with pytest.raises(NotFound) as job_type:
        found.find("Receipts", "Invoices")
    assert "Invoices is a job type of stacks Dev-Billing, Prod-Billing" in str(job_type.value), job_type.value


def test_a_stacks_name_in_another_case_given_as_the_job_type_is_a_stack() -> None:
    with pytest.raises(NotFound) as case:
        two_stages().find("dev-billing")
    assert str(case.value).endswith(
        "; dev-billing is stack Dev-Billing in another case (names are case-sensitive): name one of its job types "
        "as STACK/JOB_TYPE, e.g. Dev-Billing/Invoices"
    ), case.value


def test_a_stack_option_that_is_a_path_a_list_or_a_pattern_is_told_what_to_give() -> None:
    # GIVEN deployed Stages
    cloudformation = listing("CDKToolkit", "Dev-Billing", "Prod-Billing")
    # WHEN status's --stack is a construct path, THEN the line gives the stack's name
    with pytest.raises(NotFound) as path:
        discover(cloudformation, ["Dev/Billing"])
    assert str(path.value).endswith("; Dev/Billing is the construct path of stack Dev-Billing: --stack Dev-Billing")
    # WHEN it is a list or a pattern (`cdk deploy '**'`), THEN it is refused: one name a --stack
    for given in ("Dev-Billing,Prod-Billing", "Dev*", "**"):
        with pytest.raises(BadInput) as many:
            discover(cloudformation, [given])
        assert str(many.value) == (
            f"--stack {given!r}: one stack's name, not a list or a pattern (status and drift take --stack again)"
        )
    # WHEN two typos are missing, THEN each suggestion says which it is for
    with pytest.raises(NotFound) as two:
        discover(cloudformation, ["Devv-Billing", "Prodd-Billing"])
    assert str(two.value).endswith(
        "; Devv-Billing: did you mean stack Dev-Billing?; Prodd-Billing: did you mean stack Prod-Billing? or "
        f"{NOT_HERE}"
    ), two.value


def test_a_stack_arn_is_not_taken_for_a_queue() -> None:
    arn = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/Dev-Billing/1"
    with pytest.raises((NotFound, BadInput)) as stack:
        two_stages().find(arn)
    assert "names a queue" not in str(stack.value), stack.value


def test_an_empty_or_invalid_group_or_dedup_id_is_refused_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a lookup that must not be reached: the options are checked first
    from jobqueues.cli.context import Aws

    monkeypatch.setattr(Aws, "job_type", lambda self, name, stack=None: pytest.fail("looked up"))
    for options, said in (
        (["--group", ""], "--group '': empty: give the message group"),
        (["--group", "a b"], "--group 'a b': SQS takes 1 to 128 ASCII letters, digits and punctuation, not ' '"),
        (["--group", "é"], "--group 'é': SQS takes 1 to 128 ASCII letters, digits and punctuation, not 'é'"),
        (["--group", "x" * 129], f"--group '{'x' * 129}': SQS takes 1 to 128 ASCII letters"),
        (["--dedup-id", ""], "--dedup-id '': empty: give the deduplication id"),
    ):
        # WHEN send is given it
        assert main(["send", "Invoices", "--body", "{}", *options]) == 2
        # THEN one line, status 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {said}") and err.count("\n") == 1, err
    # WHEN options that cannot go together are given, THEN one line too (not click's usage block)
    for options in (["--body", "x", "--file", "f"], [], ["--file", "f", "--dedup-id", "d"]):
        assert main(["send", "Invoices", *options]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def trial_app() -> Discovery:
    """A top-level stack's job type, and a Stage's EcsJob (its job queue one level down) and nested JobQueue."""
    jobs = [JobType("Emails", "Shared", "Shared/Emails", None, None)]
    for stage in ("Staging", "Live"):
        jobs.append(JobType("Invoices", f"{stage}-Orders", f"{stage}/Orders/Invoices/Queue", None, None))
        jobs.append(JobType("Refunds", f"{stage}-Orders", f"{stage}/Orders/Billing/Refunds", None, None))
    return Discovery(jobs, ["CDKToolkit", "Live-Orders", "Shared", "Staging-Orders"], "region us-east-1", NOT_HERE)


def test_a_consumers_construct_path_names_its_job_type() -> None:
    found = trial_app()
    # WHEN an EcsJob's path (its job queue is one level down), or a nested job queue's, is given, THEN it is named
    for path, name in (
        ("Staging/Orders/Invoices", "Staging-Orders/Invoices"),
        ("Staging/Orders/Invoices/Queue", "Staging-Orders/Invoices"),
        ("Live/Orders/Billing/Refunds", "Live-Orders/Refunds"),
    ):
        with pytest.raises(NotFound) as pathed:
            found.find(path)
        assert str(pathed.value) == f"{path!r} is a construct path: name the job type {name}"
    # WHEN it is given as the stack, THEN the line gives the job type's stack
    with pytest.raises(NotFound) as stack:
        found.find("Invoices", "Staging/Orders/Invoices")
    assert str(stack.value).endswith(
        "; Staging/Orders/Invoices is the construct path of job type Staging-Orders/Invoices: --stack Staging-Orders"
    ), stack.value


def test_a_job_type_of_two_stacks_given_as_the_stack_picks_neither() -> None:
    with pytest.raises(NotFound) as two:
        trial_app().find("Refunds", "Invoices")
    assert str(two.value).endswith(
        "; Invoices is a job type of stacks Live-Orders, Staging-Orders: give one of them to --stack"
    ), two.value


def test_arns_are_named_as_what_they_are() -> None:
    found = trial_app()
    stack_arn = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/Staging-Orders/0f1e"
    queue_arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:Staging-Orders-Invoices.fifo"
    found = replace(
        found,
        job_types=[
            replace(j, queue_url=f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/Staging-Orders-Invoices.fifo")
            if j.name == "Staging-Orders/Invoices"
            else j
            for j in found.job_types
        ],
    )
    # WHEN a stack's ARN is given as the job type, THEN the line says it is a stack and how to name its job types
    with pytest.raises(NotFound) as as_job_type:
        found.find(stack_arn)
    assert str(as_job_type.value) == (
        f"{stack_arn} is a stack's ARN, not a job type; Staging-Orders is a stack: name one of its job types as "
        "STACK/JOB_TYPE, e.g. Staging-Orders/Invoices"
    )
    # WHEN a stack's or a queue's ARN is given as the stack, THEN the line gives the stack to name
    with pytest.raises(NotFound) as as_stack:
        found.find("Invoices", stack_arn)
    assert str(as_stack.value).endswith(f"; {stack_arn} is the ARN of stack Staging-Orders: --stack Staging-Orders")
    with pytest.raises(NotFound) as queue_as_stack:
        found.find("Invoices", queue_arn)
    assert str(queue_as_stack.value).endswith(
        f"; {queue_arn} is the queue of Staging-Orders/Invoices: --stack Staging-Orders"
    ), queue_as_stack.value


def test_a_stage_a_stack_id_a_list_or_a_pattern_given_as_the_job_type() -> None:
    found = trial_app()
    # WHEN a Stage's name or a stack's id in its Stages is given as the job type, THEN its stacks are named
    for given, stacks in (("Live", "stack Live-Orders"), ("Orders", "stacks Live-Orders, Staging-Orders")):
        with pytest.raises(NotFound) as staged:
            found.find(given)
        assert str(staged.value).endswith(
            f"; {given} is in the construct path of {stacks}: name a job type as STACK/JOB_TYPE, e.g. "
            f"{stacks.split(',')[0].split()[-1]}/Invoices"
        ), staged.value
    # WHEN it is a list or a pattern, THEN it is refused
    for given in ("**", "Live-Orders/*", "Invoices,Refunds"):
        with pytest.raises(BadInput) as many:
            found.find(given)
        assert str(many.value) == f"{given!r}: one job type's name, not a list or a pattern"


def test_a_value_too_long_says_how_long_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["send", "Invoices", "--body", "{}", "--group", "g" * 130]) == 2
    assert capsys.readouterr().err.endswith(" (130 given)\n")


def test_env_of_a_construct_path_is_told_the_job_types_name() -> None:
    from jobqueues.emulator.consumers.local_env import environments, parse_env

    # GIVEN the trial's app, its EcsJob consumed locally
    found = trial_app()
    consumed = ["Staging-Orders/Invoices", "Live-Orders/Invoices"]
    # WHEN --env names the EcsJob by its construct path, THEN the line, after the synth, gives its name
    with pytest.raises(NotFound) as pathed:
        environments(parse_env(["Staging/Orders/Invoices:A=1"]), found, consumed)
    assert str(pathed.value) == (
        "--env Staging/Orders/Invoices:...: 'Staging/Orders/Invoices' is a construct path: name the job type "
        "Staging-Orders/Invoices"
    )
    # ... while a name with an empty part is still refused as it is parsed
    with pytest.raises(BadInput):
        parse_env(["Staging//Invoices:A=1"])


def test_stacks_named_by_the_app_are_found_by_their_construct_paths() -> None:
    # GIVEN Stages Dev and Prd whose stack (id Jobs) the app names itself: jobs-dev, jobs-prd
    jobs = [
        JobType(job, f"jobs-{stage.lower()}", f"{stage}/Jobs/{job}{suffix}", None, None)
        for stage in ("Dev", "Prd")
        for job, suffix in (("Orders", "/Queue"), ("Emails", ""))
    ]
    found = Discovery(jobs, ["CDKToolkit", "jobs-dev", "jobs-prd"], "region us-east-1", NOT_HERE)
    # WHEN a Stage's name, the stack's id or its path is given as the stack, THEN the stack's own name is given
    for given, said in (
        ("Dev", "Dev is in the construct path of stack jobs-dev: --stack jobs-dev"),
        ("Dev/Jobs", "Dev/Jobs is in the construct path of stack jobs-dev: --stack jobs-dev"),
        ("Jobs", "Jobs is in the construct path of stacks jobs-dev, jobs-prd: give one of them to --stack"),
    ):
        with pytest.raises(NotFound) as pathed:
            found.find("Emails", given)
        assert str(pathed.value).endswith(f"; {said}"), pathed.value
    # WHEN the Stage's name is given in another case (also a fragment of the stack's name), THEN it is found as the
    # Stage, and no Stage is made up from the stack's name ("jobs-dev" is no STAGE-STACK)
    with pytest.raises(NotFound) as fragment:
        found.find("Emails", "dev")
    assert str(fragment.value).endswith("; dev is in the construct path of stack jobs-dev: --stack jobs-dev")
    with pytest.raises(NotFound) as nothing:
        found.find("Emails", "ev")
    assert "construct path" not in str(nothing.value) and "Stage" not in str(nothing.value), nothing.value


def named_by_the_app() -> Discovery:
    """Stages Test and Main, each of stack Work named by the app (work-test, work-main), a construct Pipeline in it
    holding a LambdaJob Thumbnails (its job queue one level down) and a JobQueue EmailSend."""
    jobs = [
        JobType(job, f"work-{stage.lower()}", f"{stage}/Work/Pipeline/{job}{suffix}", None, None)
        for stage in ("Test", "Main")
        for job, suffix in (("Thumbnails", "/Queue"), ("EmailSend", ""))
    ]
    return Discovery(jobs, ["Adopted2", "CDKToolkit", "work-main", "work-test"], "region us-east-1", NOT_HERE)


def test_the_fifth_trials_names_get_what_they_are() -> None:
    found = named_by_the_app()
    for name, stack, said in (
        # the stack's default name (docs: <stage>-<stack>), which the app overrode
        ("EmailSend", "Test-Work", "Test-Work is in the construct path of stack work-test: --stack work-test"),
        # a Stage's or a stack id's case slip
        ("EmailSend", "test", "test is in the construct path of stack work-test: --stack work-test"),
        (
            "EmailSend",
            "work",
            "work is in the construct path of stacks work-main, work-test: give one of them to --stack",
        ),
        # a path inside a job type's construct
        (
            "EmailSend",
            "Test/Work/Pipeline/Thumbnails/Function",
            "Test/Work/Pipeline/Thumbnails/Function is in the construct of job type work-test/Thumbnails: --stack "
            "work-test",
        ),
        # a stack's path given as STACK/JOB_TYPE: what to name instead
        (
            "Test/Work",
            None,
            "Test/Work is in the construct path of stack work-test: name a job type as work-test/JOB_TYPE",
        ),
    ):
        with pytest.raises(NotFound) as line:
            found.find(name, stack)
        assert str(line.value).endswith(f"; {said}"), line.value
    # WHEN a path in a stack, or inside a job type's construct, is given as the job type, THEN it is named
    for name, said in (
        (
            "Test/Work/Pipeline",
            "'Test/Work/Pipeline' is in the construct path of stack work-test: name a job type as work-test/JOB_TYPE",
        ),
        (
            "Test/Work/Pipeline/Thumbnails/Function",
            "'Test/Work/Pipeline/Thumbnails/Function' is a construct path: name the job type work-test/Thumbnails",
        ),
    ):
        with pytest.raises(NotFound) as line:
            found.find(name)
        assert str(line.value) == said
    # WHEN a typo's stack lacks the job type, THEN it is not suggested
    with pytest.raises(NotFound) as lacking:
        found.find("EmailSend", "Adopted")
    assert "Adopted2" not in str(lacking.value).split("stacks there")[1].split(")", 1)[1], lacking.value


def test_a_typo_of_a_stack_is_followed_by_the_region_advice_in_status_too() -> None:
    with pytest.raises(NotFound) as typo:
        discover(listing("CDKToolkit", "work-test"), ["work-tst"])
    assert str(typo.value).endswith(f"; did you mean stack work-test? or {NOT_HERE}"), typo.value


def test_status_given_job_types_shows_only_theirs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two Stages' Invoices and a shared Emails, their reads recorded
    import jobqueues.cli.status as status
    from jobqueues.cli.context import Aws

    found = two_stages()
    emails = JobType("Emails", "OpsShared", "OpsShared/Emails", None, None)
    found = replace(found, job_types=[*found.job_types, emails], stacks=[*found.stacks, "OpsShared"])
    searched: list[tuple[str, ...]] = []
    read: list[list[str]] = []

    def discover(self: Aws, stacks: tuple[str, ...] | list[str] = ()) -> Discovery:
        searched.append(tuple(stacks))
        chosen = [j for j in found.job_types if not stacks or j.stack in stacks]
        return replace(found, job_types=chosen, stacks=list(stacks) or found.stacks)

    monkeypatch.setattr(Aws, "discover", discover)
    monkeypatch.setattr(status, "_read", lambda aws, job_types: read.append([j.name for j in job_types]) or [])
    # WHEN status is given a job type (as send and dlq are), THEN only its rows are read: both Stages' for a name
    # two stacks have (status acts on neither), one for STACK/JOB_TYPE
    assert main(["status", "Invoices"]) == 0
    assert main(["status", "Prod-Billing/Invoices", "Emails"]) == 0
    assert main(["status", "Invoices", "--stack", "Dev-Billing"]) == 0
    assert read == [
        ["Dev-Billing/Invoices", "Prod-Billing/Invoices"],
        ["Prod-Billing/Invoices", "OpsShared/Emails"],
        ["Dev-Billing/Invoices"],
    ]
    capsys.readouterr()
    # WHEN a name is no job type there, THEN it is the lookup's one line, status 2, and nothing is read
    assert main(["status", "Invoice"]) == 2
    assert capsys.readouterr().err.endswith("did you mean Dev-Billing/Invoices or Prod-Billing/Invoices?\n")
    assert main(["status", "Emails", "--stack", "Dev-Billing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no job type Emails in stack Dev-Billing") and err.count("\n") == 1, err
    assert len(read) == 3


def test_dlq_given_a_job_type_before_what_to_do_says_what_to_give(capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN dlq is given a job type where its subcommand goes
    assert main(["dlq", "Thumbnails"]) == 2
    # THEN it is one line naming the three, with the job type where it goes
    assert capsys.readouterr().err == (
        "error: dlq Thumbnails: say what to do first: jobqueues dlq list|purge|redrive Thumbnails\n"
    )
    # WHEN it is a subcommand's typo, THEN click's suggestion stays
    assert main(["dlq", "lst", "Thumbnails"]) == 2
    assert "Did you mean 'list'?" in capsys.readouterr().err


def test_a_consumers_function_or_service_name_given_as_the_job_type_names_its_job_type() -> None:
    # GIVEN a job type consumed by a Lambda function and one by an ECS service, as the console names them
    from jobqueues.ops.discovery import EcsConsumer

    service = f"arn:aws:ecs:us-east-1:{ACCOUNT}:service/Prod-Cluster/Prod-Billing-InvoicesService-AbC123"
    receipts = JobType(
        "Receipts", "Prod-Billing", "Prod/Billing/Receipts", None, None,
        consumer=LambdaConsumer("Prod-Billing-ReceiptsFunction-XyZ", None),
    )  # fmt: skip
    invoices = JobType(
        "Invoices", "Prod-Billing", "Prod/Billing/Invoices", None, None, consumer=EcsConsumer(service, None, None, None)
    )
    found = Discovery([receipts, invoices], ["Prod-Billing"], "region us-east-1", NOT_HERE)
    # WHEN the function's or the service's name is given where the job type goes, THEN the line names its job type
    for given, noun, what in (
        ("Prod-Billing-ReceiptsFunction-XyZ", "a Lambda function", "the Lambda function of Prod-Billing/Receipts"),
        ("Prod-Billing-InvoicesService-AbC123", "an ECS service", "the ECS service of Prod-Billing/Invoices"),
    ):
        with pytest.raises(NotFound) as named:
            found.find(given)
        assert str(named.value) == f"{given} names {noun}, not a job type: it is {what}", named.value
    # WHEN it is given as the stack, THEN the line names the stack to give
    names, resources = [receipts.name, invoices.name], resource_names(found.job_types)
    line = no_deployed_stacks(
        ["Prod-Billing-ReceiptsFunction-XyZ"], ["Prod-Billing"], "here", NOT_HERE, names, resources
    )
    assert line.endswith(
        "; Prod-Billing-ReceiptsFunction-XyZ is the Lambda function of Prod-Billing/Receipts: --stack Prod-Billing"
    ), line


def test_a_case_slip_or_typo_of_a_job_type_two_stacks_have_suggests_both_names() -> None:
    # GIVEN Invoices in two Stages' stacks
    found = two_stages()
    # WHEN its case slipped or it is mistyped, THEN the suggestion is each stack's name of it (the bare name would
    # be refused next as in two stacks), neither picked
    for given in ("invoices", "Invoice"):
        with pytest.raises(NotFound) as slip:
            found.find(given)
        assert "; did you mean Dev-Billing/Invoices or Prod-Billing/Invoices?" in str(slip.value), slip.value


def media_app() -> Discovery:
    """A docs-only trial's app: Stages Staging and Live, each with stack Media (Thumbnails, Transcode), and a stack
    Shared with Emails."""
    jobs = [
        JobType(job, f"{stage}-Media", f"{stage}/Media/{job}/Queue", None, None)  # a LambdaJob's job queue
        for stage in ("Staging", "Live")
        for job in ("Thumbnails", "Transcode")
    ]
    jobs.append(JobType("Emails", "Shared", "Shared/Emails", None, None))
    return Discovery(jobs, ["Live-Media", "Shared", "Staging-Media"], "region us-east-1", NOT_HERE)


def test_a_job_type_named_in_the_wrong_stack_is_told_where_it_is_not_a_neighbour_of_the_stacks_name() -> None:
    found = media_app()
    # WHEN a job type is named in a stack that does not have it, THEN the line names the stacks that have it; no
    # other job type of that stack is suggested for it (a trial was told "did you mean Live-Media/Thumbnails?" for
    # Live-Media/Emails, and the next purge would have purged that)
    for name, stack, where in (
        ("Live-Media/Emails", None, "Emails is in: Shared/Emails"),
        ("Emails", "Live-Media", "Emails is in: Shared/Emails"),
        ("Thumbnails", "Shared", "Thumbnails is in: Live-Media/Thumbnails, Staging-Media/Thumbnails"),
    ):
        with pytest.raises(NotFound) as wrong:
            found.find(name, stack)
        assert str(wrong.value).endswith(f"; {where}") and "did you mean" not in str(wrong.value), wrong.value
    # WHEN the job type's name or the stack's is mistyped, THEN the name meant is suggested
    for name, meant in (
        ("Live-Media/Thumbnals", "Live-Media/Thumbnails"),
        ("Live-Meda/Thumbnails", "Live-Media/Thumbnails"),
    ):
        with pytest.raises(NotFound) as typo:
            found.find(name)
        assert f"did you mean {meant}?" in str(typo.value), typo.value


def test_a_construct_path_two_stages_share_names_both_stacks_and_the_job_types_to_give() -> None:
    found = media_app()
    # WHEN a path in both Stages' stacks is given as the job type, or as the stack of one, THEN both are named,
    # neither picked, with the job type's full names when it is known
    both = "is in the construct path of stacks Live-Media, Staging-Media: name the job type Live-Media/Thumbnails or "
    for name, stack in (
        ("Media/Thumbnails", None),
        ("Thumbnails", "Media"),
        ("Staging/Media/Thumbnails/Function", None),
    ):
        with pytest.raises(NotFound) as path:
            found.find(name, stack)
        said = str(path.value)
        if name.startswith("Staging/"):  # under one job type's construct: that one
            assert said.endswith("is a construct path: name the job type Staging-Media/Thumbnails"), said
        else:
            assert f"Media/Thumbnails {both}Staging-Media/Thumbnails" in said, said
    # WHEN the path is one stack's, THEN that stack's job type is named
    with pytest.raises(NotFound) as one:
        found.find("Live/Media")
    assert "is in the construct path of stack Live-Media: name a job type as Live-Media/JOB_TYPE" in str(one.value)


def test_a_consumers_arn_names_its_job_type() -> None:
    # GIVEN a job type consumed by a Lambda function and one by an ECS service (what the CLIs list: ARNs)
    from jobqueues.ops.discovery import EcsConsumer

    service = f"arn:aws:ecs:us-east-1:{ACCOUNT}:service/Live-Cluster/Live-Media-TranscodeService-AbC123"
    function = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:Live-Media-ThumbnailsFunction-XyZ"
    jobs = [
        JobType("Thumbnails", "Live-Media", "Live/Media/Thumbnails", None, None,
                consumer=LambdaConsumer("Live-Media-ThumbnailsFunction-XyZ", None)),
        JobType("Transcode", "Live-Media", "Live/Media/Transcode", None, None,
                consumer=EcsConsumer(service, None, None, None)),
    ]  # fmt: skip
    found = Discovery(jobs, ["Live-Media"], "region us-east-1", NOT_HERE)
    # WHEN its ARN is given as the job type (a function's also with a version), THEN the line names its job type
    for given, noun, what in (
        (service, "an ECS service", "the ECS service of Live-Media/Transcode"),
        (function, "a Lambda function", "the Lambda function of Live-Media/Thumbnails"),
        (f"{function}:3", "a Lambda function", "the Lambda function of Live-Media/Thumbnails"),
    ):
        with pytest.raises(NotFound) as named:
            found.find(given)
        assert str(named.value) == f"{given} names {noun}, not a job type: it is {what}", named.value
    # WHEN it is given as the stack, THEN the stack to give, not the region advice
    line = no_deployed_stacks([service], ["Live-Media"], "here", NOT_HERE, [j.name for j in jobs], resource_names(jobs))
    assert line.endswith("is the ECS service of Live-Media/Transcode: --stack Live-Media"), line


def test_a_count_of_messages_is_written_as_status_writes_counts() -> None:
    from jobqueues.cli.context import messages

    assert (messages(1), messages(2), messages(1_200)) == ("1 message", "2 messages", "1,200 messages")


def orders_app() -> Discovery:
    """A second trial's app: Stages Qa and Prod with stack Orders named orders-qa and orders-prod by the app
    (Fulfil, an EcsJob; Notify, a LambdaJob), and a top-level stack Billing (Invoices, a LambdaJob; Refunds)."""
    jobs = [
        JobType(job, f"orders-{stage.lower()}", f"{stage}/Orders/{job}/Queue", None, None)
        for stage in ("Qa", "Prod")
        for job in ("Fulfil", "Notify")
    ]
    jobs += [
        JobType("Invoices", "Billing", "Billing/Invoices/Queue", None, None),
        JobType("Refunds", "Billing", "Billing/Refunds", None, None),
    ]
    return Discovery(jobs, ["Billing", "CDKToolkit", "orders-prod", "orders-qa"], "region us-east-1", NOT_HERE)


def test_a_path_under_a_top_level_stacks_job_type_names_it() -> None:
    found = orders_app()
    # WHEN a path under a top-level stack's job queue (its aws:cdk:path) is given as the job type or the stack
    for given, job in (
        ("Billing/Refunds/Queue", "Billing/Refunds"),
        ("Billing/Refunds/Queue/Resource", "Billing/Refunds"),
        ("Billing/Invoices/Function/Resource", "Billing/Invoices"),
    ):
        with pytest.raises(NotFound) as path:
            found.find(given)
        # THEN it names the job type (it was refused as "one slash")
        assert str(path.value) == f"'{given}' is a construct path: name the job type {job}", path.value
    line = no_deployed_stacks(["Billing/Invoices/Function/Resource"], found.stacks, "here", NOT_HERE,
                              [j.name for j in found.job_types], {}, construct_paths(found.job_types))  # fmt: skip
    assert line.endswith("is in the construct of job type Billing/Invoices: --stack Billing"), line
    # AND the job type's own name is still its name
    assert found.find("Billing/Refunds").name == "Billing/Refunds"


def test_a_job_type_given_with_a_stack_that_lacks_it_names_where_it_is() -> None:
    found = orders_app()
    # WHEN the stack given is a Stage's name whose stack lacks the job type, THEN the line says where it is
    with pytest.raises(NotFound) as stage:
        found.find("Invoices", "Qa")
    assert str(stage.value).endswith("; Invoices is in: Billing/Invoices"), stage.value
    # WHEN a Stage stack's default name is given as the job type, THEN it is named as the stack's
    with pytest.raises(NotFound) as default:
        found.find("Qa-Orders")
    assert "Qa-Orders is in the construct path of stack orders-qa" in str(default.value), default.value
    # WHEN a top-level STACK/JOB_TYPE's case slipped, THEN it is suggested as spelled
    with pytest.raises(NotFound) as slip:
        found.find("billing/invoices")
    assert str(slip.value).endswith("did you mean Billing/Invoices? (names are case-sensitive)"), slip.value
    # WHEN an ARN of no job type's queue, function or service is given (a cluster's), THEN it is said to be one
    cluster = f"arn:aws:ecs:us-east-1:{ACCOUNT}:cluster/orders-qa-Cluster"
    with pytest.raises(NotFound) as arn:
        found.find(cluster)
    assert str(arn.value).startswith(f"{cluster} is an ARN, not a job type's name; job types: "), arn.value


def test_status_of_a_job_type_with_a_stack_that_lacks_it_names_where_it_is(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import jobqueues.cli.status as status
    from jobqueues.cli.context import Aws

    found = orders_app()

    def discover(self: Aws, stacks: tuple[str, ...] | list[str] = ()) -> Discovery:
        chosen = [j for j in found.job_types if not stacks or j.stack in stacks]
        return replace(found, job_types=chosen, stacks=list(stacks) or found.stacks)

    monkeypatch.setattr(Aws, "discover", discover)
    monkeypatch.setattr(status, "_read", lambda aws, job_types: [])
    # WHEN status is given a job type and a --stack without it, THEN the line names the stack that has it
    assert main(["status", "Refunds", "--stack", "orders-qa"]) == 2
    assert capsys.readouterr().err.endswith("; Refunds is in: Billing/Refunds\n")


def test_a_job_type_named_in_a_stack_that_lacks_it_is_not_offered_another_deployments() -> None:
    # GIVEN a top-level stack Platform with Render, and a Stage's Eu-Platform without it (a third trial was asked
    # "did you mean Platform/Render?" for Eu-Platform/Render: another deployment offered as a typo's fix)
    jobs = [
        JobType("Render", "Platform", "Platform/Render/Queue", None, None),
        JobType("Resize", "Eu-Platform", "Eu/Platform/Resize/Queue", None, None),
    ]
    found = Discovery(jobs, ["Eu-Platform", "Platform"], "region us-east-1", NOT_HERE)
    # WHEN the job type is named in the stack that lacks it, THEN where it is, and no "did you mean"
    with pytest.raises(NotFound) as other:
        found.find("Eu-Platform/Render")
    assert str(other.value) == (
        "no job type Render in stack Eu-Platform; its job types: Resize; Render is in: Platform/Render"
    ), other.value
    # WHEN it is a typo of one of that stack's job types, THEN that one
    with pytest.raises(NotFound) as typo:
        found.find("Eu-Platform/Resise")
    assert str(typo.value).endswith("; did you mean Eu-Platform/Resize?"), typo.value
