"""The whole demo against the deployed stack, as a function (:func:`run_demo`) and a command (:func:`main`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from jobqueues.emulator.demo.discovery import EcsJob, QueueJob, discover_ecs_jobs, discover_queues
from jobqueues.emulator.demo.harness import PROJECT_DIR, DemoError, Harness, Print
from jobqueues.emulator.demo.ledger import concurrent_runs, read_runs
from jobqueues.emulator.demo.report import DemoResult, JobTypeResult, format_profile, format_summary
from jobqueues.emulator.demo.scenarios import ecs_scenarios, start_lambda
from jobqueues.emulator.deployed import DeployedError
from jobqueues.emulator.lambda_driver.function import DeployedFunction, function_logical_ids, load_function
from jobqueues.emulator.server import Emulator
from sqslease.config import ConsumerConfig

DEFAULT_STACK = "JobQueuesExample"
DESCRIPTION = "The end-to-end demo ``make local`` runs after the deploy: the deployed consumers at work, measured."


class Demo(Harness):
    """One run of the demo against the deployed stack (see :mod:`jobqueues.emulator.demo`)."""

    def run(self) -> DemoResult:
        """Discover the stack's consumers, run every scenario, tally the ledger and profile the logs."""
        queues = discover_queues(self.emulator, self.stack)
        ecs_jobs = discover_ecs_jobs(self.stack)
        function_ids = function_logical_ids(self.stack)
        if not ecs_jobs or not function_ids:
            raise DeployedError(
                f"stack {self.stack.name} has {len(ecs_jobs)} ECS jobs (a task definition running sqslease.worker) "
                f"and {len(function_ids)} Lambda jobs (a function with an SQS event source mapping); the demo needs "
                "one of each: deploy the example app with its LambdaJob and EcsJob"
            )
        workdir = Path(tempfile.mkdtemp(prefix="lambda-", dir=self.logs_dir))
        function = load_function(self.emulator, self.stack, function_ids[0], workdir)
        told = ConsumerConfig.from_env(function.environment).lease  # what the function is told
        named = told.job_type if "job_type" in told.changed_fields() else None
        lambda_type = named or function.mapping.queue_name.removeprefix(f"{self.stack.name}-")
        ecs = ecs_jobs[0]
        for job_type in (lambda_type, ecs.job_type):
            if job_type not in queues:
                raise DeployedError(f"job type {job_type} has no queue named {self.stack.name}-{job_type}")
        self.describe(queues, ecs, function, lambda_type)

        result = DemoResult(job_types={}, logs_dir=self.logs_dir)
        self.send_to_plain_queues(queues, {lambda_type, ecs.job_type})
        with ExitStack() as stack:
            stack.callback(self.close)
            driver = start_lambda(self, function, queues[lambda_type])
            stack.callback(driver.stop)  # first on the way out: stops polling, ends the runtime
            ecs_scenarios(self, ecs, queues[ecs.job_type], result)
            self.wait_until(f"every {lambda_type} job done", lambda: self.completed(self.sent[lambda_type]), 90)
        stats = driver.stats
        result.lambda_stats = {
            "invocations": stats.invocations,
            "records": stats.records,
            "deleted": stats.deleted,
            "reported_failures": stats.reported_failures,
            "function_errors": stats.function_errors,
            "batch_sizes": stats.batch_sizes,
            "cold_starts": driver.runtime.cold_starts,
            "handler_file": driver.runtime.handler_file,
        }
        self.say(
            f"{lambda_type}: {stats.invocations} invocations, batch sizes {stats.batch_sizes}, "
            f"{stats.deleted} records deleted, {stats.reported_failures} reported in batchItemFailures"
        )
        consumers = {lambda_type: "Lambda", ecs.job_type: "ECS"}
        result.job_types = self.tally(queues, consumers)
        result.profile = self.profile(queues, consumers, function)
        result.wall_s = time.monotonic() - self.started
        return result

    def describe(self, queues: dict[str, QueueJob], ecs: EcsJob, function: DeployedFunction, lambda_type: str) -> None:
        m = function.mapping
        self.say(f"stack {self.stack.name}: job types {', '.join(sorted(queues))}")
        self.say(
            f"{lambda_type}: Lambda {function.name} (handler {function.handler}, timeout {function.timeout_s} s, "
            f"{len(function.layer_arns)} layer), mapping batch size {m.batch_size}, window {m.batching_window_s} s, "
            f"ReportBatchItemFailures {'on' if m.report_batch_item_failures else 'off'}; "
            f"queue VT {queues[lambda_type].visibility_timeout_s} s"
        )
        self.say(f"{ecs.job_type}: ECS task definition {ecs.task_definition.rsplit('/', 1)[-1]}")
        self.say(f"  command: {' '.join(ecs.command)}")
        if ecs.unresolved:
            self.say(f"  not computable locally, left unset: {', '.join(ecs.unresolved)}")

    def send_to_plain_queues(self, queues: dict[str, QueueJob], consumed: set[str]) -> None:
        for job_type, queue in sorted(queues.items()):
            if job_type in consumed:
                continue
            self.send(queue, [self.job(job_type, f"j{i}", 1) for i in range(3)], expect_success=False)
            self.say(
                f"sent 3 jobs to {job_type} (no consumer in this app: they wait in {queue.url.rsplit('/', 1)[-1]})"
            )

    def tally(self, queues: dict[str, QueueJob], consumers: dict[str, str]) -> dict[str, JobTypeResult]:
        runs = read_runs(self.ledger)
        rows = {}
        for job_type, queue in sorted(queues.items()):
            row = JobTypeResult(
                job_type, consumers.get(job_type, "none"), visibility_timeout_s=queue.visibility_timeout_s
            )
            mine = [r for r in runs if r.job_type == job_type]
            expected = self.sent.get(job_type, [])
            completions: dict[str, int] = {}
            for run in mine:
                if run.outcome == "success":
                    completions[run.job_id] = completions.get(run.job_id, 0) + 1
            in_dlq = self.dlq_ids(queue)
            row.sent = len(expected) + sum(1 for i in in_dlq if i not in expected)
            row.processed = len(completions)
            row.duplicates = sum(n - 1 for n in completions.values())
            row.concurrent = concurrent_runs(mine)
            row.retries = len(mine) - len({r.job_id for r in mine})
            row.dead_lettered = len(in_dlq)
            row.lost = sum(1 for i in expected if i not in completions and i not in in_dlq)
            if row.consumer == "none":
                row.sent, row.waiting = 3, self.visible(queue)
            else:
                row.extensions = self.emf_sum(job_type, "Extensions", None)
                row.leases_lost = self.emf_sum(job_type, "LeaseLost", None)
            rows[job_type] = row
        return rows

    # -- jobstats --------------------------------------------------------------------------------------
    def profile(
        self, queues: dict[str, QueueJob], consumers: dict[str, str], function: DeployedFunction
    ) -> dict[str, Any]:
        out = self.logs_dir / "profiles.json"
        command = [sys.executable, "-m", "jobstats", "profile", str(self.emf_dir), "--out", str(out)]
        command += ["--master", "local[1]"]
        self.say(f"jobstats: python {' '.join(command[1:])} (Spark starting)")
        completed = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True)
        (self.stderr_dir / "jobstats.log").write_text(completed.stderr)
        if completed.returncode != 0:
            raise DemoError(f"jobstats failed (exit {completed.returncode}): {completed.stderr[-2000:]}")
        for line in completed.stdout.splitlines():
            self.say(f"jobstats: {line}")
        document: dict[str, Any] = json.loads(out.read_text())
        declared = self.declared(queues, consumers, function)
        return {"path": str(out), "document": document, "declared": declared, "stack": self.stack.name}

    def declared(
        self, queues: dict[str, QueueJob], consumers: dict[str, str], function: DeployedFunction
    ) -> dict[str, str]:
        """What each consumer's job type declared, in words, from the deployed resources."""
        declared = {}
        for job_type, kind in consumers.items():
            queue = queues[job_type]
            if kind == "Lambda":
                declared[job_type] = (
                    f"Lambda timeout {function.timeout_s} s + window {function.mapping.batching_window_s} s"
                )
            elif queue.declared_p99_s is not None:
                declared[job_type] = f"p99 {queue.declared_p99_s:g} s"
            else:
                declared[job_type] = "p99 not in the template"
        return declared


def run_demo(
    emulator: Emulator | Any,
    stack_name: str = DEFAULT_STACK,
    logs_dir: Path | None = None,
    out: Print = print,
) -> DemoResult:
    """Run the demo against ``emulator`` (an :class:`Emulator`, or a running ``LocalServer``)."""
    endpoint = Emulator(emulator.endpoint)
    logs_dir = logs_dir or Path(tempfile.mkdtemp(prefix="jobqueues-demo-"))
    demo = Demo(endpoint, stack_name, logs_dir, out)
    result = demo.run()
    out("")
    out(format_profile(result))
    out("")
    out(format_summary(result))
    out("")
    out(f"logs: {logs_dir} (emf/: the consumers' EMF lines, stderr/: their logs, ledger.jsonl: every handler run)")
    verdict = "every job processed exactly once" if result.ok else "SOMETHING WENT WRONG (see the table)"
    out(f"demo finished in {result.wall_s:.0f} s: {verdict}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobqueues.emulator.demo", description=DESCRIPTION)
    parser.add_argument("--endpoint", required=True, help="the emulator, e.g. http://localhost:5000")
    parser.add_argument("--stack", default=DEFAULT_STACK)
    parser.add_argument("--logs", type=Path, help="directory for the logs (default: a new temporary directory)")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, flush=True)

    try:
        result = run_demo(Emulator(args.endpoint), args.stack, args.logs, out)
    except (DemoError, DeployedError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if result.ok else 1
