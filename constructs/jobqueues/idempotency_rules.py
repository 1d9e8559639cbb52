"""The rules of ``idempotency``: a table the records fit.

Pure Python (no aws_cdk), like every rule. The record schema is ``sqslease.idempotency``'s: partition key ``pk``
(string) = ``"<job type>#<key>"``, no sort key. A job type cannot contain the ``#`` that ends its prefix: job type
names are letters, digits, ``-`` and ``_`` (:mod:`jobqueues.queue_rules`), so a consumer confined to
``<job type>#*`` never reaches another job type's keys. Each rule names the prop, the value and the fix.
"""

from __future__ import annotations

from sqslease.idempotency import KEY_ATTRIBUTE, TTL_ATTRIBUTE


def table_schema_problems(
    table: str,
    partition_key: tuple[str, str] | None,
    sort_key: tuple[str, str] | None,
    ttl_attribute: str | None = TTL_ATTRIBUTE,
) -> list[str]:
    """What keeps table ``table`` (its node path) from holding the records: ``partition_key`` and ``sort_key``
    are ``(name, type)`` with the type ``dynamodb.AttributeType``'s member name (``STRING``); ``None``: no sort
    key. ``ttl_attribute``: the attribute its TTL deletes by (``None``: TTL off); only ``ttl`` ever deletes a
    record, so any other leaves every record in the table for good. Default: ``ttl``."""
    fix = (
        f"pass idempotency=True (the stack's own table), or an IdempotencyTable, or a table with partition key "
        f"{KEY_ATTRIBUTE!r} of type STRING and no sort key"
    )
    problems = []
    if partition_key is not None and partition_key != (KEY_ATTRIBUTE, "STRING"):
        name, kind = partition_key
        ours = f"{KEY_ATTRIBUTE!r} (STRING)"
        problems.append(f"idempotency={table}: its partition key is {name!r} ({kind}), the records' is {ours}: {fix}")
    if ttl_attribute != TTL_ATTRIBUTE:
        found = "TTL off" if ttl_attribute is None else f"TTL on {ttl_attribute!r}"
        problems.append(
            f"idempotency={table}: it has {found}, and the records expire by {TTL_ATTRIBUTE!r}: every record would "
            f"stay for good; give it time_to_live_attribute={TTL_ATTRIBUTE!r}, or {fix}"
        )
    if sort_key is not None:
        problems.append(
            f"idempotency={table}: it has a sort key {sort_key[0]!r}, which the records have no value for: {fix}"
        )
    return problems
