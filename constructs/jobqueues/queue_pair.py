"""A job type's two queues, the source queue and its dead-letter queue, built as planned
(:class:`jobqueues.plan.QueuePlan`): encryption, FIFO throughput, retention, the redrive policy."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy, SizeRoundingBehavior
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues.plan import Given, QueuePlan
from jobqueues.registry import StackRegistry


def build_queue_pair(
    scope: Construct, plan: QueuePlan, registry: StackRegistry, visibility_timeout: Duration, max_receive_count: Any
) -> tuple[sqs.Queue, sqs.Queue]:
    """The source queue and its dead-letter queue in ``scope``, as planned; the DLQ's redrive-allow policy admits
    only the source queue.

    :param visibility_timeout: the source queue's (:func:`planned_duration` of the plan's).
    :param max_receive_count: deliveries before a message moves to the DLQ (a token as given).
    """
    key = plan.encryption_key
    encryption = sqs.QueueEncryption.KMS if key else sqs.QueueEncryption.SQS_MANAGED
    fifo = plan.fifo or None
    throughput = _throughput(plan)
    dead_letter_queue = sqs.Queue(
        scope,
        "DeadLetterQueue",
        queue_name=plan.dead_letter_queue_name,
        fifo=fifo,
        retention_period=planned_duration(plan.dlq_retention_period, registry),
        encryption=encryption,
        encryption_master_key=key,
        enforce_ssl=True,
        removal_policy=RemovalPolicy[plan.dlq_removal_policy],
        **throughput,
    )
    queue = sqs.Queue(
        scope,
        "Queue",
        queue_name=plan.queue_name,
        fifo=fifo,
        content_based_deduplication=plan.content_based_deduplication or None,
        visibility_timeout=visibility_timeout,
        retention_period=planned_duration(plan.retention_period, registry),
        delivery_delay=planned_duration(plan.delivery_delay, registry) if plan.delivery_delay else None,
        max_message_size_bytes=_bytes(plan.max_message_size),
        encryption=encryption,
        encryption_master_key=key,
        enforce_ssl=True,
        dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=max_receive_count, queue=dead_letter_queue),
        removal_policy=RemovalPolicy[plan.removal_policy],
        **throughput,
    )
    if plan.queue_name is not None:
        # By ARN built from the fixed name: a reference to the source queue would be circular (the source's
        # redrive policy already references the DLQ).
        source_arn = registry.stack.format_arn(service="sqs", resource=plan.queue_name)
        cfn_dlq: sqs.CfnQueue = dead_letter_queue.node.default_child  # type: ignore[assignment]
        cfn_dlq.redrive_allow_policy = {"redrivePermission": "byQueue", "sourceQueueArns": [source_arn]}
    return queue, dead_letter_queue


def _throughput(plan: QueuePlan) -> dict[str, Any]:
    """A FIFO queue's deduplication scope and throughput limit, as declared (both queues get them)."""
    throughput: dict[str, Any] = {}
    if plan.deduplication_scope is not None:
        throughput["deduplication_scope"] = sqs.DeduplicationScope[plan.deduplication_scope]
    if plan.fifo_throughput_limit is not None:
        throughput["fifo_throughput_limit"] = sqs.FifoThroughputLimit[plan.fifo_throughput_limit]
    return throughput


def _bytes(value: int | Given) -> Any:
    """The bytes a queue gets: a ``Size`` token's, or the number."""
    return value.value.to_bytes(rounding=SizeRoundingBehavior.NONE) if isinstance(value, Given) else value


def planned_duration(value: float | Given | None, registry: StackRegistry) -> Duration:
    """The ``Duration`` a queue gets: the token as given, or whole seconds (shared per value in the stack)."""
    if isinstance(value, Given):
        return value.value  # type: ignore[no-any-return]
    assert value is not None  # a plan without a VT has errors and is never built
    return registry.seconds(value)
