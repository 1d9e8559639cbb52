"""The demo's scenarios on the deployed consumers: the Lambda job's batches, and the ECS job's long job, poison
message, SIGTERM drain, kill -9 and duplicate delivery (:mod:`.duplicate`)."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

from jobqueues.emulator.demo.discovery import EcsJob, QueueJob
from jobqueues.emulator.demo.duplicate import finish_duplicate, start_duplicate
from jobqueues.emulator.demo.harness import DemoError, Harness
from jobqueues.emulator.demo.ledger import LEDGER_ENV, Run, record_kill
from jobqueues.emulator.demo.report import DemoResult
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver
from jobqueues.emulator.lambda_driver.function import DeployedFunction
from jobqueues.emulator.lambda_driver.runtime import Invocation, LocalRuntime

#: The kill -9 scenario: the job's length and how far into it the worker is killed (seconds). The job's second run
#: lasts as long again, so it is no longer than the kill needs: 2.5 s left after the kill, for a loaded machine.
KILLED_JOB_S = 4.0
KILL_AFTER_S = 1.5
#: The SIGTERM drain: its jobs and their length (seconds). 16 jobs on 2 workers of 4 handlers: about 8 running at
#: the SIGTERM and 8 received, which run on the handlers that come free; the drain lasts about 2 jobs.
DRAIN_JOBS = 16
DRAIN_JOB_S = 2.0


def start_lambda(demo: Harness, function: DeployedFunction, queue: QueueJob) -> LambdaDriver:
    """Send the Lambda job type its 20 jobs and start the event source stand-in on them (stop it when done)."""
    stdout = (demo.emf_dir / f"{queue.job_type}-lambda.log").open("ab")
    stderr = (demo.stderr_dir / f"{queue.job_type}-lambda.log").open("ab")
    demo.open_files += [stdout, stderr]
    runtime = LocalRuntime(function, demo.emulator, stdout, stderr, {LEDGER_ENV: str(demo.ledger)})

    def report(records: list[dict[str, Any]], invocation: Invocation, deleted: list[str]) -> None:
        if invocation.error is not None:
            outcome = f"function error {invocation.error.get('errorType')}: {invocation.error.get('errorMessage')}"
        else:
            failures = (invocation.result or {}).get("batchItemFailures") or []
            outcome = f"{len(failures)} in batchItemFailures"
        demo.say(
            f"{queue.job_type}: invocation of {len(records)} record{'' if len(records) == 1 else 's'} "
            f"({'cold' if invocation.cold_start else 'warm'}"
            f", {invocation.duration_s:.1f} s): {outcome}; deleted {len(deleted)}"
        )

    # 20 jobs of 0.1-0.8 s; one fails its first delivery and is retried after its backoff.
    bodies = [demo.job(queue.job_type, f"t{i}", demo.rng.uniform(0.1, 0.8)) for i in range(19)]
    bodies.append(demo.job(queue.job_type, "fails-once", 0.2, fail=1))
    demo.send(queue, bodies)
    demo.say(f"sent {len(bodies)} jobs to {queue.job_type} (one fails its first delivery)")
    driver = LambdaDriver(demo.emulator, function, runtime, on_invocation=report)
    driver.start()
    demo.say(f"{queue.job_type}: event source stand-in polling {queue.url.rsplit('/', 1)[-1]}")
    return driver


def ecs_scenarios(demo: Harness, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
    """A job whose delete is lost; two workers on normal jobs, a job 1.4 x the VT and a poison message; then the
    drain, the kill, and the lost delete's redelivery, a duplicate."""
    vt = queue.visibility_timeout_s
    duplicate = start_duplicate(demo, job, queue)  # its redelivery comes during the scenarios below
    first = [demo.start_worker(job), demo.start_worker(job)]
    demo.say(f"{job.job_type}: started {len(first)} workers (pids {', '.join(str(w.process.pid) for w in first)})")

    # Normal jobs, one job 1.4 x the visibility timeout, one poison message.
    long_body = demo.job(job.job_type, "long", 1.4 * vt)
    long_id = json.loads(long_body)["id"]
    poison_body = demo.job(job.job_type, "poison", 0.1, fail=True)
    poison_id = json.loads(poison_body)["id"]
    normal = [demo.job(job.job_type, f"n{i}", demo.rng.uniform(0.3, 2.5)) for i in range(12)]
    demo.send(queue, [long_body, *normal])
    demo.send(queue, [poison_body], expect_success=False)
    demo.say(
        f"sent {len(normal) + 2} jobs to {job.job_type}: {len(normal)} of 0.3-2.5 s, one of {1.4 * vt:.0f} s "
        f"(VT {vt} s), one poison message (fails every time; maxReceiveCount {queue.max_receive_count})"
    )
    demo.wait_until("the long job's start", lambda: bool(demo.runs_of(long_id)), 30)
    demo.say(f"long job started; its {vt} s lease is extended while it runs")
    in_dlq_at = demo.wait_until("the poison message in the DLQ", lambda: poison_id in demo.dlq_ids(queue), 90)
    line, result.poison = poison_summary(
        demo.runs_of(poison_id), queue.dlq_url.rsplit("/", 1)[-1] if queue.dlq_url else "?"
    )
    demo.say(line)
    result.poison["at_s"] = round(in_dlq_at, 1)
    demo.wait_until("the long job's end", lambda: demo.completed([long_id]), 4 * vt + 30)
    demo.wait_until("the long job's EMF line", lambda: demo.emf_success(job.job_type, long_id), 30)
    long_runs = demo.runs_of(long_id)
    extensions = demo.emf_sum(job.job_type, "Extensions", message_ids=None, job_id=long_id)
    completions = sum(r.outcome == "success" for r in long_runs)
    duration = next(r.end - r.start for r in long_runs if r.outcome == "success" and r.end is not None)
    demo.say(
        f"long job finished after {duration:.1f} s (VT {vt} s): {len(long_runs)} run, {completions} completion, "
        f"{extensions} lease extensions"
    )
    result.long_job = {
        "runs": len(long_runs),
        "completions": completions,
        "duration_s": round(duration, 1),
        "visibility_timeout_s": vt,
        "extensions": extensions,
    }
    demo.wait_until(f"the {len(normal)} normal jobs", lambda: demo.completed(demo.sent[job.job_type]), 60)
    demo.say(f"all {len(demo.sent[job.job_type])} {job.job_type} jobs so far completed")

    drain_scenario(demo, job, queue, result)
    kill_scenario(demo, job, queue, result)
    if duplicate is not None:
        finish_duplicate(demo, job, duplicate, result, first_lease(job))
    live = demo.running_workers()
    codes = demo.stop_workers(live)
    demo.say(f"all {job.job_type} jobs done; SIGTERM to the {len(live)} workers left: exit {sorted(codes.values())}")


def poison_summary(runs: list[Run], dlq_name: str) -> tuple[str, dict[str, Any]]:
    """The line and the result of a poison message found in its DLQ after ``runs``. Its deliveries are the receives
    SQS counted (its last run's receive count): a stopping worker's last poll may have received it and released it
    unstarted, a receive with no run."""
    counts = [run.receive_count for run in sorted(runs, key=lambda run: run.receive_count)]
    deliveries = counts[-1] if counts else 0
    if len(runs) == deliveries:
        line = f"poison message in {dlq_name} after {deliveries} failed deliveries (receive counts {counts})"
    else:
        line = (
            f"poison message in {dlq_name} after {deliveries} deliveries, {len(runs)} of them run, each failed (the "
            f"others released unstarted by a stopping worker; receive counts {counts})"
        )
    return line, {"in_dlq": True, "deliveries": deliveries, "runs": len(runs)}


def kill_scenario(demo: Harness, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
    """kill -9 a worker mid-job: its message comes back after one lease and runs on the replacement."""
    body = demo.job(job.job_type, "killed", KILLED_JOB_S)
    job_id = json.loads(body)["id"]
    demo.send(queue, [body])
    demo.wait_until("the kill target's start", lambda: bool(demo.runs_of(job_id)), 30)
    time.sleep(KILL_AFTER_S)  # mid-job
    (first_run,) = demo.runs_of(job_id)
    victim = next((w for w in demo.workers if w.process.pid == first_run.pid), None)
    if victim is None:
        raise DemoError(f"job {job_id} runs in pid {first_run.pid}, not a worker of this demo")
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    killed_at = time.time()
    record_kill(demo.ledger, victim.process.pid)
    demo.say(f"kill -9 {victim.name} (pid {victim.process.pid}) {KILL_AFTER_S:g} s into a {KILLED_JOB_S:g} s job")
    replacement = demo.start_worker(job)
    demo.say(f"started {replacement.name} in its place (as ECS replaces a stopped task)")
    lease = first_lease(job)
    demo.wait_until("the killed job's second run", lambda: len(demo.runs_of(job_id)) >= 2, lease + 30)
    second = sorted(demo.runs_of(job_id), key=lambda r: r.start)[1]
    back_after = second.start - killed_at
    demo.say(
        f"its message came back and restarted {back_after:.1f} s after the kill (lease {lease:.0f} s), "
        f"receive count {second.receive_count}"
    )
    demo.wait_until("the killed job's completion", lambda: demo.completed([job_id]), 30)
    result.kill = {"back_after_s": round(back_after, 1), "lease_s": lease, "receive_count": second.receive_count}


def first_lease(job: EcsJob) -> float:
    """The lease a receive takes (``LeaseSettings.first_lease``), from what the worker is told."""
    return job.config().lease.first_lease


def drain_scenario(demo: Harness, job: EcsJob, queue: QueueJob, result: DemoResult) -> None:
    """SIGTERM the running workers with jobs in hand: running jobs finish, unstarted ones run or are released."""
    live = demo.running_workers()
    bodies = [demo.job(job.job_type, f"d{i}", DRAIN_JOB_S) for i in range(DRAIN_JOBS)]
    ids = [json.loads(b)["id"] for b in bodies]
    demo.send(queue, bodies)
    demo.say(f"sent {len(bodies)} jobs of {DRAIN_JOB_S:g} s to {job.job_type} for the SIGTERM drain")
    demo.wait_until("drain jobs running", lambda: sum(bool(demo.runs_of(i)) for i in ids) >= 6, 30)
    started_before = {i for i in ids if demo.runs_of(i)}
    term_at, term_wall = time.monotonic(), time.time()
    codes = demo.stop_workers(live)
    took = time.monotonic() - term_at
    visible = demo.visible(queue)
    released = sum(demo.released_unstarted(w) for w in live)
    finished = sum(any(r.outcome == "success" for r in demo.runs_of(i)) for i in started_before)
    # Received before SIGTERM, started after it on a handler that came free: their receive was not wasted.
    stopping = {w.process.pid for w in live}
    ran_received = sum(
        any(r.pid in stopping and r.start >= term_wall for r in demo.runs_of(i)) for i in ids if i not in started_before
    )
    demo.say(
        f"SIGTERM to {len(live)} workers with {len(started_before)} jobs running: exited in {took:.1f} s "
        f"(exit codes {sorted(codes.values())}); {finished}/{len(started_before)} running jobs finished, "
        f"{ran_received} received ones ran on handlers that came free, {released} unstarted released "
        f"({visible} visible right after exit)"
    )
    result.drain = {
        "running_at_sigterm": len(started_before),
        "finished": finished,
        "ran_after_sigterm": ran_received,
        "released": released,
        "visible_after_exit": visible,
        "exit_codes": sorted(codes.values()),
        "exit_s": round(took, 1),
    }
    fresh = [demo.start_worker(job), demo.start_worker(job)]
    demo.say(f"started {', '.join(w.name for w in fresh)} (a new deployment) for the rest")
    # A long poll that did not answer in time is abandoned (sqslease.worker's docstring): a message it took
    # reappears after the receive lease, hence the generous limit.
    demo.wait_until("the drained jobs", lambda: demo.completed(ids), 90)
    demo.say(f"all {len(ids)} drain jobs done")
