"""An in-process stand-in for an SQS event source mapping, running a deployed function's code locally.

moto stores Lambda functions and event source mappings but cannot run the code without Docker, and the
emulator keeps SQS mappings inert (nothing polls the queue). :class:`LambdaDriver` does the mapping's job
for one deployed function:

- :func:`load_function` downloads the function's code zip and each layer's content from the emulator's
  S3 (the objects the deploy uploaded, checked against the ``CodeSha256`` the Lambda API reports) into a
  temporary directory laid out like ``/var/task`` and ``/opt``, and reads the function's handler, timeout,
  environment and its mapping (queue, batch size, batching window, ``ReportBatchItemFailures``).
- :class:`LocalRuntime` runs the handler in a fresh interpreter (a subprocess), so the downloaded code is
  what gets imported: the code directory, then the layers' ``python`` directories, on ``sys.path`` as in
  Lambda; the function's environment plus Lambda's reserved variables; its stdout and stderr go to log
  files as they would go to CloudWatch Logs. A context with ``get_remaining_time_in_millis``,
  ``function_name`` and ``aws_request_id`` is passed; an invocation past the timeout is killed.
- :class:`LambdaDriver` receives from the queue like the mapping: up to ``BatchSize`` records, waiting
  up to ``MaximumBatchingWindowInSeconds`` to fill the batch, with the queue's visibility timeout; builds
  the SQS event Lambda sends; invokes; then deletes exactly the records that ``batchItemFailures`` does not
  name. A function error, a timeout, or an invalid ``itemIdentifier`` fails the whole batch (nothing is
  deleted), as in Lambda.

Not emulated: concurrent invocations (one poller, one runtime), scaling of pollers, the 6 MB payload limit.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import logging
import math
import os
import select
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from local_emulator.deployed import DeployedError, DeployedStack, Emulator

logger = logging.getLogger("local_emulator.lambda_driver")

#: System attributes Lambda puts in a record's ``attributes`` (when SQS returns them).
RECORD_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)
#: Seconds a runtime may take to import the function's code (Lambda's init phase allows 10 s).
INIT_TIMEOUT_S = 10


class DriverError(RuntimeError):
    """The deployed function cannot be run locally (code missing, digest mismatch, no mapping, ...)."""


# -- what was deployed ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mapping:
    """The function's SQS event source mapping, as ``ListEventSourceMappings`` reports it."""

    uuid: str
    queue_arn: str
    batch_size: int
    batching_window_s: int
    report_batch_item_failures: bool
    state: str

    @property
    def queue_name(self) -> str:
        return self.queue_arn.rsplit(":", 1)[-1]


@dataclass(frozen=True)
class DeployedFunction:
    """A deployed function, downloaded: what :class:`LocalRuntime` and :class:`LambdaDriver` need."""

    name: str
    arn: str
    handler: str
    runtime: str
    timeout_s: int
    memory_mb: int
    environment: dict[str, str]
    code_dir: Path
    opt_dir: Path
    layer_arns: tuple[str, ...]
    mapping: Mapping

    def python_path(self) -> list[str]:
        """``sys.path`` entries in Lambda's order: the code, then the layers' Python directories."""
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return [
            str(self.code_dir),
            str(self.opt_dir / "python" / "lib" / version / "site-packages"),
            str(self.opt_dir / "python"),
        ]


def function_logical_ids(stack: DeployedStack) -> list[str]:
    """The stack's functions that an SQS event source mapping in the same stack invokes."""
    mapped = set()
    for mapping in stack.resources("AWS::Lambda::EventSourceMapping").values():
        target = mapping.get("Properties", {}).get("FunctionName")
        if isinstance(target, dict) and "Ref" in target:
            mapped.add(target["Ref"])
    return sorted(logical_id for logical_id in stack.resources("AWS::Lambda::Function") if logical_id in mapped)


def load_function(emulator: Emulator, stack: DeployedStack, logical_id: str, workdir: Path) -> DeployedFunction:
    """Read function ``logical_id`` of ``stack`` and download its code and layers under ``workdir``."""
    lambda_client = emulator.client("lambda")
    name = stack.physical_id(logical_id)
    function = lambda_client.get_function(FunctionName=name)
    config = function["Configuration"]
    properties = stack.resource(logical_id).get("Properties", {})

    code_dir = workdir / "task"
    code_dir.mkdir(parents=True, exist_ok=True)
    code = properties.get("Code", {})
    if "ZipFile" in code:  # inline code: Lambda stores it as index.py
        (code_dir / "index.py").write_text(stack.resolve(code["ZipFile"]))
    else:
        payload = _download(emulator, stack.resolve(code.get("S3Bucket")), stack.resolve(code.get("S3Key")))
        _check_digest(payload, config.get("CodeSha256"), f"function {name}'s code")
        _extract(payload, code_dir)

    opt_dir = workdir / "opt"
    opt_dir.mkdir(parents=True, exist_ok=True)
    layer_arns = []
    # Layers merge into /opt in order, a later layer overwriting an earlier one's files.
    for entry in properties.get("Layers", []):
        arn, payload = _layer_content(emulator, stack, entry)
        _extract(payload, opt_dir)
        layer_arns.append(arn)
    kept = [layer["Arn"] for layer in config.get("Layers", [])]
    if kept and kept != layer_arns:  # the emulator kept the function's Layers: they must be these
        raise DriverError(f"function {name} has layers {kept}, its template {layer_arns}")

    return DeployedFunction(
        name=name,
        arn=config["FunctionArn"],
        handler=config["Handler"],
        runtime=config.get("Runtime", ""),
        timeout_s=int(config.get("Timeout", 3)),
        memory_mb=int(config.get("MemorySize", 128)),
        environment=dict(config.get("Environment", {}).get("Variables", {})),
        code_dir=code_dir,
        opt_dir=opt_dir,
        layer_arns=tuple(layer_arns),
        mapping=_sqs_mapping(lambda_client, name),
    )


def _layer_content(emulator: Emulator, stack: DeployedStack, entry: Any) -> tuple[str, bytes]:
    """(layer version ARN, zip) of one entry of a function's ``Layers``: a ``Ref`` to a layer of the stack."""
    if not (isinstance(entry, dict) and entry.get("Ref") in stack.template.get("Resources", {})):
        raise DriverError(f"layer {entry!r} is not a LayerVersion of stack {stack.name}: cannot download it")
    logical_id = entry["Ref"]
    content = stack.resource(logical_id).get("Properties", {}).get("Content", {})
    payload = _download(emulator, stack.resolve(content.get("S3Bucket")), stack.resolve(content.get("S3Key")))
    arn = stack.physical_id(logical_id)
    if arn.startswith("arn:"):
        version = _layer_version(emulator, arn)
        _check_digest(payload, version["Content"].get("CodeSha256"), f"layer {arn}")
    else:  # moto without the emulator's patch gives layers no physical id: find the version by name
        arn = _latest_layer_arn(emulator, payload, logical_id)
    return arn, payload


def _latest_layer_arn(emulator: Emulator, payload: bytes, logical_id: str) -> str:
    """The ARN of the layer version whose content is ``payload`` (by ``CodeSha256``)."""
    lambda_client = emulator.client("lambda")
    digest = base64.b64encode(hashlib.sha256(payload).digest()).decode()
    for layer in lambda_client.list_layers().get("Layers", []):
        for version in lambda_client.list_layer_versions(LayerName=layer["LayerName"]).get("LayerVersions", []):
            full = _layer_version(emulator, version["LayerVersionArn"])
            if full["Content"].get("CodeSha256") == digest:
                return str(version["LayerVersionArn"])
    raise DriverError(f"no layer version in the emulator holds the content of {logical_id}")


def _layer_version(emulator: Emulator, arn: str) -> dict[str, Any]:
    """``GetLayerVersion`` by ARN (moto's ``GetLayerVersionByArn`` answers 500)."""
    *_, name, version = arn.split(":")
    response: dict[str, Any] = emulator.client("lambda").get_layer_version(LayerName=name, VersionNumber=int(version))
    return response


def _sqs_mapping(lambda_client: Any, function_name: str) -> Mapping:
    mappings = lambda_client.list_event_source_mappings(FunctionName=function_name)["EventSourceMappings"]
    sqs = [m for m in mappings if m.get("EventSourceArn", "").startswith("arn:aws:sqs:")]
    if len(sqs) != 1:
        raise DriverError(f"function {function_name} has {len(sqs)} SQS event source mappings; the driver needs one")
    (m,) = sqs
    return Mapping(
        uuid=m["UUID"],
        queue_arn=m["EventSourceArn"],
        batch_size=int(m.get("BatchSize") or 10),
        batching_window_s=int(m.get("MaximumBatchingWindowInSeconds") or 0),
        report_batch_item_failures="ReportBatchItemFailures" in (m.get("FunctionResponseTypes") or []),
        state=str(m.get("State", "")),
    )


def _download(emulator: Emulator, bucket: Any, key: Any) -> bytes:
    if not bucket or not key:
        raise DriverError(f"no code location in the template (S3Bucket {bucket!r}, S3Key {key!r})")
    try:
        body: bytes = emulator.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except Exception as error:
        raise DriverError(f"cannot download s3://{bucket}/{key} from the emulator: {error}") from error
    return body


def _check_digest(payload: bytes, expected: str | None, what: str) -> None:
    """The download must be what the Lambda API says it deployed (base64 SHA-256, as ``CodeSha256``)."""
    actual = base64.b64encode(hashlib.sha256(payload).digest()).decode()
    if expected and actual != expected:
        raise DriverError(f"{what}: downloaded SHA-256 {actual} differs from the deployed {expected}")


def _extract(payload: bytes, target: Path) -> None:
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        archive.extractall(target)


# -- the runtime ---------------------------------------------------------------------------------------
#: The fresh interpreter's main program: import the handler, then answer one JSON request per stdin line
#: on the response descriptor (stdout and stderr belong to the function, as in Lambda).
RUNTIME_PROGRAM = r"""
import importlib, json, os, sys, time, traceback
out = os.fdopen(int(os.environ.pop("_LOCAL_LAMBDA_RESPONSE_FD")), "w")
def send(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()
module_name, _, attribute = os.environ["_HANDLER"].rpartition(".")
try:
    handler = getattr(importlib.import_module(module_name), attribute)
except Exception as error:
    send({"init_error": {"errorType": type(error).__name__, "errorMessage": str(error),
                         "stackTrace": traceback.format_exc().splitlines()}})
    sys.exit(1)
send({"ready": {"handler_file": getattr(sys.modules[module_name], "__file__", None),
                "python": sys.version.split()[0]}})

class Context:
    def __init__(self, request):
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ["AWS_LAMBDA_FUNCTION_VERSION"]
        self.invoked_function_arn = request["invoked_function_arn"]
        self.memory_limit_in_mb = os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]
        self.aws_request_id = request["aws_request_id"]
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self._deadline_ms = request["deadline_epoch_ms"]
    def get_remaining_time_in_millis(self):
        return max(0, int(self._deadline_ms - time.time() * 1000))

for line in sys.stdin:
    request = json.loads(line)
    try:
        send({"result": handler(request["event"], Context(request))})
    except Exception as error:
        send({"errorType": type(error).__name__, "errorMessage": str(error),
              "stackTrace": traceback.format_exc().splitlines()})
"""


@dataclass(frozen=True)
class Invocation:
    """One invocation's outcome: the handler's return value, or its error."""

    request_id: str
    result: Any = None
    error: dict[str, Any] | None = None
    duration_s: float = 0.0
    cold_start: bool = False


class LocalRuntime:
    """One execution environment of the function: a subprocess reused across invocations (warm starts).

    :param stdout: where the function's stdout goes (its EMF lines): a file opened for appending.
    :param stderr: where its stderr goes (logging).
    :param extra_env: variables added to the function's environment (e.g. the demo's ledger path).
    """

    def __init__(
        self,
        function: DeployedFunction,
        emulator: Emulator,
        stdout: IO[Any],
        stderr: IO[Any],
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.function = function
        self.emulator = emulator
        self.stdout = stdout
        self.stderr = stderr
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self._responses: int | None = None
        self._buffer = b""
        self.handler_file: str | None = None
        self.cold_starts = 0
        self._log_streams = itertools.count(1)

    def environment(self) -> dict[str, str]:
        """The function's variables over Lambda's reserved ones, pointed at the emulator."""
        f = self.function
        reserved = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PYTHONPATH": os.pathsep.join(f.python_path()),
            "PYTHONUNBUFFERED": "1",
            "LAMBDA_TASK_ROOT": str(f.code_dir),
            "LAMBDA_RUNTIME_DIR": str(f.opt_dir),
            "_HANDLER": f.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{f.runtime}",
            "AWS_LAMBDA_FUNCTION_NAME": f.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(f.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(f.timeout_s),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{f.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{next(self._log_streams)}",
            **self.emulator.env(),
        }
        # Function variables cannot override reserved ones in Lambda either.
        return {**f.environment, **self.extra_env, **reserved}

    def start(self) -> None:
        """Start the interpreter and import the handler (Lambda's init phase)."""
        read_fd, write_fd = os.pipe()
        env = {**self.environment(), "_LOCAL_LAMBDA_RESPONSE_FD": str(write_fd)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", RUNTIME_PROGRAM],
                cwd=self.function.code_dir,  # Lambda's working directory is the code directory
                env=env,
                stdin=subprocess.PIPE,
                stdout=self.stdout,
                stderr=self.stderr,
                pass_fds=(write_fd,),
            )
        finally:
            os.close(write_fd)
        self._responses, self._buffer = read_fd, b""
        self.cold_starts += 1
        message = self._read(INIT_TIMEOUT_S)
        if message is None or "ready" not in message:
            error = (message or {}).get("init_error", {"errorMessage": "no answer"})
            self.stop()
            raise DriverError(f"function {self.function.name} failed to initialise: {error.get('errorMessage')}")
        self.handler_file = message["ready"]["handler_file"]

    def invoke(self, event: dict[str, Any]) -> Invocation:
        """Run the handler on ``event`` with the function's timeout; kill the environment on a timeout."""
        cold = self.process is None or self.process.poll() is not None
        if cold:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        request_id = str(uuid.uuid4())
        started = time.time()
        request = {
            "event": event,
            "aws_request_id": request_id,
            "invoked_function_arn": self.function.arn,
            "deadline_epoch_ms": (started + self.function.timeout_s) * 1000,
        }
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        answer = self._read(self.function.timeout_s + 1)
        duration = time.time() - started
        if answer is None:
            timed_out = self.process.poll() is None
            self.stop()  # a timed-out or crashed environment is never reused
            reason = f"Task timed out after {self.function.timeout_s} s" if timed_out else "Runtime exited"
            return Invocation(request_id, error={"errorType": "Runtime", "errorMessage": reason}, cold_start=cold)
        if "result" in answer:
            return Invocation(request_id, result=answer["result"], duration_s=duration, cold_start=cold)
        return Invocation(request_id, error=answer, duration_s=duration, cold_start=cold)

    def _read(self, timeout_s: float) -> dict[str, Any] | None:
        """The next response line, or None on timeout or end of file."""
        assert self._responses is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._responses], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._responses, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        """End the environment (closing its stdin ends the request loop; kill if it does not exit)."""
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self._responses is not None:
            os.close(self._responses)
            self._responses = None


# -- the event source mapping --------------------------------------------------------------------------
def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the SQS event Lambda sends, from one ``ReceiveMessage`` message (boto3's shape)."""
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {k: v for k, v in message.get("Attributes", {}).items() if k in RECORD_ATTRIBUTES},
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": base64.b64encode(value["BinaryValue"]).decode() if "BinaryValue" in value else None,
                "stringListValues": list(value.get("StringListValues", [])),
                "binaryListValues": [base64.b64encode(v).decode() for v in value.get("BinaryListValues", [])],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def records_to_delete(records: list[dict[str, Any]], invocation: Invocation, report_failures: bool) -> list[str]:
    """The message ids Lambda deletes after ``invocation``: all of them, none, or those not named as failures.

    A function error fails the batch. With ``ReportBatchItemFailures``, a response without failures (no
    ``batchItemFailures``, null, or empty) succeeds it, and a failure entry whose ``itemIdentifier`` is
    missing, empty or not a record of the batch fails the whole batch (Lambda's rules).
    """
    ids = [r["messageId"] for r in records]
    if invocation.error is not None:
        return []
    result = invocation.result
    failures = result.get("batchItemFailures") if report_failures and isinstance(result, dict) else None
    if not failures:
        return ids
    named = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in ids:
            return []
        named.add(identifier)
    return [i for i in ids if i not in named]


@dataclass
class DriverStats:
    """Counters across the driver's invocations."""

    invocations: int = 0
    records: int = 0
    deleted: int = 0
    reported_failures: int = 0
    function_errors: int = 0
    delete_errors: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class LambdaDriver:
    """Polls the mapping's queue and invokes the function, as the event source mapping would.

    :param idle_wait_s: long-poll wait while no record is gathered (the real poller waits 20 s; shorter
        makes :meth:`stop` prompt).
    :param on_invocation: called after each invocation with its records, outcome and deleted ids.
    """

    def __init__(
        self,
        emulator: Emulator,
        function: DeployedFunction,
        runtime: LocalRuntime,
        idle_wait_s: int = 2,
        on_invocation: Callable[[list[dict[str, Any]], Invocation, list[str]], None] | None = None,
    ) -> None:
        self.function = function
        self.mapping = function.mapping
        self.runtime = runtime
        self.idle_wait_s = idle_wait_s
        self.on_invocation = on_invocation
        self.sqs = emulator.client("sqs")
        _, _, _, self.region, account, name = self.mapping.queue_arn.split(":", 5)
        self.queue_url = self.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        self.stats = DriverStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    # -- one round -------------------------------------------------------------------------------------
    def gather(self) -> list[dict[str, Any]]:
        """Receive one batch: up to ``batch_size`` messages, waiting up to the batching window to fill it."""
        messages: list[dict[str, Any]] = []
        window_ends: float | None = None
        while len(messages) < self.mapping.batch_size:
            if window_ends is None:
                if self._stop.is_set():
                    break
                wait = self.idle_wait_s
            else:
                remaining = window_ends - time.monotonic()
                if remaining <= 0:
                    break
                wait = min(20, math.floor(remaining))
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(10, self.mapping.batch_size - len(messages)),
                WaitTimeSeconds=wait,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received = response.get("Messages", [])
            if received and window_ends is None:
                window_ends = time.monotonic() + self.mapping.batching_window_s
            messages += received
            if not received and wait == 0:
                time.sleep(0.05)  # less than a second of window left: short polls, not a busy loop
        return messages

    def invoke(self, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Invocation, list[str]]:
        """Invoke the function on ``messages`` and delete what Lambda would delete."""
        records = [lambda_record(m, self.mapping.queue_arn, self.region) for m in messages]
        invocation = self.runtime.invoke({"Records": records})
        deleted = records_to_delete(records, invocation, self.mapping.report_batch_item_failures)
        self._delete([m for m in messages if m["MessageId"] in set(deleted)])
        self.stats.invocations += 1
        self.stats.records += len(records)
        self.stats.batch_sizes.append(len(records))
        self.stats.deleted += len(deleted)
        if invocation.error is not None:
            self.stats.function_errors += 1
        elif isinstance(invocation.result, dict):
            self.stats.reported_failures += len(invocation.result.get("batchItemFailures") or [])
        if self.on_invocation is not None:
            self.on_invocation(records, invocation, deleted)
        return records, invocation, deleted

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
            failed = self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries).get("Failed", [])
            for entry in failed:
                self.stats.delete_errors += 1
                logger.error("DeleteMessageBatch entry failed: %s", entry)

    def poll_once(self) -> Invocation | None:
        """Gather one batch and invoke on it; None if nothing arrived."""
        messages = self.gather()
        return self.invoke(messages)[1] if messages else None

    # -- background ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Poll in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name=f"esm-{self.function.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.poll_once()
        except BaseException as error:  # kept for stop() to raise in the caller's thread
            self.failure = error
            logger.exception("the event source stand-in for %s failed", self.function.name)

    def stop(self) -> None:
        """Stop polling (a gathered batch is still invoked), end the runtime; raise what the poller raised."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.runtime.stop()
        if self.failure is not None:
            raise DriverError(f"the event source stand-in for {self.function.name} failed") from self.failure

    def __enter__(self) -> LambdaDriver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "DeployedError",
    "DeployedFunction",
    "DriverError",
    "Invocation",
    "LambdaDriver",
    "LocalRuntime",
    "Mapping",
    "function_logical_ids",
    "lambda_record",
    "load_function",
    "records_to_delete",
]
