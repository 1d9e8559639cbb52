"""The duplicate delivery: an ECS job completes but its delete is lost, so SQS delivers it again; the second
delivery finds the job's COMPLETED idempotency record and is deleted without running (``Outcome: duplicate``).

The worker that loses the delete reaches SQS through a :class:`~jobqueues.emulator.chaos.proxy.FaultProxy` that answers
every delete with a 500 (``AWS_ENDPOINT_URL_SQS``); its DynamoDB requests go straight to the emulator
(``AWS_ENDPOINT_URL``). sqslease retries a failed delete while it holds the lease, and after SIGTERM gives it up
when the shutdown grace ends (``sqslease.settle``): the message comes back once that lease lapses, and a normal
worker receives it. :func:`start_duplicate` runs before the other scenarios and :func:`finish_duplicate` after
them, so that the wait for the redelivery overlaps them.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass

from jobqueues.emulator.chaos.proxy import Fault, FaultProxy
from jobqueues.emulator.demo.discovery import EcsJob, QueueJob
from jobqueues.emulator.demo.harness import Harness, WorkerProcess
from jobqueues.emulator.demo.report import DemoResult
from sqslease.config import SETTINGS
from sqslease.idempotency import KEY_ATTRIBUTE, record_key

DELETES = ("DeleteMessage", "DeleteMessageBatch")
WORK_S = 0.5  # the job's own run: short, the scenario is about its delete


def lose_deletes(operation: str, body: bytes) -> Fault | None:
    """The fault proxy's rule: every delete gets SQS's InternalError (500), everything else passes."""
    return Fault("error500") if operation in DELETES else None


@dataclass
class DuplicateDelivery:
    """The scenario under way: its job, the worker losing its deletes and that worker's proxy."""

    job_id: str
    message_id: str
    table: str
    worker: WorkerProcess
    proxy: FaultProxy

    def deletes_failed(self) -> int:
        return sum(n for (operation, kind), n in self.proxy.counts.items() if operation in DELETES and kind != "ok")


def record_status(demo: Harness, job_type: str, dup: DuplicateDelivery) -> str | None:
    """The job's idempotency record's status, read from the deployed table (``None``: no record)."""
    key = {KEY_ATTRIBUTE: {"S": record_key(job_type, dup.message_id)}}
    item = demo.emulator.client("dynamodb").get_item(TableName=dup.table, Key=key, ConsistentRead=True)
    status: str | None = item.get("Item", {}).get("status", {}).get("S")
    return status


def start_duplicate(demo: Harness, job: EcsJob, queue: QueueJob) -> DuplicateDelivery | None:
    """Run one job on a worker whose deletes all fail, then SIGTERM that worker (it is not waited for).
    ``None`` (and a line saying why) when the job has no idempotency table: there is nothing to show."""
    table = job.config().idempotency.table
    if not table:
        unset = SETTINGS["idempotency_table"].spelled()
        demo.say(f"{job.job_type}: no idempotency table ({unset} not given): no duplicate delivery to show")
        return None
    proxy = FaultProxy(demo.emulator.endpoint, lose_deletes).start()
    demo.closers.append(proxy.stop)  # after the workers are stopped
    worker = demo.start_worker(job, {"AWS_ENDPOINT_URL_SQS": proxy.endpoint})
    demo.say(
        f"{job.job_type}: started {worker.name} with its SQS requests through a fault proxy that fails every delete "
        "(500); its DynamoDB requests go straight to the emulator"
    )
    body = demo.job(job.job_type, "dup", WORK_S)
    job_id = json.loads(body)["id"]
    demo.send(queue, [body])
    demo.wait_until("the duplicate delivery job's run", lambda: demo.completed([job_id]), 60)
    dup = DuplicateDelivery(job_id, demo.runs_of(job_id)[0].message_id, table, worker, proxy)
    demo.wait_until("its delete failing", lambda: dup.deletes_failed() > 0, 30)
    worker.process.send_signal(signal.SIGTERM)
    worker.stopping = True
    demo.say(
        f"{job.job_type}: job {job_id} ran, its idempotency record {record_status(demo, job.job_type, dup)}, its "
        f"delete failed {_times(dup.deletes_failed())} so far; SIGTERM to {worker.name}: it retries the delete until "
        "its shutdown grace ends, then leaves the message to its lease"
    )
    return dup


def finish_duplicate(demo: Harness, job: EcsJob, dup: DuplicateDelivery, result: DemoResult, lease_s: float) -> None:
    """Wait for the second delivery's ``duplicate`` EMF line (a normal worker received the message again) and
    record what happened: runs, deliveries, outcomes and the DynamoDB record."""
    demo.wait_until(f"{dup.worker.name}'s exit", lambda: dup.worker.process.poll() is not None, 60)
    demo.wait_until(
        "the redelivered job's duplicate outcome",
        lambda: any(line["Outcome"] == "duplicate" for line in demo.emf_of(job.job_type, dup.message_id)),
        lease_s + 30,
    )
    deliveries = sorted(demo.emf_of(job.job_type, dup.message_id), key=lambda line: line["ReceiveCount"])
    runs = demo.runs_of(dup.job_id)
    status = record_status(demo, job.job_type, dup)
    outcomes = [line["Outcome"] for line in deliveries]
    later = f"receive count {deliveries[-1]['ReceiveCount']}"
    second = f"a duplicate ({later}, deleted unrun)" if outcomes[1:] == ["duplicate"] else f"{outcomes[1:]} ({later})"
    demo.say(
        f"{job.job_type}: job {dup.job_id} delivered {len(deliveries)} times (its delete lost once), ran "
        f"{'once' if len(runs) == 1 else f'{len(runs)} times'}: the second delivery was {second}; its record "
        f"{record_key(job.job_type, dup.message_id)}: {status}"
    )
    result.duplicate = {
        "runs": len(runs),
        "completions": sum(r.outcome == "success" for r in runs),
        "deliveries": len(deliveries),
        "receive_counts": [line["ReceiveCount"] for line in deliveries],
        "outcomes": outcomes,
        "deletes_failed": dup.deletes_failed(),
        "record_status": status,
        "exit_code": dup.worker.process.returncode,
    }


def _times(count: int) -> str:
    """``once``, ``2 times``."""
    return "once" if count == 1 else f"{count} times"
