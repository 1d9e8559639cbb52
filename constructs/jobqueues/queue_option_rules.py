"""The rules of the queue options: delivery delay, message size, FIFO high throughput, fair queues, removal
policies.

Ranges are CloudFormation's (``AWS::SQS::Queue``): ``DelaySeconds`` 0-900, ``MaximumMessageSize`` 1,024 -
1,048,576 bytes. Each rule names the prop, the value and the fix.
"""

from __future__ import annotations

from jobqueues.queue_declaration import RuleContext, fmt

SQS_MAX_DELIVERY_DELAY_S = 900
SQS_MIN_MESSAGE_SIZE = 1_024
#: CloudFormation's maximum; the regions without 1 MiB messages take 262,144 bytes at most.
SQS_MAX_MESSAGE_SIZE = 1_048_576

#: ``sqs.DeduplicationScope`` and ``sqs.FifoThroughputLimit`` members, by name.
MESSAGE_GROUP = "MESSAGE_GROUP"
PER_MESSAGE_GROUP_ID = "PER_MESSAGE_GROUP_ID"
#: ``RemovalPolicy`` members SQS queues take (a queue has no snapshot).
QUEUE_REMOVAL_POLICIES = ("DESTROY", "RETAIN", "RETAIN_ON_UPDATE_OR_DELETE")


def delivery_delay(c: RuleContext) -> None:
    """The source queue's delay, resolved before the retention rules read it."""
    delay = c.d.delivery_delay
    if delay is None:
        return
    if 0 <= delay <= SQS_MAX_DELIVERY_DELAY_S:
        c.result.delivery_delay_s = delay
    else:
        c.error(
            f"delivery_delay must be between 0 s and 15 min (got {fmt(delay)}): pass e.g. Duration.minutes(5); "
            "a longer wait needs a scheduler (e.g. EventBridge Scheduler) in front of the queue"
        )


def message_size(c: RuleContext) -> None:
    size = c.d.max_message_size
    if size is None:
        return
    if SQS_MIN_MESSAGE_SIZE <= size <= SQS_MAX_MESSAGE_SIZE:
        c.result.max_message_size = size
    else:
        c.error(
            f"max_message_size must be between 1 KiB and 1 MiB (got {size:,} bytes): pass e.g. "
            "Size.kibibytes(256); for larger payloads add payload_bucket=True (kept in S3, a pointer in the message)"
        )


def fifo_high_throughput(c: RuleContext) -> None:
    """High throughput is ``MESSAGE_GROUP`` deduplication with the ``PER_MESSAGE_GROUP_ID`` limit, together."""
    d = c.d
    scope, limit = d.deduplication_scope, d.fifo_throughput_limit
    for prop, value, enum in (
        ("deduplication_scope", scope, "DeduplicationScope"),
        ("fifo_throughput_limit", limit, "FifoThroughputLimit"),
    ):
        if value is not None and not d.fifo:
            c.error(
                f"{prop}=sqs.{enum}.{value} needs fifo=True (it sets a FIFO queue's throughput mode): declare "
                f"fifo=True, or leave {prop} unset"
            )
    if not d.fifo:
        return
    group_scope, group_limit = scope == MESSAGE_GROUP, limit == PER_MESSAGE_GROUP_ID
    if group_scope and not group_limit:
        c.error(
            f"deduplication_scope=sqs.DeduplicationScope.{MESSAGE_GROUP} without fifo_throughput_limit="
            f"sqs.FifoThroughputLimit.{PER_MESSAGE_GROUP_ID} leaves the queue at normal throughput: pass both "
            "for high throughput, or neither"
        )
    elif group_limit and not group_scope:
        got = "unset" if scope is None else f"sqs.DeduplicationScope.{scope}"
        c.error(
            f"fifo_throughput_limit=sqs.FifoThroughputLimit.{PER_MESSAGE_GROUP_ID} needs deduplication_scope="
            f"sqs.DeduplicationScope.{MESSAGE_GROUP} (got {got}): SQS's high throughput takes both; pass both, or "
            "neither"
        )


def fair_queue(c: RuleContext) -> None:
    """A fair queue is a standard one: SQS keeps a standard queue's tenants (message groups) fair; a FIFO queue
    already serves its groups one message at a time, in order."""
    if c.d.fair and c.d.fifo:
        c.error(
            "fair=True is for standard queues, but fifo=True: a FIFO queue already keeps its message groups apart "
            "(one message of a group in flight at a time, in order); remove fair for order per group, or remove "
            "fifo for a fair queue (no order, a tenant's messages run concurrently)"
        )


def removal_policies(c: RuleContext) -> None:
    for prop in ("removal_policy", "dlq_removal_policy"):
        value = getattr(c.d, prop)
        if value is not None and value not in QUEUE_REMOVAL_POLICIES:
            c.error(
                f"{prop}=RemovalPolicy.{value} does not apply to an SQS queue (it has no snapshot): pass "
                "RemovalPolicy.RETAIN or RemovalPolicy.DESTROY"
            )


def delay_within_retention(c: RuleContext) -> None:
    """A delayed message ages while it waits: its retention and the age alarm count the delay."""
    d, r = c.d, c.result
    delay = r.delivery_delay_s
    if not delay or {"delivery_delay", "retention_period"} & d.tokens.keys():
        return
    if delay >= r.retention_s:
        c.error(
            f"delivery_delay {fmt(delay)} is not below retention_period {fmt(r.retention_s)}: every message would "
            "expire before its first delivery; lower delivery_delay or raise retention_period"
        )
    age = d.oldest_message_age
    if age is not None and 0 < age <= delay:
        suggested = delay + r.max_receive_count * (c.vt or 0)
        c.error(
            f"{c.name('oldest_message_age')} {fmt(age)} is not above delivery_delay {fmt(delay)}: a message's age "
            "counts from when it was sent, its delay included, so the alarm would fire on every message; raise it, "
            f"e.g. to delivery_delay + max_receive_count x visibility_timeout = {fmt(suggested)}"
        )
