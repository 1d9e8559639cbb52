"""An S3 client stand-in for the payload store's unit tests: objects in a dict, every call recorded, errors scripted
(no network, no moto)."""

from __future__ import annotations

import io
import threading
from typing import Any

from botocore.exceptions import ClientError


def s3_error(code: str, operation: str) -> ClientError:
    """The ``ClientError`` botocore raises for S3's ``code`` (``NoSuchKey``, ``AccessDenied``)."""
    status = 404 if code == "NoSuchKey" else 403
    response: Any = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, operation)


class FakeS3:
    """``put_object``, ``get_object``, ``delete_object`` and ``delete_objects`` on ``objects`` ((bucket, key) ->
    bytes). ``calls`` holds (operation, bucket, keys) in order; ``refuse[operation]`` names an error code that every
    call of it raises."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self.calls: list[tuple[str, str, list[str]]] = []
        self.refuse: dict[str, str] = {}
        self._lock = threading.Lock()

    def put(self, bucket: str, key: str, payload: str | bytes) -> None:
        self.objects[bucket, key] = payload.encode() if isinstance(payload, str) else payload

    def operations(self) -> list[str]:
        with self._lock:
            return [operation for operation, _, _ in self.calls]

    def _record(self, operation: str, bucket: str, keys: list[str]) -> None:
        with self._lock:
            self.calls.append((operation, bucket, keys))
        if operation in self.refuse:
            raise s3_error(self.refuse[operation], operation)

    def put_object(self, Bucket: str, Key: str, Body: bytes) -> dict[str, Any]:
        self._record("PutObject", Bucket, [Key])
        self.objects[Bucket, Key] = Body
        return {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self._record("GetObject", Bucket, [Key])
        if (Bucket, Key) not in self.objects:
            raise s3_error("NoSuchKey", "GetObject")
        return {"Body": io.BytesIO(self.objects[Bucket, Key])}

    def delete_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self._record("DeleteObject", Bucket, [Key])
        self.objects.pop((Bucket, Key), None)
        return {}

    def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        keys = [entry["Key"] for entry in Delete["Objects"]]
        self._record("DeleteObjects", Bucket, keys)
        for key in keys:
            self.objects.pop((Bucket, key), None)
        return {}
