"""The default of every prop of the docs' prop tables, by props class and prop name: the value the construct uses
when the prop is not given (:mod:`jobqueues.defaults`), and what it means.

``docs/generate.py`` renders the tables' default column from here (:meth:`Default.text`), never from a docstring
sentence, so a default changed in :mod:`jobqueues.defaults` leaves the docs out of date until they are
regenerated; ``tests/test_prop_defaults.py`` checks each value against what the plans apply. A dataclass's fields
and a function's parameters (``JobQueueAlarmProps``, ``JobQueue.from_queue_attributes``) have their defaults in the
code: only their notes are here. A required prop has no default (its docstring says ``(required)``).
Pure Python (no aws_cdk).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jobqueues import defaults
from sqslease.rules import format_duration


@dataclass(frozen=True)
class Default:
    """A prop's default.

    :param value: what the construct uses: a number (seconds with ``unit="s"``, bytes with ``unit="bytes"``), a
        bool, a string, the name of a member of ``enum``; ``None``: no value (``note`` says what happens).
    :param unit: ``"s"``, ``"bytes"``, or none.
    :param enum: the class ``value`` is a member of, as the user spells it (``"RemovalPolicy"``).
    :param note: what the default means, or what happens without the prop; shown after the value, or alone.
    """

    value: object = None
    unit: str = ""
    enum: str = ""
    note: str = ""

    def text(self) -> str:
        """How the docs show it (reStructuredText literals): ``4 days``, ``RemovalPolicy.DESTROY`` (why)."""
        if self.value is None:
            return self.note or "none"
        shown = _shown(self.value, self.unit, self.enum)
        return f"{shown} ({self.note})" if self.note else shown


def _shown(value: object, unit: str, enum: str) -> str:
    if enum:
        return f"``{enum}.{value}``"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float) and unit == "s":
        return format_duration(value)
    if isinstance(value, int) and unit == "bytes":
        for size, name in ((1_048_576, "MiB"), (1024, "KiB")):
            if value % size == 0:
                return f"{value // size} {name}"
        return f"{value:,} bytes"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return f'``"{value}"``'


NO_HOOKS = "none (only the built-in OpenTelemetry hook, with ``opentelemetry-api`` installed)"
MESSAGE_ID = "none (the ``MessageId``: redeliveries only)"

#: ``jobqueues.props.QueueOptions``.
QUEUE_OPTIONS: Mapping[str, Default] = {
    "max_receive_count": Default(defaults.MAX_RECEIVE_COUNT),
    "retention_period": Default(defaults.RETENTION_S, unit="s"),
    "dlq_retention_period": Default(defaults.DLQ_RETENTION_S, unit="s"),
    "fifo": Default(False),
    "content_based_deduplication": Default(False),
    "queue_name": Default(note="``<stack name>-<job type>``"),
    "encryption_key": Default(note="SQS-managed server-side encryption"),
    "alarms": Default(note="``JobQueueAlarmProps()``"),
    "delivery_delay": Default(defaults.DELIVERY_DELAY_S, unit="s"),
    "max_message_size": Default(defaults.MAX_MESSAGE_SIZE, unit="bytes"),
    "deduplication_scope": Default(note="SQS's, ``QUEUE``"),
    "fifo_throughput_limit": Default(note="SQS's, ``PER_QUEUE``"),
    "removal_policy": Default(
        defaults.REMOVAL_POLICY, enum="RemovalPolicy", note="a deleted job type's pending jobs have no consumer left"
    ),
    "dlq_removal_policy": Default(
        defaults.DLQ_REMOVAL_POLICY, enum="RemovalPolicy", note="its messages are the evidence of failures"
    ),
    "max_queue_time": Default(note="none (no alarm)"),
    "max_time_to_drain": Default(note="none (no alarm)"),
    "fair": Default(False),
    "idempotency": Default(False),
    "payload_bucket": Default(False, note="a body over the queue's limit is refused"),
    "delete_payloads": Default(True),
}

#: ``jobqueues.props.LeaseOptions``.
LEASE_OPTIONS: Mapping[str, Default] = {
    "processing_p99": Default(),
    "visibility_timeout": Default(note="derived"),
    "lease_extension": Default(False),
    "max_processing_time": Default(),
}

#: ``jobqueues.props.JobQueueProps``' own props.
JOB_QUEUE_PROPS: Mapping[str, Default] = {
    "lambda_timeout": Default(),
    "max_batching_window": Default(defaults.MAX_BATCHING_WINDOW_S, unit="s"),
}

#: ``jobqueues.props.LambdaJobProps``' own props (``code``, ``handler`` and ``timeout`` are required).
LAMBDA_JOB_PROPS: Mapping[str, Default] = {
    "batch_size": Default(defaults.LAMBDA_BATCH_SIZE),
    "max_batching_window": Default(defaults.MAX_BATCHING_WINDOW_S, unit="s"),
    "max_concurrency": Default(note="no cap"),
    "memory_size": Default(defaults.LAMBDA_MEMORY_MIB),
    "processing_p99": Default(),
    "lease_extension": Default(False, note="the VT of ``6 x timeout + max_batching_window`` covers that"),
    "max_processing_time": Default(),
    "environment": Default(),
    "log_retention": Default(defaults.LOG_RETENTION, enum="logs.RetentionDays"),
    "architecture": Default(note="``lambda_.Architecture.X86_64``"),
    "vpc": Default(note="none (Lambda's own network)"),
    "vpc_subnets": Default(note="the VPC's private subnets"),
    "security_groups": Default(note="one new group, all outbound traffic allowed"),
    "reserved_concurrent_executions": Default(note="none (the account's unreserved pool)"),
    "tracing": Default(note="disabled"),
    "layers": Default(),
    "filters": Default(note="none (every record)"),
    "metrics_config": Default(),
    "provisioned_poller_config": Default(note="none (standard mode)"),
    "hooks": Default(note=NO_HOOKS),
    "idempotency_key": Default(note=MESSAGE_ID),
}

#: ``jobqueues.props.EcsJobProps``' own props (``handler`` is required).
ECS_JOB_PROPS: Mapping[str, Default] = {
    "cluster": Default(
        note="one per stack, shared by its ECS jobs, with Container Insights, in a new VPC (two availability "
        "zones, one NAT gateway, flow logs)"
    ),
    "image": Default(
        note="built from the ``Dockerfile`` in ``image_directory``; or the registry image in context "
        "``jobqueues:image`` when set (the local emulator has no Docker)"
    ),
    "image_directory": Default(defaults.ECS_IMAGE_DIRECTORY),
    "concurrency": Default(defaults.ECS_CONCURRENCY),
    "min_tasks": Default(defaults.ECS_MIN_TASKS, note="scaled out from 0 as soon as a message is visible"),
    "max_tasks": Default(defaults.ECS_MAX_TASKS),
    "target_backlog_per_task": Default(note="``concurrency``"),
    "cpu": Default(defaults.ECS_CPU),
    "memory_limit_mib": Default(defaults.ECS_MEMORY_MIB),
    "shutdown_grace": Default(defaults.ECS_SHUTDOWN_GRACE_S, unit="s"),
    "log_retention": Default(defaults.LOG_RETENTION, enum="logs.RetentionDays"),
    "environment": Default(),
    "secrets": Default(),
    "capacity_provider_strategies": Default(note="the ``FARGATE`` launch type"),
    "platform_version": Default(note="none pinned (ECS's ``LATEST``, 1.4.0 for Linux)"),
    "cpu_architecture": Default(defaults.ECS_CPU_ARCHITECTURE, enum="ecs.CpuArchitecture"),
    "vpc": Default(note="the cluster's VPC"),
    "vpc_subnets": Default(note="the private subnets, or the public ones with ``assign_public_ip``"),
    "security_groups": Default(note="a new group, all egress and no ingress"),
    "assign_public_ip": Default(False),
    "enable_execute_command": Default(False),
    "propagate_tags": Default(note="none copied"),
    "hooks": Default(note=NO_HOOKS),
    "idempotency_key": Default(note=MESSAGE_ID),
}

#: Notes on the defaults of ``jobqueues.JobQueueAlarmProps``' fields (their values are the dataclass's).
ALARM_PROPS_NOTES: Mapping[str, str] = {
    "in_flight_quota": "the SQS quota for standard and FIFO queues",
    "oldest_message_age": (
        "``max_receive_count x visibility timeout`` (the longest a message should need to be tried and "
        "dead-lettered), at least 5 min and at most half the retention period"
    ),
}

#: Every props class of the docs' tables -> its props' defaults.
PROP_DEFAULTS: Mapping[str, Mapping[str, Default]] = {
    "QueueOptions": QUEUE_OPTIONS,
    "LeaseOptions": LEASE_OPTIONS,
    "JobQueueProps": JOB_QUEUE_PROPS,
    "LambdaJobProps": LAMBDA_JOB_PROPS,
    "EcsJobProps": ECS_JOB_PROPS,
}
#: Notes on the defaults a dataclass or function holds in its code, by its name.
DEFAULT_NOTES: Mapping[str, Mapping[str, str]] = {"JobQueueAlarmProps": ALARM_PROPS_NOTES}
