"""Rules for a job type's payload bucket (``payload_bucket``, ``delete_payloads``), in plain values (no aws_cdk):
how long its objects live, and the declarations it cannot serve.

A payload kept in S3 must outlive every message that points at it. A pointer lives in the source queue for its
retention period at most; dead-lettered, it lives on in the DLQ, for the DLQ's retention counted from the original
send (a standard queue's redrive policy) or from the move (a FIFO queue's, and every copy ``sqslease`` dead-letters
itself, a new message). So an object expires a day after the longest of those: both retention periods together.
"""

from __future__ import annotations

import math

from jobqueues.queue_declaration import RuleContext
from sqslease.rules import SQS_MAX_RETENTION_S

SECONDS_PER_DAY = 86_400
#: Days an object outlives the longest life of a message pointing at it (clock skew, a send late in its day).
EXPIRATION_MARGIN_DAYS = 1
#: Days after which an incomplete multipart upload of a payload is aborted (a producer that died mid-upload).
ABORT_UPLOAD_DAYS = 1


def payload_expiration_days(retention_s: float | None, dlq_retention_s: float | None) -> int:
    """Days after which a job type's payload objects expire: its source queue's retention plus its DLQ's, in whole
    days rounded up, plus :data:`EXPIRATION_MARGIN_DAYS`. A retention unknown at synth (a token, ``None``) counts as
    SQS's longest, 14 days. The defaults (4 and 14 days) give 19 days."""
    longest = (retention_s or SQS_MAX_RETENTION_S) + (dlq_retention_s or SQS_MAX_RETENTION_S)
    return math.ceil(longest / SECONDS_PER_DAY) + EXPIRATION_MARGIN_DAYS


def payload_problems(
    *, bucket: bool, delete_payloads: bool | None, fifo: bool, content_based_deduplication: bool
) -> list[str]:
    """What a declaration with (or without) a payload bucket cannot do, each naming the prop, the value and the fix.

    :param bucket: whether ``payload_bucket`` gives the job type a bucket.
    :param delete_payloads: the prop as given (``None``: not given).
    """
    problems = []
    if delete_payloads is not None and not bucket:
        problems.append(
            f"delete_payloads={delete_payloads} does nothing without payload_bucket: pass payload_bucket=True (or a "
            "bucket of your own), or drop delete_payloads"
        )
    if bucket and fifo and content_based_deduplication:
        problems.append(
            "payload_bucket with content_based_deduplication=True: a payload kept in S3 is sent as a pointer with a "
            "new key each time, so SQS would never find two sends of one payload alike; drop "
            "content_based_deduplication and give each message a MessageDeduplicationId (jobqueues send uses the "
            "SHA-256 of its group and body)"
        )
    return problems


def payload_bucket(c: RuleContext) -> None:
    """The rule of :data:`jobqueues.declaration.RULES`: :func:`payload_problems` of the declaration."""
    d = c.d
    for problem in payload_problems(
        bucket=d.payload_bucket,
        delete_payloads=d.delete_payloads,
        fifo=d.fifo,
        content_based_deduplication=d.content_based_deduplication,
    ):
        c.error(problem)
