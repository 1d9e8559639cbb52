"""GIVEN a consumer told its stack (``SQSLEASE_STACK`` or ``--stack``, what the constructs write) WHEN it settles
messages THEN each EMF line names the stack (``Stack``, a property: the metrics keep their one ``JobType``
dimension), so that jobstats keeps a Dev and a Prod deployment of one job type apart. No network: the processor
on fakes."""

from __future__ import annotations

import io
import json

import pytest
from support.emf import read_emf
from support.fakes import FakeContext, FakeSQS
from support.lambda_events import fake_event

from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger, deployment_name
from sqslease.lambda_adapter import process_event
from sqslease.message import Message
from sqslease.settings import FailurePolicy, LeaseSettings


def test_the_stack_is_a_setting_of_its_own() -> None:
    assert LeaseSettings().stack is None
    assert ConsumerConfig.from_env({"SQSLEASE_STACK": "Dev-TeamC"}).lease.stack == "Dev-TeamC"
    assert ConsumerConfig.from_args(["--stack", "Prod-TeamC"], environ={"SQSLEASE_STACK": "Dev-TeamC"}).lease.stack == (
        "Prod-TeamC"
    )
    assert ConsumerConfig(lease=LeaseSettings(stack="Dev-TeamC")).to_args(["stack"]) == ["--stack", "Dev-TeamC"]


@pytest.mark.parametrize("stack", ["Dev-TeamC", None])
def test_every_line_of_the_processor_names_the_stack_it_was_given(stack: str | None) -> None:
    # GIVEN a batch of a success and a failure (the Lambda adapter and the worker share sqslease.processor)
    def handler(body: str, message: Message) -> None:
        if body == "bad":
            raise RuntimeError("declined")

    emf = io.StringIO()
    settings = LeaseSettings(
        visibility_timeout=30,
        heartbeat_interval=0.2,
        failure_policy=FailurePolicy.VISIBLE_NOW,
        job_type="Refunds",
        stack=stack,
    )
    # WHEN the invocation runs it
    process_event(fake_event(["ok", "bad"]), FakeContext(60), handler, settings, FakeSQS(), emf=EmfLogger(emf))
    # THEN both lines name the stack after the job type, or carry no Stack when none was given
    lines = read_emf(emf)
    assert [line["Outcome"] for line in lines] == ["success", "failure"]
    for line in lines:
        assert line["JobType"] == "Refunds"
        assert line.get("Stack") == stack and ("Stack" in line) == (stack is not None)
        assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["JobType"]]
    if stack is not None:
        text = emf.getvalue().splitlines()[0]
        assert text.index('"JobType"') < text.index('"Stack"') < text.index('"Queue"')


def test_a_line_s_deployment_is_its_stack_and_job_type_or_the_job_type_alone() -> None:
    assert deployment_name("Dev-TeamC", "Exports") == "Dev-TeamC/Exports"
    assert deployment_name(None, "Exports") == "Exports"  # a line of a consumer not told its stack
    out = io.StringIO()
    line = EmfLogger(out).record(
        job_type="Exports",
        stack="Prod-TeamC",
        queue="q",
        message_id="m",
        processing_ms=1.0,
        outcome="success",
        receive_count=1,
        extensions=0,
        lease_lost=False,
    )
    assert json.loads(out.getvalue()) == line and line["Stack"] == "Prod-TeamC"
