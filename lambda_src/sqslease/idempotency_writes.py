"""The conditional writes of idempotency records, as DynamoDB request bodies: pure functions of a record's key, its
holder's token and its expiry (:mod:`sqslease.idempotency_store` sends them; the schema is in
:mod:`sqslease.idempotency`).
"""

from __future__ import annotations

from typing import Any

from sqslease.idempotency import KEY_ATTRIBUTE, TTL_ATTRIBUTE, Hold, RecordStatus, epoch_text, ttl_of

#: Expression attribute names: ``status``, ``owner`` and ``ttl`` are DynamoDB reserved words.
NAMES = {"#k": KEY_ATTRIBUTE, "#s": "status", "#o": "owner", "#e": "expires_at", "#t": TTL_ATTRIBUTE, "#r": "result"}
#: A record may be (re)written when it is absent or void: a lapsed IN_PROGRESS or an expired COMPLETED.
BEGIN_CONDITION = "attribute_not_exists(#k) OR #e <= :now"
EXTEND_CONDITION = "#o = :o AND #s = :p AND #e > :now"
OWNER_CONDITION = "#o = :o AND #s = :p"


def names(*keys: str) -> dict[str, str]:
    """The ``ExpressionAttributeNames`` of ``keys`` (``"#s"``...)."""
    return {key: NAMES[key] for key in keys}


def begin_request(table: str, pk: str, token: str, expires_at: float, now: float) -> dict[str, Any]:
    """The PutItem of ``begin``: an IN_PROGRESS record held by ``token`` until ``expires_at`` (epoch seconds), if the
    key has no record or a void one at ``now``."""
    return {
        "TableName": table,
        "Item": record_item(pk, RecordStatus.IN_PROGRESS, token, expires_at),
        "ConditionExpression": BEGIN_CONDITION,
        "ExpressionAttributeNames": names("#k", "#e"),
        "ExpressionAttributeValues": {":now": {"N": epoch_text(now)}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def complete_request(table: str, hold: Hold, text: str | None, expires_at: float) -> dict[str, Any]:
    """The UpdateItem of ``complete``: the held record COMPLETED until ``expires_at`` (epoch seconds), with the
    result ``text`` (JSON) unless ``None``, if it is still ``hold``'s and IN_PROGRESS."""
    values = {
        ":o": {"S": hold.token},
        ":p": {"S": RecordStatus.IN_PROGRESS.value},
        ":c": {"S": RecordStatus.COMPLETED.value},
        ":e": {"N": epoch_text(expires_at)},
        ":t": {"N": str(ttl_of(expires_at, RecordStatus.COMPLETED))},
    }
    update = "SET #s = :c, #e = :e, #t = :t"
    if text is not None:
        update += ", #r = :r"
        values[":r"] = {"S": text}
    return {
        "TableName": table,
        "Key": {KEY_ATTRIBUTE: {"S": hold.pk}},
        "UpdateExpression": update,
        "ConditionExpression": OWNER_CONDITION,
        "ExpressionAttributeNames": names("#s", "#o", "#e", "#t", *(["#r"] if text is not None else [])),
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def fail_request(table: str, hold: Hold) -> dict[str, Any]:
    """The DeleteItem of ``fail``: the held record deleted, if it is still ``hold``'s and IN_PROGRESS."""
    return {
        "TableName": table,
        "Key": {KEY_ATTRIBUTE: {"S": hold.pk}},
        "ConditionExpression": OWNER_CONDITION,
        "ExpressionAttributeNames": names("#s", "#o"),
        "ExpressionAttributeValues": {":o": {"S": hold.token}, ":p": {"S": RecordStatus.IN_PROGRESS.value}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def extend_update(table: str, hold: Hold, expiry: float, void_by: float) -> dict[str, Any]:
    """One action of ``extend``'s TransactWriteItems: the held record's expiry moved to ``expiry`` (epoch seconds), if
    it is still ``hold``'s, IN_PROGRESS and not void at ``void_by``."""
    return {
        "Update": {
            "TableName": table,
            "Key": {KEY_ATTRIBUTE: {"S": hold.pk}},
            "UpdateExpression": "SET #e = :e, #t = :t",
            "ConditionExpression": EXTEND_CONDITION,
            "ExpressionAttributeNames": names("#o", "#s", "#e", "#t"),
            "ExpressionAttributeValues": {
                ":e": {"N": epoch_text(expiry)},
                ":t": {"N": str(ttl_of(expiry, RecordStatus.IN_PROGRESS))},
                ":o": {"S": hold.token},
                ":p": {"S": RecordStatus.IN_PROGRESS.value},
                ":now": {"N": epoch_text(void_by)},
            },
        }
    }


def record_item(pk: str, status: RecordStatus, token: str, expires_at: float) -> dict[str, Any]:
    """A record as DynamoDB stores it, without a result."""
    return {
        KEY_ATTRIBUTE: {"S": pk},
        "status": {"S": status.value},
        "owner": {"S": token},
        "expires_at": {"N": epoch_text(expires_at)},
        TTL_ATTRIBUTE: {"N": str(ttl_of(expires_at, status))},
    }


def attribute_text(found: dict[str, Any], name: str) -> str | None:
    """The string attribute ``name`` of an item DynamoDB returned, or ``None``."""
    value = found.get(name, {}).get("S")
    return None if value is None else str(value)
