"""The post-deploy check of Lambda functions, layer versions and event source mappings."""

from __future__ import annotations

from typing import Any

from jobqueues.emulator.checks.comparison import UNRESOLVED, Checker, Clients, Comparison, physical_id_of, resolve

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::Lambda::Function": (
        "LoggingConfig (the explicit log group), DeadLetterConfig, EphemeralStorage, SnapStart are dropped "
        "by moto, which never runs the code (`jobqueues local up` runs it through a local event-source driver, "
        "on the host's architecture, outside any VPC, without X-Ray or a concurrency limit); VpcConfig's "
        "security groups are compared by id, its VpcId is moto's placeholder"
    ),
    "AWS::Lambda::EventSourceMapping": (
        "a record only in moto: `jobqueues local up`'s local driver polls the queue and applies FilterCriteria; "
        "MetricsConfig produces no metric, ProvisionedPollerConfig and ScalingConfig scale nothing (one poller)"
    ),
}


def _lambda_function(server: Clients, physical_id: str, c: Comparison) -> None:
    response = server.client("lambda").get_function(FunctionName=physical_id)
    f = response["Configuration"]
    c.expect("Runtime", f.get("Runtime"))
    c.expect("Handler", f.get("Handler"))
    c.expect("Timeout", f.get("Timeout"), default=3)
    c.expect("MemorySize", f.get("MemorySize"), default=128)
    c.expect("Environment", {"Variables": f.get("Environment", {}).get("Variables", {})})
    c.expect("Layers", [layer["Arn"] for layer in f.get("Layers", [])], default=[])
    c.expect("Architectures", f.get("Architectures"))
    c.expect("ReservedConcurrentExecutions", response.get("Concurrency", {}).get("ReservedConcurrentExecutions"))
    c.expect("TracingConfig", f.get("TracingConfig"), default={"Mode": "PassThrough"})
    vpc = c.properties.get("VpcConfig")
    if vpc is not None:
        kept = f.get("VpcConfig") or {}
        subnets = _sorted(resolve(vpc.get("SubnetIds"), c.stack))
        c.expect_value("VpcConfig.SubnetIds", subnets, sorted(kept.get("SubnetIds", [])))
        groups = [physical_id_of(g, c.stack, "GroupId") for g in vpc.get("SecurityGroupIds", [])]
        c.expect_value("VpcConfig.SecurityGroupIds", _sorted(groups), sorted(kept.get("SecurityGroupIds", [])))


def _sorted(values: Any) -> Any:
    """``values`` resolved and sorted (the order of subnets and groups does not matter); unresolved stays so."""
    if not isinstance(values, list) or any(v is UNRESOLVED for v in values):
        return UNRESOLVED
    return sorted(values)


def _layer_version(server: Clients, physical_id: str, c: Comparison) -> None:
    # moto answers GetLayerVersionByArn with a 500; the ARN ends in ``layer:<name>:<version>``.
    name, version = physical_id.rsplit(":", 2)[1:]
    layer = server.client("lambda").get_layer_version(LayerName=name, VersionNumber=int(version))
    c.expect("CompatibleRuntimes", layer.get("CompatibleRuntimes"))
    c.expect("CompatibleArchitectures", layer.get("CompatibleArchitectures"))
    c.expect("Description", layer.get("Description"))


def _event_source_mapping(server: Clients, physical_id: str, c: Comparison) -> None:
    m = server.client("lambda").get_event_source_mapping(UUID=physical_id)
    c.expect("BatchSize", m.get("BatchSize"))
    c.expect("MaximumBatchingWindowInSeconds", m.get("MaximumBatchingWindowInSeconds"))
    c.expect("FunctionResponseTypes", m.get("FunctionResponseTypes"))
    c.expect("EventSourceArn", m.get("EventSourceArn"))
    c.expect("ScalingConfig", m.get("ScalingConfig"))
    c.expect("FilterCriteria", m.get("FilterCriteria"))
    c.expect("MetricsConfig", m.get("MetricsConfig"))
    c.expect("ProvisionedPollerConfig", m.get("ProvisionedPollerConfig"))
    # FunctionName may be a name or an ARN; the mapping reports the ARN.
    function = resolve(c.properties.get("FunctionName"), c.stack)
    if isinstance(function, str):
        c.expect_value("FunctionName", function.rsplit(":", 1)[-1], m["FunctionArn"].rsplit(":", 1)[-1])


CHECKERS: dict[str, Checker] = {
    "AWS::Lambda::Function": _lambda_function,
    "AWS::Lambda::LayerVersion": _layer_version,
    "AWS::Lambda::EventSourceMapping": _event_source_mapping,
}
