"""What the deployed stack holds for the demo: its job types' queues and its ECS jobs' worker commands."""

from __future__ import annotations

import json
from dataclasses import dataclass

from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.server import Emulator
from jobqueues.marker_format import QUEUE_MARKER, resource_metadata
from sqslease.config import ConsumerConfig

#: The module a worker's command runs.
WORKER = "sqslease.worker"


@dataclass(frozen=True)
class QueueJob:
    """A job type: its queue, DLQ and redrive settings, as deployed."""

    job_type: str
    url: str
    dlq_url: str | None
    visibility_timeout_s: int
    max_receive_count: int | None
    fifo: bool
    declared_p99_s: float | None


@dataclass(frozen=True)
class EcsJob:
    """A deployed ECS job: the worker command of its task definition, resolved."""

    job_type: str
    task_definition: str
    command: list[str]
    environment: dict[str, str]
    unresolved: tuple[str, ...] = ()  # container variables whose values cannot be computed locally

    def config(self) -> ConsumerConfig:
        """What the worker is told: its command's options over its container's variables, read as the worker
        reads them (:meth:`sqslease.config.ConsumerConfig.from_args`)."""
        return ConsumerConfig.from_args(self.command[self.command.index(WORKER) + 1 :], environ=self.environment)


def discover_queues(emulator: Emulator, stack: DeployedStack) -> dict[str, QueueJob]:
    """Every source queue of the stack (one with a redrive policy, or not itself a DLQ), by job type."""
    sqs = emulator.client("sqs")
    queues = stack.resources("AWS::SQS::Queue")
    dlq_ids = {
        stack.resolve(q["Properties"]["RedrivePolicy"]["deadLetterTargetArn"])
        for q in queues.values()
        if "RedrivePolicy" in q.get("Properties", {})
    }
    metadata = resource_metadata(stack.template)
    jobs = {}
    for logical_id in queues:
        url = stack.physical_id(logical_id)
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        if attributes["QueueArn"] in dlq_ids:
            continue
        name = url.rsplit("/", 1)[-1]
        job_type = name.removeprefix(f"{stack.name}-").removesuffix(".fifo")
        redrive = json.loads(attributes["RedrivePolicy"]) if "RedrivePolicy" in attributes else None
        dlq_url = None
        if redrive:
            dlq_name = redrive["deadLetterTargetArn"].rsplit(":", 1)[-1]
            dlq_url = sqs.get_queue_url(QueueName=dlq_name)["QueueUrl"]
        p99 = metadata.get(logical_id, {}).get(QUEUE_MARKER, {}).get("processing_p99_s")
        jobs[job_type] = QueueJob(
            job_type=job_type,
            url=url,
            dlq_url=dlq_url,
            visibility_timeout_s=int(attributes["VisibilityTimeout"]),
            max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
            fifo=attributes.get("FifoQueue") == "true",
            declared_p99_s=float(p99) if p99 is not None else None,
        )
    return jobs


def discover_ecs_jobs(stack: DeployedStack) -> list[EcsJob]:
    """Task definitions whose container runs ``sqslease.worker``, their commands resolved from the template.

    moto keeps few task definition properties, so the command comes from the deployed template.
    """
    jobs = []
    for logical_id, resource in stack.resources("AWS::ECS::TaskDefinition").items():
        for container in resource.get("Properties", {}).get("ContainerDefinitions", []):
            command = [str(part) for part in stack.resolve(container.get("Command", []))]
            if WORKER not in command:
                continue
            environment, unresolved = stack.environment(container)
            told = EcsJob("", stack.physical_id(logical_id), command, environment).config()
            queue_url = told.queue_url or ""
            job_type = told.lease.job_type if "job_type" in told.lease.changed_fields() else None
            job_type = job_type or queue_url.rsplit("/", 1)[-1].removeprefix(f"{stack.name}-")
            jobs.append(EcsJob(job_type, stack.physical_id(logical_id), command, environment, tuple(unresolved)))
    return sorted(jobs, key=lambda j: j.job_type)
