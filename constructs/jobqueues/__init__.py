"""jobqueues: AWS CDK constructs for SQS job queues with derived visibility timeouts.

Import as ``jobqueues`` (never ``constructs.jobqueues``: ``constructs`` is the CDK library).

The names below load on first use, so the pure modules (:mod:`jobqueues.declaration`,
:mod:`jobqueues.defaults`, the plans) import without starting the CDK's Node kernel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobqueues.alarms import JobQueueAlarmProps, JobQueueAlarms
    from jobqueues.cluster import deploy_time_availability_zones
    from jobqueues.consumer_alarms import ConsumerAlarms
    from jobqueues.consumer_contract import ConsumerContract
    from jobqueues.declaration import CheckResult, QueueDeclaration, check_declaration
    from jobqueues.ecs_job import EcsJob
    from jobqueues.ecs_job_plan import EcsJobDeclaration, EcsJobPlan, plan_ecs_job
    from jobqueues.ecs_service_plan import EcsServiceDeclaration
    from jobqueues.errors import JobQueueError
    from jobqueues.idempotency_table import IdempotencyTable
    from jobqueues.imported_job_queue import ImportedJobQueue
    from jobqueues.interface import IJobQueue
    from jobqueues.job_queue import JobQueue
    from jobqueues.lambda_job import LambdaJob
    from jobqueues.lambda_job_plan import LambdaJobDeclaration, LambdaJobPlan, plan_lambda_job
    from jobqueues.measured_profiles import MeasuredProfiles
    from jobqueues.plan import QueuePlan, plan_job_queue
    from jobqueues.props import EcsJobProps, JobQueueProps, LambdaJobProps, LeaseOptions, QueueOptions
    from jobqueues.stack_spreading import JobQueueStacks

__version__ = "0.2.0"

_EXPORTS = {
    "CheckResult": "declaration",
    "ConsumerAlarms": "consumer_alarms",
    "ConsumerContract": "consumer_contract",
    "IJobQueue": "interface",
    "IdempotencyTable": "idempotency_table",
    "ImportedJobQueue": "imported_job_queue",
    "QueuePlan": "plan",
    "plan_job_queue": "plan",
    "EcsJob": "ecs_job",
    "EcsJobDeclaration": "ecs_job_plan",
    "EcsJobPlan": "ecs_job_plan",
    "EcsServiceDeclaration": "ecs_service_plan",
    "plan_ecs_job": "ecs_job_plan",
    "EcsJobProps": "props",
    "LambdaJob": "lambda_job",
    "LambdaJobDeclaration": "lambda_job_plan",
    "LambdaJobPlan": "lambda_job_plan",
    "plan_lambda_job": "lambda_job_plan",
    "LambdaJobProps": "props",
    "JobQueue": "job_queue",
    "JobQueueAlarmProps": "alarms",
    "JobQueueAlarms": "alarms",
    "JobQueueError": "errors",
    "JobQueueProps": "props",
    "JobQueueStacks": "stack_spreading",
    "LeaseOptions": "props",
    "MeasuredProfiles": "measured_profiles",
    "QueueDeclaration": "declaration",
    "QueueOptions": "props",
    "check_declaration": "declaration",
    "deploy_time_availability_zones": "cluster",
}

__all__ = [
    "CheckResult",
    "ConsumerAlarms",
    "ConsumerContract",
    "EcsJob",
    "EcsJobDeclaration",
    "EcsJobPlan",
    "EcsJobProps",
    "EcsServiceDeclaration",
    "IJobQueue",
    "IdempotencyTable",
    "ImportedJobQueue",
    "JobQueue",
    "JobQueueAlarmProps",
    "JobQueueAlarms",
    "JobQueueError",
    "JobQueueProps",
    "JobQueueStacks",
    "LambdaJob",
    "LambdaJobDeclaration",
    "LambdaJobPlan",
    "LambdaJobProps",
    "LeaseOptions",
    "MeasuredProfiles",
    "QueueDeclaration",
    "QueueOptions",
    "QueuePlan",
    "check_declaration",
    "deploy_time_availability_zones",
    "plan_ecs_job",
    "plan_job_queue",
    "plan_lambda_job",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jobqueues' has no attribute {name!r}")
    return getattr(importlib.import_module(f"jobqueues.{module}"), name)


def __dir__() -> list[str]:
    # The names above load lazily; list them for dir() and completion all the same.
    return sorted({*globals(), *__all__})
