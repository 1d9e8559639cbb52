"""Lease and failure-handling settings, with the defaults of a common message-processing framework, validated
when built (the rules of :mod:`sqslease.rules`).

Each field is a setting of the consumer's configuration, of the same name (:mod:`sqslease.config` names its
environment variable and its command-line option, and writes and reads it): which is how the ``jobqueues``
constructs hand a consumer the same numbers its queue was declared with.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum

from sqslease.rules import (
    DEFAULT_DEADLINE_MARGIN_S,
    DEFAULT_EXTENSION_THRESHOLD_S,
    DEFAULT_HEARTBEAT_INTERVAL_S,
    DEFAULT_MAX_TOTAL_LEASE_S,
    DEFAULT_SHUTDOWN_GRACE_S,
    SQS_IN_FLIGHT_QUOTA,
    SQS_MAX_RECEIVE_COUNT,
    SQS_MAX_VISIBILITY_TIMEOUT_S,
    default_request_timeout,
    lease_timing_problems,
    total_lease_problems,
)

#: How a ``ValueError`` of :class:`LeaseSettings` begins; the problems follow, separated by ``"; "``.
INVALID_SETTINGS = "invalid sqslease settings: "


class FailurePolicy(StrEnum):
    """What happens to a message whose handler raised."""

    LAPSE = "lapse"  # stop extending; the message reappears when its current lease runs out
    VISIBLE_NOW = "visible_now"  # visibility timeout 0: retried at once
    BACKOFF = "backoff"  # visibility timeout = exponential delay from the receive count, with jitter


@dataclass(frozen=True)
class LeaseSettings:
    """How a consumer holds, extends and settles its leases. Durations in seconds.

    :param visibility_timeout: lease length asked for on receive and on each extension, in seconds. Default 30.
    :param extension_threshold: extend a lease when it is within this many seconds of expiry. Default 5.
    :param heartbeat_interval: seconds between scheduler ticks. Default 1.
    :param heartbeat: extend leases at all. Default True.
    :param max_total_lease: stop extending this long after receipt, in seconds; SQS refuses beyond 12 h. With
        ``max_processing_time`` (and the heartbeat) it must be at least ``max_processing_time + visibility_timeout``
        (``sqslease.rules.total_lease_problems``). Default 43,140 (12 h minus 60 s).
    :param pull_forward: a tick may also extend leases due within ``extension_threshold + pull_forward``
        seconds to fill a batch of 10 it is sending anyway. Default 10.
    :param max_requests_in_flight: concurrent ChangeMessageVisibilityBatch requests. Default 4.
    :param request_timeout: connect and read timeout of each lease request (extend, delete, release), in
        seconds; a timed-out request is retried within the leases' slack. Default ``None``:
        ``(extension_threshold - heartbeat_interval) / 2``, half the least slack a tick leaves a lease (a held request
        and a whole retry fit in it), at most 2 s; half the threshold with the heartbeat off
        (``sqslease.rules.default_request_timeout``).
    :param receive_visibility_timeout: the lease asked for on ReceiveMessage, in seconds; the heartbeat lengthens it to
        ``visibility_timeout`` only for messages still held. It bounds how long a long poll abandoned at
        shutdown can hide a message. Default ``None``: ``extension_threshold + 5``, at most
        ``visibility_timeout`` (``visibility_timeout`` when the heartbeat is off).
    :param failure_policy: see :class:`FailurePolicy`. Default ``backoff``.
    :param backoff_base: first backoff delay, in seconds. Default 2.
    :param backoff_max: backoff delay cap, in seconds (SQS caps any visibility timeout at 12 h). Default 900.
    :param non_retryable: import paths of exception types sent straight to the DLQ. Default none.
    :param dead_letter_queue_url: where non-retryable failures go, and (FIFO) messages whose attempts are spent.
        Default none (then they lapse, logged).
    :param max_receive_count: the queue's ``maxReceiveCount``. With ``dead_letter_queue_url``, a FIFO consumer
        retries a failed message in process, holding its group's later messages, and sends it to the DLQ itself
        after this many attempts (docs/sqslease.md, "FIFO queues"). Default ``None``: ``python -m sqslease.worker``
        reads the queue's ``RedrivePolicy`` (FIFO only); else a failure releases its group's later messages.
    :param receive_count_warning: log a warning when a message has been received more than this. Default 3.
    :param wait_time: long-poll wait, in whole seconds, at most; see :attr:`poll_wait`. Default 20.
    :param max_in_flight: this consumer stops receiving at this many leases of its own. Default 100,000.
    :param queue_in_flight_limit: pause receiving when the queue's in-flight count reaches this.
        Default 108,000 (90 % of the 120,000 quota).
    :param shutdown_grace: seconds after SIGTERM during which running handlers are kept extended (ECS stopTimeout
        minus a margin); what is left then is released. Default 25.
    :param deadline_margin: Lambda only: stop starting records when less than this remains, in seconds; at most a
        quarter of the time the invocation started with (``sqslease.rules.lambda_deadline_margin``: 0.75 s for a
        3 s function). Default 5.
    :param max_batching_window: Lambda only: the event source's batching window, in seconds; leases are assumed to have
        started that much before the invocation (conservative). Default 0.
    :param job_type: name in log lines and metrics. Default ``"default"``.
    :param stack: the CloudFormation stack that deployed this consumer (``Dev-Billing``), written on each EMF line as
        ``Stack``: a property, not a metric dimension, which keeps the measurements of a job type that several stacks
        deploy (a Dev and a Prod Stage) apart in jobstats at no metric cost; CloudWatch's metrics of the job type stay
        shared (docs/monitoring.md). Default ``None``: not written.
    :param task_protection_minutes: ECS only: while the worker holds leases it keeps ECS task scale-in
        protection on for this many minutes (1-2880), renewed at half time. Default 60.
    :param max_processing_time: seconds a handler may run on one message, from its start; one still running then
        has failed (Outcome ``timed_out``): its lease is settled by the failure policy when the handler returns (at
        once in a worker without heartbeat) and its late result ignored; a handler still running ends the worker
        after its drain, or the Lambda execution environment after its invocation. See
        docs/sqslease.md, "Runtime controls". Default ``None``: no limit but ``max_total_lease``.
    :param hooks: import paths (``package.module:name``) of :class:`sqslease.hooks.Hooks` objects, called
        before and after each message. Default none.
    :param idempotency_key: import path (``package.module:function``) of the idempotency key function,
        ``key(body, message) -> str`` (idempotency on only; docs/sqslease.md, "Idempotency"). Default ``None``: the
        ``MessageId``.
    :param delete_payloads: delete a payload kept in S3 (a message sent as a pointer, docs/sqslease.md, "the claim
        check") once SQS confirmed its message's delete; ``False`` leaves every object to its bucket's lifecycle.
        Default True.
    """

    visibility_timeout: float = 30
    extension_threshold: float = DEFAULT_EXTENSION_THRESHOLD_S
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL_S
    heartbeat: bool = True
    max_total_lease: float = DEFAULT_MAX_TOTAL_LEASE_S
    pull_forward: float = 10
    max_requests_in_flight: int = 4
    request_timeout: float | None = None
    receive_visibility_timeout: float | None = None
    failure_policy: FailurePolicy = FailurePolicy.BACKOFF
    backoff_base: float = 2
    backoff_max: float = 900
    non_retryable: tuple[str, ...] = field(default_factory=tuple)
    dead_letter_queue_url: str | None = None
    max_receive_count: int | None = None
    receive_count_warning: int = 3
    wait_time: int = 20
    max_in_flight: int = 100_000
    queue_in_flight_limit: int = int(SQS_IN_FLIGHT_QUOTA * 0.9)
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE_S
    deadline_margin: float = DEFAULT_DEADLINE_MARGIN_S
    max_batching_window: float = 0
    job_type: str = "default"
    stack: str | None = None
    task_protection_minutes: int = 60
    max_processing_time: float | None = None
    hooks: tuple[str, ...] = field(default_factory=tuple)
    idempotency_key: str | None = None
    delete_payloads: bool = True

    def __post_init__(self) -> None:
        problems = lease_timing_problems(
            self.visibility_timeout, self.extension_threshold, self.heartbeat_interval, heartbeat=self.heartbeat
        )
        if not 0 < self.max_total_lease <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            problems.append(f"max_total_lease must be in (0, 43200] s, got {self.max_total_lease}")
        if self.max_requests_in_flight < 1:
            problems.append("max_requests_in_flight must be at least 1")
        if self.backoff_base <= 0 or self.backoff_max < self.backoff_base:
            problems.append("backoff_base must be positive and backoff_max at least backoff_base")
        if not 0 <= self.wait_time <= 20:
            problems.append(f"wait_time must be 0-20 s, got {self.wait_time}")
        if self.request_timeout is not None and self.request_timeout <= 0:
            problems.append(f"request_timeout must be positive, got {self.request_timeout}")
        if self.receive_visibility_timeout is not None and not (
            1 <= self.receive_visibility_timeout <= self.visibility_timeout
        ):
            problems.append(
                f"receive_visibility_timeout must be 1 s to visibility_timeout, got {self.receive_visibility_timeout}"
            )
        if self.max_receive_count is not None and not 1 <= self.max_receive_count <= SQS_MAX_RECEIVE_COUNT:
            problems.append(f"max_receive_count must be 1-{SQS_MAX_RECEIVE_COUNT}, got {self.max_receive_count}")
        if not 1 <= self.task_protection_minutes <= 2880:
            problems.append(f"task_protection_minutes must be 1-2880, got {self.task_protection_minutes}")
        if self.max_processing_time is not None and not 0 < self.max_processing_time <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            problems.append(f"max_processing_time must be in (0, 43200] s, got {self.max_processing_time}")
        elif self.heartbeat and 0 < self.max_total_lease <= SQS_MAX_VISIBILITY_TIMEOUT_S:
            problems += total_lease_problems(self.max_total_lease, self.max_processing_time, self.visibility_timeout)
        if problems:
            raise ValueError(INVALID_SETTINGS + "; ".join(problems))

    @property
    def lease_request_timeout(self) -> float:
        """Connect and read timeout of lease requests, in seconds (see ``request_timeout``)."""
        if self.request_timeout is not None:
            return self.request_timeout
        return default_request_timeout(self.extension_threshold, self.heartbeat_interval, heartbeat=self.heartbeat)

    @property
    def first_lease(self) -> float:
        """Visibility timeout asked for on ReceiveMessage, in seconds (see ``receive_visibility_timeout``)."""
        if self.receive_visibility_timeout is not None:
            return self.receive_visibility_timeout
        if not self.heartbeat:
            return self.visibility_timeout
        return min(self.visibility_timeout, self.extension_threshold + 5)

    @property
    def poll_wait(self) -> int:
        """Long-poll wait (``WaitTimeSeconds``) in whole seconds: ``wait_time``, shortened with the heartbeat on
        so that a message handed over at the very end of a poll still has ``extension_threshold`` of its first
        lease left.

        A lease is timed from when ReceiveMessage was sent, because a response held in transit must not make a
        lease look younger than it is; a longer poll would hand over messages whose lease may have run out.
        With the defaults (first lease 10 s, threshold 5 s) an idle worker polls every 5 s rather than 20 s.
        """
        if not self.heartbeat:
            return self.wait_time
        return max(0, min(self.wait_time, int(self.first_lease - self.extension_threshold)))

    def changed_fields(self) -> list[str]:
        """The fields whose value differs from the default, in declaration order."""
        return [
            f.name
            for f in dataclasses.fields(self)
            if getattr(self, f.name)
            != (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
        ]
