"""The deployed function, downloaded from the emulator: its code, layers, configuration and SQS mapping."""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.server import Emulator


class DriverError(RuntimeError):
    """The deployed function cannot be run locally (code missing, digest mismatch, no mapping, ...)."""


@dataclass(frozen=True)
class Mapping:
    """The function's SQS event source mapping, as ``ListEventSourceMappings`` reports it."""

    uuid: str
    queue_arn: str
    batch_size: int
    batching_window_s: int
    report_batch_item_failures: bool
    state: str
    #: ``FilterCriteria``'s patterns, as JSON strings (:mod:`.filters` applies them).
    filter_patterns: tuple[str, ...] = ()

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
        filter_patterns=tuple(f.get("Pattern", "") for f in (m.get("FilterCriteria") or {}).get("Filters") or []),
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
