"""What a FIFO job type's consumer is told so that a poison message goes to the DLQ alone: the DLQ's
``maxReceiveCount`` beside its URL (``SQSLEASE_MAX_RECEIVE_COUNT``, ``--max-receive-count``), and, for a Lambda
consumer whose retries do not fit in one invocation, a warning of its own naming the ``max_receive_count`` that
does; cdk-nag AwsSolutions and cfn-lint clean. The runtime side: ``test_sqslease_fifo_poison*.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from aws_cdk.assertions import Annotations, Match
from cdk_helpers import ENV, lint_template
from test_idempotency_constructs import REGISTRY_IMAGE, JobsStack, lambda_job
from test_idempotency_key_constructs import command, ecs_job, variables

from jobqueues.declaration import QueueDeclaration, check_declaration
from jobqueues.declaration_warnings import FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT
from jobqueues.queue_rules import lambda_retries_fit
from sqslease.config import ConsumerConfig

WARNING = Match.string_like_regexp(FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """FIFO LambdaJobs of 30 s (max_receive_count 5, the default, and 4), a standard one, and a FIFO EcsJob (3).
    cdk-nag on."""
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context={"jobqueues:image": REGISTRY_IMAGE})
    stack = JobsStack(app, "Jobs", env=ENV)
    jobs = {
        "Receipts": lambda_job(stack, "Receipts", fifo=True),
        "Refunds": lambda_job(stack, "Refunds", fifo=True, max_receive_count=4),
        "Thumbs": lambda_job(stack, "Thumbs"),
        "Invoices": ecs_job(stack, "Invoices", fifo=True, max_receive_count=3),
    }
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {"stack": stack, "dir": Path(assembly.directory), "json": assembly.get_stack_by_name("Jobs").template,
            "jobs": jobs}  # fmt: skip


def test_a_lambda_consumer_is_told_the_max_receive_count_beside_the_dlq(synthesized: dict) -> None:
    environment = variables(synthesized, "Receipts")
    assert environment["SQSLEASE_MAX_RECEIVE_COUNT"] == "5" and "SQSLEASE_DEAD_LETTER_QUEUE_URL" in environment
    plain = {k: v for k, v in environment.items() if isinstance(v, str)}
    assert ConsumerConfig.from_env(plain).lease.max_receive_count == 5
    assert variables(synthesized, "Refunds")["SQSLEASE_MAX_RECEIVE_COUNT"] == "4"


def test_the_worker_is_told_the_max_receive_count_as_its_option(synthesized: dict) -> None:
    worker = command(synthesized, "Invoices")
    assert worker.count("--max-receive-count") == 1 and worker[worker.index("--max-receive-count") + 1] == "3"
    assert "--dead-letter-queue-url" in worker


def test_a_fifo_lambda_job_whose_retries_do_not_fit_in_its_timeout_is_warned_with_the_count_that_does(
    synthesized: dict,
) -> None:
    # GIVEN a 30 s function: 25 s before its 5 s deadline margin. max_receive_count 5 waits up to 2+4+8+16 = 30 s
    annotations = Annotations.from_stack(synthesized["stack"])
    (message,) = [w.entry.data for w in annotations.find_warning("/Jobs/Receipts/Queue", WARNING)]
    # THEN the warning says so, and names what fits: 4 receives (2+4+8 = 14 s), or a 36 s timeout for 5 (30 < 31)
    assert "The 4 retries of max_receive_count 5 wait up to 30 s, more than the 25 s timeout 30 s leaves" in message
    assert "max_receive_count 4 absorbs its retries in one invocation" in message
    assert "timeout 36 s absorbs max_receive_count 5's" in message
    assert f"[ack: {FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT}]" in message
    # and neither the job of 4 receives, nor a standard queue, nor an ECS worker (which parks its retries) gets it
    for quiet in ("Refunds", "Thumbs", "Invoices"):
        annotations.has_no_warning(f"/Jobs/{quiet}/Queue", WARNING)


@pytest.mark.parametrize(
    ("count", "timeout", "p99", "fits"),
    [
        (5, 35, None, False),  # 30 s of back-off, 30 s before the margin: not less
        (5, 36, None, True),
        (3, 3, None, False),  # a 3 s function keeps 0.75 s: 2.25 s, less than 2 + 4 s
        (2, 3, None, True),  # one retry of 2 s at most
        (3, 30, 8, False),  # 6 s of back-off and 3 runs of 8 s: 30 s, more than 25 s
    ],
)
def test_whether_the_retries_fit_counts_each_back_off_at_its_longest_and_the_runs(
    count: int, timeout: float, p99: float | None, fits: bool
) -> None:
    assert lambda_retries_fit(count, timeout, p99) is fits


def test_the_rule_needs_the_values_known_at_synth() -> None:
    # A token max_receive_count, or no Lambda timeout (an ECS consumer or none declared): nothing to warn about.
    tokens = QueueDeclaration(job_type="x", lambda_timeout=30, fifo=True, tokens={"max_receive_count": object()})
    queue_only = QueueDeclaration(job_type="x", processing_p99=2, fifo=True)
    for declaration in (tokens, queue_only):
        assert not [w for w in check_declaration(declaration).warnings if w.id == FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT]


def test_the_template_is_cfn_lint_clean(synthesized: dict) -> None:
    template_file = synthesized["dir"] / "Jobs.template.json"
    findings = [f"{m.rule.id} {m.message}" for m in lint_template(template_file)]
    assert findings == []
