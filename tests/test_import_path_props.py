"""Every prop that names an object by import path (``handler``, ``hooks``, ``idempotency_key``, on ``LambdaJob`` and
``EcsJob``) follows one rule, the one ``sqslease.imports.import_object`` imports by: ``package.module:name``, or the
dotted ``package.module.name``. What the rule accepts reaches the consumer as given and sqslease imports it; what it
refuses is a synth-time error naming the prop, the value and the fix (sqslease could not import it either)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template
from cdk_helpers import ENV, new_stack
from test_idempotency_constructs import HANDLERS, REGISTRY_IMAGE, JobsStack

from jobqueues import EcsJob, JobQueueError, LambdaJob
from jobqueues.consumer_contract import WORKER_MODULE
from sqslease.config import ConsumerConfig
from sqslease.imports import import_object
from sqslease.settings import LeaseSettings

#: A module of the consumer's code: the handler, a hooks object and the key function, named each way.
MODULE = """
from sqslease.hooks import Hooks

def handle(body, message): ...
def order_key(body, message): return body
timing = Hooks()
"""
DOTTED = {"handler": "orderjobs.handle", "hooks": ["orderjobs.timing"], "idempotency_key": "orderjobs.order_key"}
COLON = {"handler": "orderjobs:handle", "hooks": ["orderjobs:timing"], "idempotency_key": "orderjobs:order_key"}


def lambda_job(stack: cdk.Stack, **props: Any) -> LambdaJob:
    props.setdefault("handler", "thumbs.handle")
    code = lambda_.Code.from_asset(HANDLERS)
    return LambdaJob(stack, "Orders", code=code, timeout=Duration.seconds(30), idempotency=True, **props)


def ecs_job(stack: cdk.Stack, **props: Any) -> EcsJob:
    props.setdefault("handler", "billing:handle")
    return EcsJob(stack, "Orders", processing_p99=Duration.seconds(20), idempotency=True, **props)


def consumer_settings(job: LambdaJob | EcsJob) -> tuple[str, LeaseSettings]:
    """The handler and the lease settings the synthesized consumer gets (the function's variables, the worker's
    command)."""
    stack = cdk.Stack.of(job)
    template = Template.from_stack(stack).to_json()
    if isinstance(job, LambdaJob):
        logical_id = stack.get_logical_id(job.function.node.default_child)  # type: ignore[arg-type]
        variables = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        config = ConsumerConfig.from_env(variables)
        assert config.handler is not None
        return config.handler, config.lease
    logical_id = stack.get_logical_id(job.task_definition.node.default_child)  # type: ignore[arg-type]
    (worker,) = template["Resources"][logical_id]["Properties"]["ContainerDefinitions"]
    config = ConsumerConfig.from_args([str(part) for part in worker["Command"][len(WORKER_MODULE) :]], environ={})
    assert config.handler is not None
    return config.handler, config.lease


@pytest.mark.parametrize("paths", [DOTTED, COLON], ids=["dotted", "colon"])
@pytest.mark.parametrize("make", [lambda_job, ecs_job], ids=["LambdaJob", "EcsJob"])
def test_an_import_path_of_either_form_reaches_the_consumer_and_sqslease_imports_it(
    make: Any, paths: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a consumer module, and a job naming its objects by import path
    (tmp_path / "orderjobs.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    app = cdk.App(context={"jobqueues:image": REGISTRY_IMAGE})
    # WHEN it is synthesized
    job = make(JobsStack(app, "Jobs", env=ENV), **paths)
    handler, settings = consumer_settings(job)
    # THEN each path reaches the consumer as given, and sqslease imports each
    assert (handler, list(settings.hooks), settings.idempotency_key) == (
        paths["handler"],
        paths["hooks"],
        paths["idempotency_key"],
    )
    module = import_object(paths["handler"]).__module__
    assert module == "orderjobs" and callable(import_object(settings.idempotency_key or ""))
    assert [type(import_object(path)).__name__ for path in settings.hooks] == ["Hooks"]


#: Paths sqslease cannot import: no module, a space, a file path (Lambda's own handler form), a comma (the setting
#: joins hooks with commas), an empty part.
NOT_IMPORT_PATHS = ["order_key", "orders keys:order_key", "src/orders.handle", "orders:key,other", "orders..key"]
#: prop -> (how to give it, the start of the fix in its error).
PROPS: dict[str, tuple[Any, str]] = {
    "handler": (lambda path: {"handler": path}, "name the per-message function handler(body, message) as"),
    "hooks": (lambda path: {"hooks": [path]}, "name a Hooks object or class as 'package.module:name'"),
    "idempotency_key": (
        lambda path: {"idempotency_key": path},
        "name the key function key(body, message) -> str as 'package.module:function'",
    ),
}


@pytest.mark.parametrize("path", NOT_IMPORT_PATHS)
@pytest.mark.parametrize("prop", PROPS)
@pytest.mark.parametrize(("kind", "make"), [("LambdaJob", lambda_job), ("EcsJob", ecs_job)])
def test_a_path_sqslease_cannot_import_is_refused_at_synth_by_every_import_path_prop(
    kind: str, make: Any, prop: str, path: str
) -> None:
    give, fix = PROPS[prop]
    with pytest.raises(JobQueueError) as raised:
        make(new_stack(), **give(path))
    message = str(raised.value)
    shown = f"{prop}[0]" if prop == "hooks" else prop
    assert message.startswith(f"{kind} Test/Orders cannot be deployed:")
    assert f"{shown}={path!r} is not an import path: {fix}" in message, message
    with pytest.raises(ValueError):  # the runtime's rule: it could not import it either
        import_object(path)
