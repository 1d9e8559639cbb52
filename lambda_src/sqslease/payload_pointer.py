"""Payloads larger than a queue takes, kept in S3 (a claim check), in the AWS SQS Extended Client's wire format.

A producer puts the payload in a bucket and sends a pointer in its place: the body
``["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": BUCKET, "s3Key": KEY}]`` and the message
attribute ``ExtendedPayloadSize`` (``Number``: the payload's size in bytes, UTF-8). That is what the official clients
write (the Java ``amazon-sqs-java-extended-client-lib`` and the Python ``amazon-sqs-extended-client``), so producers
and consumers built on either interoperate with sqslease. Their legacy names (the attribute ``SQSLargePayloadSize``
and the pointer class ``com.amazon.sqs.javamessaging.MessageS3Pointer``) are read too.

A consumer (:class:`sqslease.processor.MessageProcessor`) reads the payload before the handler runs, so the handler
sees the real body; the pointer stays on :attr:`sqslease.message.Message.pointer` (a DLQ copy carries the pointer,
never the payload). Once SQS confirmed the message's delete, the object is deleted (:meth:`PayloadStore.deletion`),
unless ``delete`` is off: deleting it first could leave a redelivered message pointing at nothing. Only the
attribute marks a pointer: an ordinary message costs one dict lookup, no call.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from sqslease.settle_future import SettleFuture

logger = logging.getLogger("sqslease")

#: The message attribute that marks a pointer: the payload's size in bytes (``Number``).
SIZE_ATTRIBUTE = "ExtendedPayloadSize"
#: The same attribute as the extended clients' first versions named it (read, never written).
LEGACY_SIZE_ATTRIBUTE = "SQSLargePayloadSize"
#: The first element of a pointer body.
POINTER_CLASS = "software.amazon.payloadoffloading.PayloadS3Pointer"
LEGACY_POINTER_CLASS = "com.amazon.sqs.javamessaging.MessageS3Pointer"
#: Keys deleted by one ``DeleteObjects`` request, at most (S3's limit).
DELETE_BATCH = 1000


class PayloadPointerError(ValueError):
    """A message marked as a pointer whose body or payload is not what the wire format says."""


class PayloadPointer(NamedTuple):
    """Where a message's payload is: its bucket and key, its size in bytes (the attribute's), and the pointer body
    as SQS holds it (what a DLQ copy sends)."""

    bucket: str
    key: str
    size: int
    body: str

    @property
    def url(self) -> str:
        """``s3://bucket/key``."""
        return f"s3://{self.bucket}/{self.key}"


def is_pointer(message_attributes: Mapping[str, Any]) -> bool:
    """Whether a message with these attributes (boto3's shape) is a pointer."""
    return SIZE_ATTRIBUTE in message_attributes or LEGACY_SIZE_ATTRIBUTE in message_attributes


def parse_pointer(body: str, message_attributes: Mapping[str, Any]) -> PayloadPointer:
    """The pointer of a message marked as one (:func:`is_pointer`); :class:`PayloadPointerError` naming what is wrong
    with its body or its size attribute."""
    attribute = message_attributes.get(SIZE_ATTRIBUTE) or message_attributes.get(LEGACY_SIZE_ATTRIBUTE) or {}
    size_text = attribute.get("StringValue") if isinstance(attribute, Mapping) else None
    if not isinstance(size_text, str) or not size_text.isdigit():
        raise PayloadPointerError(f"{SIZE_ATTRIBUTE} is {size_text!r}, not a size in bytes")
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if not (
        isinstance(parsed, list)
        and len(parsed) == 2
        and parsed[0] in (POINTER_CLASS, LEGACY_POINTER_CLASS)
        and isinstance(parsed[1], dict)
        and isinstance(parsed[1].get("s3BucketName"), str)
        and isinstance(parsed[1].get("s3Key"), str)
        and parsed[1]["s3BucketName"]
        and parsed[1]["s3Key"]
    ):
        raise PayloadPointerError(
            f"the body of a message with {SIZE_ATTRIBUTE} is not a payload pointer "
            f'(["{POINTER_CLASS}", {{"s3BucketName": ..., "s3Key": ...}}]): {body[:200]!r}'
        )
    return PayloadPointer(parsed[1]["s3BucketName"], parsed[1]["s3Key"], int(size_text), body)


def pointer_of(body: str, message_attributes: Mapping[str, Any]) -> PayloadPointer | None:
    """The pointer of a message (:func:`parse_pointer`), ``None`` for an ordinary one."""
    return parse_pointer(body, message_attributes) if is_pointer(message_attributes) else None


def pointer_body(bucket: str, key: str) -> str:
    """The body that points at ``s3://bucket/key``, exactly as the official clients write it."""
    return json.dumps([POINTER_CLASS, {"s3BucketName": bucket, "s3Key": key}])


def size_attribute(size: int) -> dict[str, dict[str, str]]:
    """The message attribute of a pointer to a payload of ``size`` bytes."""
    return {SIZE_ATTRIBUTE: {"DataType": "Number", "StringValue": str(size)}}


def message_size(body: str, message_attributes: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Bytes a message counts against a queue's ``MaximumMessageSize``: its body and its attributes' names, types and
    values (UTF-8), as the extended clients count them to decide to offload."""
    size = len(body.encode())
    for name, value in (message_attributes or {}).items():
        size += len(name.encode())
        for part in ("DataType", "StringValue"):
            if isinstance(value.get(part), str):
                size += len(value[part].encode())
        if isinstance(value.get("BinaryValue"), bytes):
            size += len(value["BinaryValue"])
    return size


def offload(s3: Any, bucket: str, payload: str, key: str | None = None) -> tuple[str, dict[str, dict[str, str]]]:
    """Put ``payload`` in ``bucket`` (under ``key``, default a new UUID, as the official clients name them) and
    return the pointer body and attributes to send in its place."""
    data = payload.encode()
    key = key or str(uuid.uuid4())
    s3.put_object(Bucket=bucket, Key=key, Body=data)
    return pointer_body(bucket, key), size_attribute(len(data))


class PointerMessage(Protocol):
    """What :meth:`PayloadStore.read_into` needs of a message (:class:`sqslease.message.Message` has it)."""

    message_id: str
    body: str
    message_attributes: dict[str, Any]
    pointer: PayloadPointer | None

    @property
    def receive_count(self) -> int: ...


class PayloadDeletion(SettleFuture):
    """A message's delete that, once SQS confirmed it, has its payload's object deleted too (:class:`PayloadStore`).
    Unconfirmed, the object is kept: the message may be delivered again, and its bucket's lifecycle expires it."""

    __slots__ = ("pointer", "store")

    def __init__(self, store: PayloadStore, pointer: PayloadPointer) -> None:
        super().__init__()
        self.store = store
        self.pointer = pointer

    def set_result(self, result: bool) -> None:
        super().set_result(result)
        if result:
            self.store.delete_later(self.pointer)
        else:
            logger.warning(
                "the delete of a message pointing at s3://%s/%s was not confirmed: its object is kept",
                self.pointer.bucket,
                self.pointer.key,
            )


class PayloadStore:
    """Reads payloads and deletes them once their messages are deleted, on one S3 client made at first use.

    :param client: makes the S3 client (called once, on the first pointer). Default: boto3's, in the region
        ``AWS_REGION`` names (Lambda and ECS set it), at the endpoint ``AWS_ENDPOINT_URL`` names, if any.
    :param delete: delete an object after its message's delete is confirmed. Default True.
    """

    def __init__(self, client: Callable[[], Any] | None = None, *, delete: bool = True) -> None:
        self._make_client = client or default_s3_client
        self._client: Any = None
        self.delete = delete
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[PayloadPointer] = queue.SimpleQueue()
        #: The objects queued or being deleted (0 for every invocation without a pointer).
        self.pending = 0
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    @property
    def s3(self) -> Any:
        """The S3 client, made on first use."""
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def read(self, pointer: PayloadPointer) -> str:
        """The payload ``pointer`` names, as text; :class:`PayloadPointerError` when its size is not the pointer's or
        it is not UTF-8; the client's error when S3 refuses (no such key, access denied)."""
        data = self.s3.get_object(Bucket=pointer.bucket, Key=pointer.key)["Body"].read()
        if len(data) != pointer.size:
            raise PayloadPointerError(
                f"s3://{pointer.bucket}/{pointer.key} holds {len(data)} bytes; the message's {SIZE_ATTRIBUTE} says "
                f"{pointer.size}"
            )
        try:
            return str(data.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise PayloadPointerError(f"s3://{pointer.bucket}/{pointer.key} is not UTF-8 text: {error}") from None

    def resolve(self, body: str, message_attributes: Mapping[str, Any]) -> tuple[PayloadPointer, str]:
        """The pointer of a message marked as one (:func:`parse_pointer`) and the payload it names (:meth:`read`)."""
        pointer = parse_pointer(body, message_attributes)
        return pointer, self.read(pointer)

    def read_into(self, message: PointerMessage) -> Exception | None:
        """Put the payload a pointer message names in its ``body`` and the pointer in its ``pointer``; else leave it
        as it is and return why, logged: a body not in the wire format, an object S3 does not give (missing, access
        denied), one whose size is not the pointer's, or not UTF-8."""
        try:
            message.pointer, message.body = self.resolve(message.body, message.message_attributes)
        except Exception as error:  # the caller settles the message by its failure policy: it is not lost
            logger.error(
                "message %s (receive %d): its payload could not be read: %r",
                message.message_id,
                message.receive_count,
                error,
            )
            return error
        return None

    def deletion(self, pointer: PayloadPointer) -> PayloadDeletion:
        """The future to give a message's delete (:meth:`sqslease.settle.Settler.delete`): confirmed, it queues the
        object's deletion. The Lambda adapter deletes such a record itself, since only a confirmed delete may take
        the object (Lambda's own delete of it after the invocation does nothing more)."""
        return PayloadDeletion(self, pointer)

    def delete_later(self, pointer: PayloadPointer) -> None:
        """Queue the deletion of ``pointer``'s object, on the store's thread (started on the first one)."""
        with self._lock:
            self.pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="sqslease-payloads", daemon=True)
                self._thread.start()
        self._queue.put(pointer)

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the queued deletions; False if some are still pending (logged)."""
        if not self.pending:  # none queued (every invocation without a pointer): no lock, no condition
            return True
        with self._idle:
            done = self._idle.wait_for(lambda: self.pending == 0, timeout)
            if not done:
                logger.warning(
                    "%d payload objects not deleted yet: their bucket's lifecycle expires them", self.pending
                )
            return done

    def _loop(self) -> None:
        """The store's thread (a daemon: a process exits without it, after :meth:`flush`)."""
        while True:
            batch = [self._queue.get()]
            while len(batch) < DELETE_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._delete(batch)
            finally:
                with self._idle:
                    self.pending -= len(batch)
                    self._idle.notify_all()

    def _delete(self, pointers: list[PayloadPointer]) -> None:
        """Delete the objects, one request per bucket; a failure is logged (the lifecycle expires what is left)."""
        buckets: dict[str, list[str]] = {}
        for pointer in pointers:
            buckets.setdefault(pointer.bucket, []).append(pointer.key)
        for bucket, keys in buckets.items():
            try:
                if len(keys) == 1:
                    self.s3.delete_object(Bucket=bucket, Key=keys[0])
                    continue
                objects = [{"Key": key} for key in keys]
                errors = self.s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
                for error in errors.get("Errors", []):
                    logger.error("could not delete s3://%s/%s: %s", bucket, error.get("Key"), error.get("Message"))
            except Exception as error:  # the message is done; only its object is left behind
                logger.error("could not delete %d payload objects of s3://%s: %r", len(keys), bucket, error)


def default_s3_client() -> Any:
    """boto3's S3 client in the consumer's region, with standard retries (``AWS_ENDPOINT_URL`` is botocore's own)."""
    import os

    import boto3
    from botocore.config import Config

    session = boto3.session.Session()
    region = session.region_name or os.environ.get("AWS_REGION")
    return session.client("s3", region_name=region, config=Config(retries={"mode": "standard"}))
