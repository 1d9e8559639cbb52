"""An in-memory DynamoDB client for deterministic unit tests of ``sqslease.idempotency_store`` (no network).

It evaluates the expressions the store sends (``attribute_not_exists``, ``=``, ``>``, ``<=`` joined by ``AND`` or
``OR``; ``SET a = :a, ...``), answers conditional failures as DynamoDB does (``ALL_OLD`` items, a transaction's
``CancellationReasons`` for every item) and records every call with its time on ``clock``. The moto_server
tests check the same requests against a real implementation of the expressions.

``script(operation, *actions)`` queues what the next calls of ``operation`` do: ``"ok"``; an error kind of
:data:`ERRORS` (raised as botocore raises it, nothing applied); ``"timeout"`` (a connect timeout: never sent);
``"landed_timeout"`` (applied, then a read timeout: the answer is lost); a list of per-item cancellation codes
for TransactWriteItems (``"None"`` items not applied, e.g. ``["None", "ThrottlingError"]``); or a callable run
before answering (e.g. one that moves the clock).
"""

from __future__ import annotations

import collections
import copy
import threading
import time
from collections.abc import Callable
from typing import Any

#: kind -> (HTTP status, code, message).
ERRORS = {
    "throttle": (400, "ProvisionedThroughputExceededException", "The level of configured provisioned throughput..."),
    "throttling": (400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."),
    "error500": (500, "InternalServerError", "Internal server error"),
    "access_denied": (400, "AccessDeniedException", "User is not authorized to perform: dynamodb:PutItem"),
    "no_table": (400, "ResourceNotFoundException", "Requested resource not found"),
}


def dynamodb_error(kind_or_code: str, operation: str, **extra: Any) -> Exception:
    """The botocore ``ClientError`` of an :data:`ERRORS` kind, or of any code (status 400)."""
    from botocore.exceptions import ClientError

    status, code, message = ERRORS.get(kind_or_code, (400, kind_or_code, kind_or_code))
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}, **extra},
        operation,
    )


class FakeDynamoDB:
    """One table, keyed by ``pk``. See the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.items: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[float, str, dict[str, Any]]] = []
        self._script: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def script(self, operation: str, *actions: Any) -> FakeDynamoDB:
        self._script[operation].extend(actions)
        return self

    def of(self, operation: str) -> list[dict[str, Any]]:
        return [request for _, op, request in self.calls if op == operation]

    def count(self) -> collections.Counter[str]:
        return collections.Counter(op for _, op, _ in self.calls)

    # -- the client's methods -----------------------------------------------------------------------------------
    def put_item(self, **request: Any) -> dict[str, Any]:
        return self._call("PutItem", request, self._put)

    def update_item(self, **request: Any) -> dict[str, Any]:
        return self._call("UpdateItem", request, self._update)

    def delete_item(self, **request: Any) -> dict[str, Any]:
        return self._call("DeleteItem", request, self._delete)

    def get_item(self, **request: Any) -> dict[str, Any]:
        def get(r: dict[str, Any]) -> dict[str, Any]:
            item = self.items.get(r["Key"]["pk"]["S"])
            return {"Item": copy.deepcopy(item)} if item is not None else {}

        return self._call("GetItem", request, get)

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        return self._call("TransactWriteItems", request, self._transact)

    # -- semantics ------------------------------------------------------------------------------------------------
    def _put(self, r: dict[str, Any]) -> dict[str, Any]:
        pk = r["Item"]["pk"]["S"]
        self._check("PutItem", r, pk)
        self.items[pk] = copy.deepcopy(r["Item"])
        return {}

    def _update(self, r: dict[str, Any]) -> dict[str, Any]:
        pk = r["Key"]["pk"]["S"]
        self._check("UpdateItem", r, pk)
        item = self.items.setdefault(pk, {"pk": {"S": pk}})
        names, values = r.get("ExpressionAttributeNames", {}), r.get("ExpressionAttributeValues", {})
        assignments = r["UpdateExpression"].removeprefix("SET ").split(", ")
        for assignment in assignments:
            name, value = assignment.split(" = ")
            item[names.get(name, name)] = copy.deepcopy(values[value])
        return {}

    def _delete(self, r: dict[str, Any]) -> dict[str, Any]:
        pk = r["Key"]["pk"]["S"]
        self._check("DeleteItem", r, pk)
        self.items.pop(pk, None)
        return {}

    def _transact(self, r: dict[str, Any], reasons: list[str] | None = None) -> dict[str, Any]:
        updates = [entry["Update"] for entry in r["TransactItems"]]
        codes = list(reasons) if reasons else ["None"] * len(updates)
        for i, update in enumerate(updates):
            if codes[i] == "None" and not self._holds(update, update["Key"]["pk"]["S"]):
                codes[i] = "ConditionalCheckFailed"
        if any(code != "None" for code in codes):
            raise dynamodb_error(
                "TransactionCanceledException",
                "TransactWriteItems",
                CancellationReasons=[{"Code": code} for code in codes],
            )
        for update in updates:
            self._update({k: v for k, v in update.items() if k != "ConditionExpression"})
        return {}

    def _check(self, operation: str, r: dict[str, Any], pk: str) -> None:
        if "ConditionExpression" in r and not self._holds(r, pk):
            old = self.items.get(pk)
            extra = (
                {"Item": copy.deepcopy(old)}
                if old and r.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                else {}
            )
            raise dynamodb_error("ConditionalCheckFailedException", operation, **extra)

    def _holds(self, r: dict[str, Any], pk: str) -> bool:
        item = self.items.get(pk)
        names, values = r.get("ExpressionAttributeNames", {}), r.get("ExpressionAttributeValues", {})

        def term(text: str) -> bool:
            if text.startswith("attribute_not_exists("):
                return item is None or names[text[21:-1]] not in item
            left, op, right = text.split(" ")
            have = (item or {}).get(names[left])
            if have is None:
                return False
            a, b = (float(have["N"]), float(values[right]["N"])) if "N" in have else (have["S"], values[right]["S"])
            return {"=": a == b, ">": a > b, "<=": a <= b}[op]

        return any(all(term(t) for t in part.split(" AND ")) for part in r["ConditionExpression"].split(" OR "))

    def _call(self, operation: str, request: dict[str, Any], apply: Callable[..., dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self.calls.append((self.clock(), operation, copy.deepcopy(request)))
            action = self._script[operation].popleft() if self._script[operation] else "ok"
            if callable(action):
                action()
                action = "ok"
            if action == "timeout":
                from botocore.exceptions import ConnectTimeoutError

                raise ConnectTimeoutError(endpoint_url="http://fake-dynamodb")
            if isinstance(action, list):
                return apply(request, action)
            if action not in ("ok", "landed_timeout"):
                raise dynamodb_error(action, operation)
            answer = apply(request)
            if action == "landed_timeout":
                from botocore.exceptions import ReadTimeoutError

                raise ReadTimeoutError(endpoint_url="http://fake-dynamodb")
            return answer
