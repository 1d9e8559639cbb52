"""A job type's payload bucket: payloads larger than its queue takes, kept in S3 (a claim check) in the AWS SQS
Extended Client's wire format (:mod:`sqslease.payload_pointer`), and the grants of its consumer and its producers.

``payload_bucket=True`` makes the job type a bucket of its own: encrypted as its queues are (their KMS key, else
S3-managed keys), TLS only, public access blocked, objects expiring once no message can point at them any more
(:func:`jobqueues.payload_rules.payload_expiration_days`), kept when the stack is deleted (a bucket that still holds
objects cannot be deleted by CloudFormation; its lifecycle empties it). ``payload_bucket=bucket`` takes an
``s3.IBucket`` of your own, as it is. The consumer may read objects, and delete them unless ``delete_payloads=False``;
a producer granted ``grant_send_messages`` may put them.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from jobqueues.inputs import PropReader
from jobqueues.nag import nag_text
from jobqueues.payload_rules import ABORT_UPLOAD_DAYS

#: What the consumer sends: GetObject (the payload, before the handler), DeleteObject (after its message's delete;
#: DeleteObjects is authorized per key as DeleteObject).
READ_ACTIONS = ("s3:GetObject",)
DELETE_ACTIONS = ("s3:DeleteObject",)
#: What a producer sends (the official clients and ``jobqueues send``): one PutObject per payload.
PUT_ACTIONS = ("s3:PutObject",)
#: Construct id of the bucket a job queue makes for ``payload_bucket=True``.
BUCKET_ID = "PayloadBucket"
#: Why the object grants end in ``/*`` (cdk-nag AwsSolutions-IAM5).
KEY_WILDCARD_REASON = (
    "a payload's key is a UUID its producer picks as it sends (the SQS Extended Client's rule), so no key is known at "
    "deploy time; the wildcard is limited to this job type's own payload bucket and to the {actions} it uses"
)


def read_payload_bucket(read: PropReader) -> Any:
    """The ``payload_bucket`` prop: ``None`` (no bucket) for ``None`` or ``False``, ``True``, or an ``s3.IBucket``;
    any other value is an error in ``read``."""
    value = read.props.get("payload_bucket")
    if value is None or value is False:
        return None
    if value is not True and not hasattr(value, "bucket_arn"):
        read._wrong(
            "payload_bucket", value, "a bool or an s3.IBucket", "True (a bucket of the job type's), or a bucket"
        )
        return None
    return value


def read_delete_payloads(read: PropReader) -> bool | None:
    """The ``delete_payloads`` prop as given (``None``: not given); not a ``bool`` is an error in ``read``."""
    if read.props.get("delete_payloads") is None:
        return None
    return read.boolean("delete_payloads", True)


def make_payload_bucket(scope: Construct, encryption_key: kms.IKey | None, expiration_days: int) -> s3.Bucket:
    """The bucket ``payload_bucket=True`` gives a job queue (``scope``): see the module docstring."""
    bucket = s3.Bucket(
        scope,
        BUCKET_ID,
        encryption=s3.BucketEncryption.KMS if encryption_key is not None else s3.BucketEncryption.S3_MANAGED,
        encryption_key=encryption_key,
        bucket_key_enabled=True if encryption_key is not None else None,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="ExpirePayloads",
                expiration=Duration.days(expiration_days),
                abort_incomplete_multipart_upload_after=Duration.days(ABORT_UPLOAD_DAYS),
            )
        ],
        removal_policy=RemovalPolicy.RETAIN,
    )
    Validations.of(bucket).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason=(
                "a payload object lives from its send until its message is deleted (or its lifecycle expires it), "
                "written by the job type's producers and read once by its consumer under their own roles; server "
                "access logs would add a log object per transfer: audit with CloudTrail S3 data events on this bucket"
            ),
        )
    )
    return bucket


def bucket_of(scope: Construct, payload_bucket: Any, encryption_key: kms.IKey | None, expiration_days: int) -> Any:
    """The bucket of a job queue's ``payload_bucket`` prop: ``None`` (no bucket) for ``None`` or ``False``, a new one
    for ``True`` (:func:`make_payload_bucket`), else the ``s3.IBucket`` given."""
    if payload_bucket is None or payload_bucket is False:
        return None
    if payload_bucket is True:
        return make_payload_bucket(scope, encryption_key, expiration_days)
    return payload_bucket


def grant_consumer(
    bucket: s3.IBucket, grantee: iam.IGrantable, *, delete: bool, queue_key: kms.IKey | None
) -> iam.Grant:
    """Let a consumer read the payloads (and delete them, with ``delete``): :data:`READ_ACTIONS` (and
    :data:`DELETE_ACTIONS`) on the bucket's objects, and ``kms:Decrypt`` on the bucket's key unless it is the queue's
    (``queue_key``), which the consumer has already."""
    actions = [*READ_ACTIONS, *(DELETE_ACTIONS if delete else ())]
    return _grant_objects(bucket, grantee, actions, ("kms:Decrypt",), queue_key)


def grant_producer(bucket: s3.IBucket, grantee: iam.IGrantable, *, queue_key: kms.IKey | None) -> iam.Grant:
    """Let a producer put payloads: :data:`PUT_ACTIONS` on the bucket's objects, and ``kms:GenerateDataKey`` and
    ``kms:Decrypt`` (S3 needs both to encrypt an object) on the bucket's key unless it is the queue's (``queue_key``),
    which ``grant_send_messages`` grants already."""
    return _grant_objects(bucket, grantee, list(PUT_ACTIONS), ("kms:GenerateDataKey", "kms:Decrypt"), queue_key)


def _grant_objects(
    bucket: s3.IBucket,
    grantee: iam.IGrantable,
    actions: list[str],
    key_actions: tuple[str, ...],
    queue_key: kms.IKey | None,
) -> iam.Grant:
    objects = bucket.arn_for_objects("*")
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=actions, resource_arns=[objects])
    if bucket.encryption_key is not None and bucket.encryption_key is not queue_key:
        bucket.encryption_key.grant(grantee, *key_actions)
    principal = grantee.grant_principal
    policy = principal.node.try_find_child("DefaultPolicy") if isinstance(principal, iam.Role) else None
    if policy is not None:
        stack = Stack.of(policy)
        Validations.of(policy).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{nag_text(stack, objects)}]",
                reason=KEY_WILDCARD_REASON.format(actions=" and ".join(actions)),
            )
        )
    return grant
