"""The post-deploy check of ECS clusters, their capacity providers, task definitions and services."""

from __future__ import annotations

from typing import Any

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison, resolve

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::ECS::Service": (
        "DeploymentConfiguration (circuit breaker, healthy percents), EnableECSManagedTags, "
        "HealthCheckGracePeriodSeconds are dropped; moto runs no task (`jobqueues local up` runs the workers as "
        "local processes), so no task lands on Spot, gets a public IP or takes an ECS Exec session"
    ),
    "AWS::ECS::TaskDefinition": (
        "the image is never pulled and no container runs: the architecture never runs code, and a secret's ARN is "
        "compared, not fetched (`jobqueues local up` gives its workers the secrets the emulator holds)"
    ),
}


def _ecs_cluster(server: Clients, physical_id: str, c: Comparison) -> None:
    cluster = server.client("ecs").describe_clusters(clusters=[physical_id], include=["SETTINGS"])["clusters"][0]
    c.expect("ClusterSettings", [{"Name": s["name"], "Value": s["value"]} for s in cluster.get("settings", [])])


def _ecs_task_definition(server: Clients, physical_id: str, c: Comparison) -> None:
    t = server.client("ecs").describe_task_definition(taskDefinition=physical_id)["taskDefinition"]
    c.expect("Cpu", t.get("cpu"))
    c.expect("Memory", t.get("memory"))
    c.expect("NetworkMode", t.get("networkMode"))
    c.expect("RequiresCompatibilities", t.get("requiresCompatibilities"))
    c.expect("TaskRoleArn", t.get("taskRoleArn"))
    c.expect("ExecutionRoleArn", t.get("executionRoleArn"))
    c.expect("RuntimePlatform", _pascal(t.get("runtimePlatform")))
    containers = {d["name"]: d for d in t["containerDefinitions"]}
    for definition in c.properties.get("ContainerDefinitions", []):
        actual = containers.get(definition["Name"], {})
        for key, api_key in (("Image", "image"), ("Command", "command"), ("Essential", "essential")):
            c.expect_value(f"container {definition['Name']} {key}", definition.get(key), actual.get(api_key))
        for key, api_key in (("Environment", "environment"), ("Secrets", "secrets")):
            given = definition.get(key)
            if given is not None:
                c.expect_value(f"container {definition['Name']} {key}", _named(given, key), actual.get(api_key))
        log_driver = (definition.get("LogConfiguration") or {}).get("LogDriver")
        c.expect_value(
            f"container {definition['Name']} LogDriver", log_driver, actual.get("logConfiguration", {}).get("logDriver")
        )


def _ecs_service(server: Clients, physical_id: str, c: Comparison) -> None:
    cluster = physical_id.split(":service/", 1)[1].split("/")[0]
    s = server.client("ecs").describe_services(cluster=cluster, services=[physical_id])["services"][0]
    c.expect("DesiredCount", s.get("desiredCount"))
    c.expect("LaunchType", s.get("launchType"))
    c.expect("TaskDefinition", s.get("taskDefinition"))
    c.expect("PlatformVersion", s.get("platformVersion"))
    c.expect("CapacityProviderStrategy", _pascal(s.get("capacityProviderStrategy")) or None)
    c.expect("EnableExecuteCommand", s.get("enableExecuteCommand", False), default=False)
    c.expect("PropagateTags", s.get("propagateTags"), default="NONE")
    given = (c.properties.get("NetworkConfiguration") or {}).get("AwsvpcConfiguration", {})
    awsvpc = s.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
    for key, api_key in (("Subnets", "subnets"), ("SecurityGroups", "securityGroups")):
        resolved = resolve(given.get(key), c.stack)
        if isinstance(resolved, list):
            c.expect_value(f"NetworkConfiguration {key}", sorted(resolved), sorted(awsvpc.get(api_key, [])))
    if given:
        c.expect_value(
            "NetworkConfiguration AssignPublicIp", given.get("AssignPublicIp", "DISABLED"), awsvpc.get("assignPublicIp")
        )


def _ecs_capacity_providers(server: Clients, physical_id: str, c: Comparison) -> None:
    cluster = server.client("ecs").describe_clusters(clusters=[physical_id])["clusters"][0]
    given = sorted(c.properties.get("CapacityProviders", []))
    c.expect_value("CapacityProviders", given, sorted(cluster.get("capacityProviders", [])))
    strategy = c.properties.get("DefaultCapacityProviderStrategy")
    if strategy is not None:
        c.expect_value(
            "DefaultCapacityProviderStrategy", strategy, _pascal(cluster.get("defaultCapacityProviderStrategy"))
        )


def _pascal(value: Any) -> Any:
    """The ECS API's camelCase keys as CloudFormation's PascalCase, recursively."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _pascal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pascal(v) for v in value]
    return value


def _named(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """A container's ``Environment`` or ``Secrets`` in the API's shape (``name``, ``value`` / ``valueFrom``)."""
    if kind == "Secrets":
        return [{"name": item["Name"], "valueFrom": item["ValueFrom"]} for item in items]
    return [{"name": item["Name"], "value": item["Value"]} for item in items]


CHECKERS: dict[str, Checker] = {
    "AWS::ECS::Cluster": _ecs_cluster,
    "AWS::ECS::ClusterCapacityProviderAssociations": _ecs_capacity_providers,
    "AWS::ECS::TaskDefinition": _ecs_task_definition,
    "AWS::ECS::Service": _ecs_service,
}
