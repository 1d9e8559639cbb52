"""The warnings a declaration can get at synth, each kind with its own id (as the CDK's own warnings have).

A warning is an annotation, ``<message> [ack: <id>]``; acknowledging its id silences that kind only, e.g.
``Annotations.of(stack).acknowledge_warning("jobqueues:maxReceiveCountBelowTwo", "reason")``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``max_receive_count x VT`` is longer than the retention period: messages can expire before the DLQ.
RETRIES_OUTLIVE_RETENTION = "jobqueues:maxReceiveTimesVtExceedsRetention"
#: ``max_receive_count`` 1: a message a stopping consumer received but did not start reaches the DLQ unrun.
SINGLE_RECEIVE = "jobqueues:maxReceiveCountBelowTwo"
#: FIFO with a Lambda consumer: the back-off of ``max_receive_count``'s retries does not fit in one invocation.
FIFO_RETRIES_EXCEED_LAMBDA_TIMEOUT = "jobqueues:fifoRetriesExceedLambdaTimeout"
#: ``max_tasks x concurrency`` handlers could hold more messages than the in-flight quota.
HANDLERS_EXCEED_IN_FLIGHT_QUOTA = "jobqueues:handlersExceedInFlightQuota"
#: ``MeasuredProfiles``: a job type's profile refused a recommendation; the declared fallback is used.
PROFILE_TOO_SMALL = "jobqueues:profileTooSmall"
#: ``MeasuredProfiles``: the stack has no profile of the job type yet (a new Stage); the declared fallback is used.
PROFILE_MISSING = "jobqueues:profileMissing"
#: ``MeasuredProfiles``: a job type's measurements end longer ago than ``max_age``.
STALE_PROFILE = "jobqueues:staleProfile"
#: ``MeasuredProfiles``: the profile used was measured on lines that name no stack (other stacks' samples may be in it).
PROFILE_WITHOUT_STACK = "jobqueues:profileWithoutStack"
#: ``LambdaJob``: more event source filters than Lambda's default quota (5); the deploy needs a quota increase.
FILTERS_ABOVE_DEFAULT_QUOTA = "jobqueues:filtersAboveDefaultQuota"
#: ``LambdaJob``: provisioned pollers can invoke more at once than the function's reserved concurrency.
POLLERS_NOT_BOUND_BY_RESERVED_CONCURRENCY = "jobqueues:pollersNotBoundByReservedConcurrency"


@dataclass(frozen=True)
class DeclarationWarning:
    """A warning of a declaration: its id (one per kind, see this module) and its text."""

    id: str
    message: str
