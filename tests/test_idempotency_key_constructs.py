"""``idempotency_key`` on LambdaJob and EcsJob: the key function's import path reaches the consumer as the setting
sqslease reads (``SQSLEASE_IDEMPOTENCY_KEY``, ``--idempotency-key``); cdk-nag AwsSolutions and cfn-lint clean; a
path that is no import path, or a key without idempotency, refused at synth. The runtime side:
``test_sqslease_idempotency_key.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Validations
from cdk_helpers import ENV, lint_template, new_stack
from test_idempotency_constructs import REGISTRY_IMAGE, JobsStack, lambda_job

from jobqueues import EcsJob, JobQueueError
from sqslease.config import ConsumerConfig

ROOT = Path(__file__).resolve().parent.parent
KEY = "orders.keys:order_id"


def ecs_job(stack: cdk.Stack, job_type: str, **props: Any) -> EcsJob:
    return EcsJob(stack, job_type, handler="billing:handle", processing_p99=Duration.seconds(20), **props)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A LambdaJob and an EcsJob with idempotency and a key function, and one of each without a key. cdk-nag on."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context={"jobqueues:image": REGISTRY_IMAGE})
    stack = JobsStack(app, "Jobs", env=ENV)
    jobs = {
        "Orders": lambda_job(stack, "Orders", idempotency=True, idempotency_key=KEY),
        "Refunds": lambda_job(stack, "Refunds", idempotency=True),
        "Invoices": ecs_job(stack, "Invoices", idempotency=True, idempotency_key=KEY),
        "Credits": ecs_job(stack, "Credits", idempotency=True),
    }
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "dir": Path(assembly.directory), "json": assembly.get_stack_by_name("Jobs").template,
            "jobs": jobs}  # fmt: skip


def variables(synthesized: dict, job_type: str) -> dict[str, Any]:
    function = synthesized["jobs"][job_type].function
    logical_id = synthesized["stack"].get_logical_id(function.node.default_child)
    environment: dict[str, Any] = synthesized["json"]["Resources"][logical_id]["Properties"]["Environment"]
    return dict(environment["Variables"])


def command(synthesized: dict, job_type: str) -> list[str]:
    task = synthesized["jobs"][job_type].task_definition
    logical_id = synthesized["stack"].get_logical_id(task.node.default_child)
    (worker,) = synthesized["json"]["Resources"][logical_id]["Properties"]["ContainerDefinitions"]
    return list(worker["Command"])


def test_the_function_gets_the_key_as_the_variable_sqslease_reads(synthesized: dict) -> None:
    # GIVEN a LambdaJob with idempotency_key; WHEN synthesized
    environment = variables(synthesized, "Orders")
    # THEN SQSLEASE_IDEMPOTENCY_KEY names it, beside the table, and sqslease parses it back
    assert environment["SQSLEASE_IDEMPOTENCY_KEY"] == KEY
    assert "SQSLEASE_IDEMPOTENCY_TABLE" in environment
    plain = {k: v for k, v in environment.items() if isinstance(v, str)}
    assert ConsumerConfig.from_env(plain).lease.idempotency_key == KEY
    # and a job without the prop keys on the MessageId: no variable
    assert "SQSLEASE_IDEMPOTENCY_KEY" not in variables(synthesized, "Refunds")


def test_the_worker_gets_the_key_as_its_option(synthesized: dict) -> None:
    # GIVEN an EcsJob with idempotency_key; WHEN synthesized
    worker = command(synthesized, "Invoices")
    # THEN the command names it once, as the worker parses its options
    assert worker.count("--idempotency-key") == 1
    assert worker[worker.index("--idempotency-key") + 1] == KEY
    assert ConsumerConfig.from_args(["--idempotency-key", KEY]).lease.idempotency_key == KEY
    assert "--idempotency-key" not in command(synthesized, "Credits")


def test_the_template_is_cfn_lint_clean(synthesized: dict) -> None:
    template_file = synthesized["dir"] / "Jobs.template.json"
    findings = [f"{m.rule.id} {m.message}" for m in lint_template(template_file)]
    assert findings == []


# --- bad declarations ----------------------------------------------------------------------------------------------
BAD = {
    "not a path": (
        {"idempotency": True, "idempotency_key": "order id"},
        "idempotency_key='order id' is not an import path: name the key function key(body, message) -> str as "
        "'package.module:function', e.g. idempotency_key='orders.keys:order_id'",
    ),
    "no module": (
        {"idempotency": True, "idempotency_key": "order_id"},
        "idempotency_key='order_id' is not an import path",
    ),
    "not a str": (
        {"idempotency": True, "idempotency_key": ["a.b:c"]},
        "idempotency_key=['a.b:c'] is a list, not a str",
    ),
    "without idempotency": (
        {"idempotency_key": KEY},
        f"idempotency_key={KEY!r} needs idempotency on, which is off: pass idempotency=True (or a table) with it, "
        "or drop idempotency_key",
    ),
    "idempotency off": ({"idempotency": False, "idempotency_key": KEY}, "needs idempotency on, which is off"),
    "as a variable": (
        {"idempotency": True, "environment": {"SQSLEASE_IDEMPOTENCY_KEY": KEY}},
        "SQSLEASE_IDEMPOTENCY_KEY is the job's idempotency_key= prop: pass idempotency_key='package.module:function'",
    ),
}


@pytest.mark.parametrize("case", BAD)
@pytest.mark.parametrize(("kind", "make"), [("LambdaJob", lambda_job), ("EcsJob", ecs_job)])
def test_a_bad_key_is_refused_at_synth_naming_the_prop_and_the_fix(kind: str, make: Any, case: str) -> None:
    props, expected = BAD[case]
    with pytest.raises(JobQueueError) as raised:
        make(new_stack(), "Orders", **props)
    message = str(raised.value)
    assert message.startswith(f"{kind} Test/Orders cannot be deployed:")
    assert expected in message
