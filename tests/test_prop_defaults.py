"""One source per default: the docs' prop tables render each default from the value the construct uses
(``jobqueues.prop_defaults``, built on ``jobqueues.defaults``), each value is what the constructs' plans apply, and
a docstring that states a default says what the code holds."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from cdk_helpers import ENV
from test_docs_generated import generate

import jobqueues.prop_defaults as prop_defaults
from jobqueues import EcsJob, JobQueue, JobQueueAlarmProps, LambdaJob
from jobqueues.defaults import IMAGE_CONTEXT
from jobqueues.prop_defaults import PROP_DEFAULTS, Default
from jobqueues.props import QueueOptions

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "constructs" / "jobqueues"
HANDLERS = str(ROOT / "lambda_src" / "handlers")
IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"

#: Where each default with a value lands in the plans of constructs declared without the prop.
PLANNED: dict[tuple[str, str], Callable[[dict[str, Any]], object]] = {
    ("QueueOptions", "max_receive_count"): lambda p: p["queue"].max_receive_count,
    ("QueueOptions", "retention_period"): lambda p: p["queue"].retention_period,
    ("QueueOptions", "dlq_retention_period"): lambda p: p["queue"].dlq_retention_period,
    ("QueueOptions", "fifo"): lambda p: p["queue"].fifo,
    ("QueueOptions", "fair"): lambda p: p["queue"].fair,
    ("QueueOptions", "content_based_deduplication"): lambda p: p["queue"].content_based_deduplication,
    ("QueueOptions", "delivery_delay"): lambda p: p["queue"].delivery_delay,
    ("QueueOptions", "max_message_size"): lambda p: p["queue"].max_message_size,
    ("QueueOptions", "removal_policy"): lambda p: p["queue"].removal_policy,
    ("QueueOptions", "dlq_removal_policy"): lambda p: p["queue"].dlq_removal_policy,
    ("QueueOptions", "idempotency"): lambda p: p["queue"].idempotency is not None,
    ("QueueOptions", "payload_bucket"): lambda p: p["queue"].payload_bucket is not None,
    ("QueueOptions", "delete_payloads"): lambda p: p["queue"].delete_payloads,
    ("LeaseOptions", "lease_extension"): lambda p: p["queue"].lease_extension,
    ("JobQueueProps", "max_batching_window"): lambda p: p["queue"].max_batching_window,
    ("LambdaJobProps", "batch_size"): lambda p: p["lambda"].batch_size,
    ("LambdaJobProps", "max_batching_window"): lambda p: p["lambda"].queue.max_batching_window,
    ("LambdaJobProps", "memory_size"): lambda p: p["lambda"].memory_size,
    ("LambdaJobProps", "lease_extension"): lambda p: p["lambda"].queue.lease_extension,
    ("LambdaJobProps", "log_retention"): lambda p: p["lambda"].log_retention,
    ("EcsJobProps", "image_directory"): lambda p: p["ecs"].image_directory,
    ("EcsJobProps", "concurrency"): lambda p: p["ecs"].concurrency,
    ("EcsJobProps", "min_tasks"): lambda p: p["ecs"].min_tasks,
    ("EcsJobProps", "max_tasks"): lambda p: p["ecs"].max_tasks,
    ("EcsJobProps", "cpu"): lambda p: p["ecs"].cpu,
    ("EcsJobProps", "memory_limit_mib"): lambda p: p["ecs"].memory_limit_mib,
    ("EcsJobProps", "shutdown_grace"): lambda p: p["ecs"].shutdown_grace,
    ("EcsJobProps", "log_retention"): lambda p: p["ecs"].log_retention,
    ("EcsJobProps", "cpu_architecture"): lambda p: p["ecs"].service.architecture,
    ("EcsJobProps", "assign_public_ip"): lambda p: p["ecs"].service.assign_public_ip,
    ("EcsJobProps", "enable_execute_command"): lambda p: p["ecs"].service.enable_execute_command,
}


@pytest.fixture(scope="module")
def plans() -> dict[str, Any]:
    """The plans of a job queue, a Lambda job and an ECS job declared with their required props only."""
    stack = cdk.Stack(cdk.App(context={IMAGE_CONTEXT: IMAGE}), "Jobs", env=ENV)
    queue = JobQueue(stack, "Email", processing_p99=Duration.seconds(3))
    thumbs = LambdaJob(
        stack, "Thumbs", code=lambda_.Code.from_asset(HANDLERS), handler="a.b", timeout=Duration.seconds(30)
    )
    render = EcsJob(stack, "Render", handler="a:b", processing_p99=Duration.seconds(30))
    return {"queue": queue.plan, "lambda": thumbs.plan, "ecs": render.plan}


def test_every_default_the_docs_show_is_what_the_constructs_apply(plans: dict[str, Any]) -> None:
    valued = {(cls, prop) for cls, props in PROP_DEFAULTS.items() for prop, d in props.items() if d.value is not None}
    assert set(PLANNED) == valued, "each default with a value needs its place in a plan here"
    wrong = {key: (PROP_DEFAULTS[key[0]][key[1]].value, where(plans)) for key, where in PLANNED.items()}
    assert {key: pair for key, pair in wrong.items() if pair[0] != pair[1]} == {}
    # JobQueueAlarmProps' defaults are its fields' values (the table shows them): the plan applies those
    alarms = plans["queue"].alarms
    fields = JobQueueAlarmProps()
    assert (alarms.in_flight_quota, alarms.in_flight_fraction, alarms.dlq_depth) == (
        fields.in_flight_quota,
        fields.in_flight_fraction,
        fields.dlq_depth,
    )


def test_every_prop_of_the_tables_has_its_default_and_no_other() -> None:
    for name, defaults in PROP_DEFAULTS.items():
        props = getattr(importlib.import_module("jobqueues.props"), name)
        own, _ = generate.typed_dict_entries(props)
        required = {e.name for e in own if "(required)" in generate.parse_docstring(props.__doc__).entries[e.name]}
        assert set(defaults) == {e.name for e in own} - required, name


def test_the_tables_render_the_defaults_from_their_values(monkeypatch: pytest.MonkeyPatch) -> None:
    table = generate.render("jobqueues.props.QueueOptions")
    assert "| `max_receive_count` | `int` | 5 |" in table and "| `retention_period` | `Duration` | 4 days |" in table
    assert "| `max_message_size` | `Size` | 256 KiB |" in table
    # WHEN a default changes THEN the table says the new value, and the docs are out of date until regenerated
    monkeypatch.setitem(prop_defaults.QUEUE_OPTIONS, "max_receive_count", Default(7))  # type: ignore[index]
    assert "| `max_receive_count` | `int` | 7 |" in generate.render("jobqueues.props.QueueOptions")
    assert [path.name for path, _ in generate.stale([ROOT / "docs" / "constructs.md"])] == ["constructs.md"]


def test_a_docstring_that_states_a_default_of_the_tables_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = QueueOptions.__doc__ or ""
    sentence = "Deliveries before a message moves to the dead-letter queue, 1-1000."
    assert sentence in doc
    monkeypatch.setattr(QueueOptions, "__doc__", doc.replace(sentence, sentence + " Default: 5."))
    with pytest.raises(generate.DocsError, match=r"the docstring of max_receive_count states its default \(5\)"):
        generate.render("jobqueues.props.QueueOptions")


def test_a_default_is_shown_with_its_unit_and_note() -> None:
    assert Default(345_600, unit="s").text() == "4 days"
    assert Default(262_144, unit="bytes").text() == "256 KiB" and Default(1000, unit="bytes").text() == "1,000 bytes"
    assert Default("DESTROY", enum="RemovalPolicy", note="why").text() == "``RemovalPolicy.DESTROY`` (why)"
    assert (Default(120_000).text(), Default(0.8).text(), Default(False).text()) == ("120,000", "0.8", "False")
    assert (Default().text(), Default(note="derived").text(), Default("src").text()) == ("none", "derived", '``"src"``')


def stated_defaults() -> Iterator[tuple[str, str, str, object]]:
    """Every ``:param name: ... Default ...`` of the constructs' code (the command, its operations and the emulator
    aside): where, the parameter, the default it states, and the default its code holds."""
    for path in sorted(CORE.glob("*.py")):
        module = importlib.import_module(f"jobqueues.{path.stem}")
        for obj in _documented(module):
            try:
                parameters = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            for name, text in generate.parse_docstring(obj.__doc__).entries.items():
                stated = generate.split_default(text)[1]
                if (
                    stated is not None
                    and name in parameters
                    and parameters[name].default is not inspect.Parameter.empty
                ):
                    yield f"{module.__name__}.{obj.__qualname__}", name, stated, parameters[name].default


def _documented(module: Any) -> Iterator[Any]:
    for obj in vars(module).values():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield obj
        elif inspect.isclass(obj):
            yield obj
            yield from (m for m in vars(obj).values() if inspect.isfunction(m))


def agrees(stated: str, value: object) -> bool:
    """A stated default agrees with the code's: it starts with the value as the docs show it; with no value in the
    code (``None``, an empty container, a factory), it spells no number the code does not hold."""
    if value is None or value == () or value == dataclasses.MISSING or repr(value) == "<factory>":
        return not any(c.isdigit() for c in stated)
    return stated.startswith(Default(value).text().strip("`").strip('"'))


def test_a_stated_default_is_the_one_the_code_holds() -> None:
    found = list(stated_defaults())
    assert len(found) >= 10, found  # the scan reads the docstrings it should
    wrong = [(where, name, stated, value) for where, name, stated, value in found if not agrees(stated, value)]
    assert wrong == [], "a docstring states another default than its code holds"
    # The check can fail: a stated 5 for a code's 4, or a number for a code's None
    assert not agrees("5", 4) and not agrees("25 s", None) and agrees("4 (one per core)", 4) and agrees("none", ())
