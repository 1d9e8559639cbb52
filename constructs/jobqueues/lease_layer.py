"""The ``sqslease`` Lambda layer: one ``LayerVersion`` per stack, shared by every Lambda job in it.

Built without Docker through CDK local bundling: the installed ``sqslease`` package (``lambda_src/sqslease`` in
this repository, ``site-packages/sqslease`` for an app that installed the wheel) is copied into ``python/``,
where the Lambda runtime puts layers on ``sys.path``. ``sqslease`` is pure Python and needs nothing beyond
boto3, which the runtime ships, so there is nothing to resolve. ``__pycache__`` is excluded, so the asset
hash only changes when the source does.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

import sqslease
from jobqueues.registry import registry_of

#: The Python runtime of Lambda jobs: the latest that aws-cdk-lib and cdk-nag's AwsSolutions-L1 both accept.
_RUNTIME_ATTRIBUTE = "PYTHON_3_14"
LAMBDA_RUNTIME: lambda_.Runtime = getattr(lambda_.Runtime, _RUNTIME_ATTRIBUTE)
#: The runtimes the layer serves (its ``compatible_runtimes``), and how to name the one to use, as code.
LAYER_RUNTIMES = (LAMBDA_RUNTIME,)
RUNTIME_FIX = f"runtime=lambda_.Runtime.{_RUNTIME_ATTRIBUTE}"
LAYER_ID = "SqsleaseLayer"
_EXCLUDE = ["__pycache__", "*.pyc", "*.pyo"]


def sqslease_source() -> Path:
    """The directory of the installed ``sqslease`` package."""
    return Path(sqslease.__file__).resolve().parent


@jsii.implements(ILocalBundling)
class _CopyPackage:
    """Local bundling: ``<output>/python/sqslease`` is the package, without byte code."""

    def __init__(self, source: Path) -> None:
        self._source = source

    def try_bundle(self, output_dir: str, *, image: Any = None, **_: Any) -> bool:
        shutil.copytree(
            self._source, Path(output_dir) / "python" / "sqslease", ignore=shutil.ignore_patterns(*_EXCLUDE)
        )
        return True


def sqslease_layer(scope: Construct) -> lambda_.LayerVersion:
    """The stack's ``sqslease`` layer, created on first use (and kept on the stack's registry: a tree lookup is
    two round trips to the kernel)."""
    registry = registry_of(scope)
    layer: lambda_.LayerVersion | None = registry.cache.get(LAYER_ID)
    if layer is None:
        layer = registry.cache[LAYER_ID] = _find_or_create(registry.stack)
    return layer


def _find_or_create(stack: Stack) -> lambda_.LayerVersion:
    """The layer of ``stack``'s tree (one made before the registry kept it), or a new one."""
    existing = stack.node.try_find_child(LAYER_ID)
    if existing is not None:
        return existing  # type: ignore[return-value]
    source = sqslease_source()
    layer = lambda_.LayerVersion(
        stack,
        LAYER_ID,
        code=lambda_.Code.from_asset(
            str(source),
            exclude=_EXCLUDE,
            bundling=BundlingOptions(
                # Used only where local bundling is impossible; local bundling needs no Docker.
                image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                command=[
                    "bash",
                    "-c",
                    "mkdir -p /asset-output/python && cp -r /asset-input /asset-output/python/sqslease",
                ],
                local=_CopyPackage(source),
            ),
        ),
        compatible_runtimes=list(LAYER_RUNTIMES),
        # Pure Python: one layer serves the stack's x86_64 and arm64 functions alike.
        compatible_architectures=[lambda_.Architecture.X86_64, lambda_.Architecture.ARM_64],
        description=f"sqslease {sqslease.__version__}: SQS lease extension for jobqueues consumers",
        removal_policy=RemovalPolicy.RETAIN,  # functions being updated may still use the old version
    )
    return layer
