"""jobqueues: AWS CDK constructs for SQS job queues with derived visibility timeouts.

Import as ``jobqueues`` (never ``constructs.jobqueues``: ``constructs`` is the CDK library).
"""

from jobqueues.declaration import CheckResult, QueueDeclaration, check_declaration
from jobqueues.job_queue import (
    JobQueue,
    JobQueueAlarmProps,
    JobQueueAlarms,
    JobQueueError,
    default_oldest_message_age_s,
)
from jobqueues.measured_profiles import MeasuredProfiles
from jobqueues.stack_spreading import JobQueueStacks

__all__ = [
    "CheckResult",
    "JobQueue",
    "JobQueueAlarmProps",
    "JobQueueAlarms",
    "JobQueueError",
    "JobQueueStacks",
    "MeasuredProfiles",
    "QueueDeclaration",
    "check_declaration",
    "default_oldest_message_age_s",
]
