"""``IdempotencyTable``: the DynamoDB table of ``sqslease``'s idempotency records (exactly-once completion), and
how a job type's ``idempotency`` prop becomes a table and a consumer's grant on its own keys.

``idempotency=True`` gives each job type the stack's table (one per stack and KMS key, shared by its job types);
``idempotency=table`` an ``IdempotencyTable`` (or a ``dynamodb.ITable``) of your own. A consumer may use only the
four actions the runtime sends, and only on keys of its own job type (``dynamodb:LeadingKeys`` ``<job type>#*``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from jobqueues.errors import JobQueueError
from jobqueues.idempotency_rules import table_schema_problems
from jobqueues.inputs import PropReader
from jobqueues.registry import stack_of
from sqslease.idempotency import KEY_ATTRIBUTE, KEY_SEPARATOR, TTL_ATTRIBUTE

#: What ``sqslease`` sends: PutItem (begin), GetItem (a begin's read-back, ``IdempotencyStore.get``), UpdateItem
#: (complete; each update of an extension's TransactWriteItems is authorized as one), DeleteItem (fail).
ACTIONS = ("dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
#: What DynamoDB needs of a caller on a table with a customer managed key: aws-cdk-lib's table grants without the
#: wildcards (``kms:ReEncrypt*``, ``kms:GenerateDataKey*``), which DynamoDB does not use.
KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
#: Construct id of the stack's table (of the one without a key of its own).
STACK_TABLE_ID = "IdempotencyTable"


class IdempotencyTable(Construct):
    """A DynamoDB table for ``sqslease``'s idempotency records, shared by job types (each consumer may touch only its
    own job type's keys): partition key ``pk`` (string), TTL on ``ttl``, on-demand capacity, point-in-time recovery.
    Pass it as ``idempotency=`` to ``JobQueue``, ``LambdaJob`` or ``EcsJob``; ``idempotency=True`` makes one per stack.

    :param scope: parent construct.
    :param id: construct id.
    :param encryption_key: the KMS key that encrypts the table; consumers get ``kms:Decrypt``, ``Encrypt``,
        ``GenerateDataKey`` and ``DescribeKey`` on it. Default: the AWS managed key (``alias/aws/dynamodb``).
    :param removal_policy: what deleting the stack (or replacing the table) does to the records:
        ``RemovalPolicy.DESTROY``, ``RETAIN``, ``RETAIN_ON_UPDATE_OR_DELETE`` or ``SNAPSHOT``. Default:
        ``RemovalPolicy.DESTROY``, as the source queues': a record guards the messages of its job type's queue for
        its retention period (plus a day), and goes with them.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
    ) -> None:
        super().__init__(scope, id)
        props = {"encryption_key": encryption_key, "removal_policy": removal_policy}
        read = PropReader(props, props)
        read.having("encryption_key", "key_arn", "a kms.IKey, e.g. kms.Key(self, 'Key')")
        read.member("removal_policy", RemovalPolicy, "RemovalPolicy.RETAIN")
        if read.errors:
            raise JobQueueError(
                f"IdempotencyTable {self.node.path} cannot be deployed:\n" + "\n".join(f"  - {e}" for e in read.errors)
            )
        #: The key that encrypts the table; ``None``: the AWS managed key.
        self.encryption_key = encryption_key
        #: The table.
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=KEY_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=(
                dynamodb.TableEncryption.CUSTOMER_MANAGED
                if encryption_key is not None
                else dynamodb.TableEncryption.AWS_MANAGED
            ),
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        )

    @property
    def table_name(self) -> str:
        """The table's name (a token at synth)."""
        return self.table.table_name


def grant_job_type(table: dynamodb.ITable, grantee: iam.IGrantable, job_type: str) -> iam.Grant:
    """Let ``grantee`` run ``job_type``'s records in ``table``: :data:`ACTIONS` on keys ``<job type>#*`` only (a
    request for another job type's key is denied), and :data:`KEY_ACTIONS` on the table's key, if it has one."""
    grant = iam.Grant.add_to_principal(
        grantee=grantee,
        actions=list(ACTIONS),
        resource_arns=[table.table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{job_type}{KEY_SEPARATOR}*"]}},
    )
    if table.encryption_key is not None:
        table.encryption_key.grant(grantee, *KEY_ACTIONS)
    return grant


def read_idempotency(read: PropReader) -> Any:
    """The ``idempotency`` prop: ``False`` (off), ``True``, or a table (an ``IdempotencyTable`` or a
    ``dynamodb.ITable``); a wrong type or a table the records do not fit is an error in ``read``."""
    value = read.props.get("idempotency")
    if value is None or isinstance(value, bool):
        return bool(value)
    if not isinstance(value, IdempotencyTable) and not hasattr(value, "table_arn"):
        fix = "True (the stack's table), or an IdempotencyTable(self, 'Ids'), or a dynamodb.ITable with key 'pk'"
        read._wrong("idempotency", value, "a bool or a table", fix)
        return False
    read.errors += _schema_problems(value)
    return value


def table_of(scope: Construct, idempotency: Any, encryption_key: kms.IKey | None) -> dynamodb.ITable | None:
    """The table a job type's records go to: ``None`` (off), the stack's table for ``True`` (one per KMS key: the
    job queue's, so records are encrypted as its messages are), or the one given."""
    if idempotency is False or idempotency is None:
        return None
    if idempotency is not True:
        table: dynamodb.ITable = idempotency.table if isinstance(idempotency, IdempotencyTable) else idempotency
        if encryption_key is not None and table.encryption_key is None:
            Annotations.of(scope).add_warning_v2(
                "jobqueues:idempotency-table-key",
                f"idempotency={table.node.path}: the job queue is encrypted with a KMS key and the table is not "
                "(an AWS-owned key): its records, and the results stored with them, are not under the queue's key. "
                "Pass IdempotencyTable(..., encryption_key=<the queue's key>), or idempotency=True",
            )
        return table
    stack = stack_of(scope)
    table_id = STACK_TABLE_ID if encryption_key is None else f"{STACK_TABLE_ID}{_key_suffix(encryption_key)}"
    existing = stack.node.try_find_child(table_id)
    if isinstance(existing, IdempotencyTable):
        return existing.table
    return IdempotencyTable(stack, table_id, encryption_key=encryption_key).table


#: CloudFormation's attribute types by ``dynamodb.AttributeType`` member name, as the rules name them.
_TYPE_NAMES = {"S": "STRING", "N": "NUMBER", "B": "BINARY"}


def _schema_problems(table: Any) -> list[str]:
    """The rules on a table of this app (a ``Table`` or ``TableV2``: read from its CloudFormation resource, so
    both are checked); an imported table's schema is not known at synth, nor is an ``IdempotencyTable``'s wrong."""
    if isinstance(table, IdempotencyTable):
        return []
    resource = table.node.default_child
    if not isinstance(resource, dynamodb.CfnTable | dynamodb.CfnGlobalTable):
        return []
    stack = stack_of(table)
    types = {a["attributeName"]: a["attributeType"] for a in stack.resolve(resource.attribute_definitions) or []}
    keys = {k["keyType"]: k["attributeName"] for k in stack.resolve(resource.key_schema) or []}

    def key(kind: str) -> tuple[str, str] | None:
        name = keys.get(kind)
        return None if name is None else (name, _TYPE_NAMES.get(types.get(name, ""), str(types.get(name))))

    ttl = stack.resolve(resource.time_to_live_specification) or {}
    ttl_attribute = ttl.get("attributeName") if ttl.get("enabled") else None
    return table_schema_problems(table.node.path, key("HASH"), key("RANGE"), ttl_attribute)


def _key_suffix(key: kms.IKey) -> str:
    # Stable across synths (the key's path), short enough for a logical id.
    return hashlib.sha256(key.node.path.encode()).hexdigest()[:8].upper()
