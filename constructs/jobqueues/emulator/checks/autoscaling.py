"""The post-deploy check of Application Auto Scaling targets and policies."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::ApplicationAutoScaling::ScalingPolicy": (
        "never acts; moto adds two CPUUtilization TargetTracking-* alarms for each ECS target-tracking policy"
    ),
}


def _scalable_target(server: Clients, physical_id: str, c: Comparison) -> None:
    resource_id, dimension, namespace = physical_id.split("|")
    targets = server.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace=namespace, ResourceIds=[resource_id], ScalableDimension=dimension
    )["ScalableTargets"]
    if not targets:
        c.mismatches.append("scalable target not found")
        return
    c.expect("MinCapacity", targets[0]["MinCapacity"])
    c.expect("MaxCapacity", targets[0]["MaxCapacity"])


def _scaling_policy(server: Clients, physical_id: str, c: Comparison) -> None:
    namespace = physical_id.split(":resource/", 1)[1].split("/", 1)[0]
    policies = server.client("application-autoscaling").describe_scaling_policies(ServiceNamespace=namespace)
    found = [p for p in policies["ScalingPolicies"] if p["PolicyARN"] == physical_id]
    if not found:
        c.mismatches.append("scaling policy not found")
        return
    p = found[0]
    c.expect("PolicyType", p["PolicyType"])
    c.expect("StepScalingPolicyConfiguration", p.get("StepScalingPolicyConfiguration"))
    c.expect("TargetTrackingScalingPolicyConfiguration", p.get("TargetTrackingScalingPolicyConfiguration"))


CHECKERS: dict[str, Checker] = {
    "AWS::ApplicationAutoScaling::ScalableTarget": _scalable_target,
    "AWS::ApplicationAutoScaling::ScalingPolicy": _scaling_policy,
}
