"""Application Auto Scaling: ``ScalableTarget`` and ``ScalingPolicy`` (moto has the backend, no handlers)."""

from __future__ import annotations

from typing import Any, Self

from moto.applicationautoscaling.models import applicationautoscaling_backends
from moto.cloudformation.exceptions import ValidationError
from moto.core.common_models import CloudFormationModel

from jobqueues.emulator.cfn.handler import ArnHandler, Handler


class ScalableTarget(Handler, CloudFormationModel):
    """``AWS::ApplicationAutoScaling::ScalableTarget`` via ``register_scalable_target``.

    Its ``Ref`` is ``resource id|scalable dimension|service namespace``, as in CloudFormation, which
    a ``ScalingPolicy``'s ``ScalingTargetId`` carries.
    """

    cfn_type = "AWS::ApplicationAutoScaling::ScalableTarget"

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        if p.get("ScheduledActions"):
            raise ValidationError(message=f"{cls.cfn_type} {name}: ScheduledActions are not supported locally")
        applicationautoscaling_backends[account_id][region_name].register_scalable_target(
            namespace=p["ServiceNamespace"],
            r_id=p["ResourceId"],
            dimension=p["ScalableDimension"],
            min_capacity=int(p["MinCapacity"]),
            max_capacity=int(p["MaxCapacity"]),
            role_arn=p.get("RoleARN", ""),
            suspended_state=p.get("SuspendedState"),  # type: ignore[arg-type]
        )
        target_id = "|".join((p["ResourceId"], p["ScalableDimension"], p["ServiceNamespace"]))
        return cls(target_id, properties, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        p = self.properties
        applicationautoscaling_backends[account_id][region_name].deregister_scalable_target(
            p["ServiceNamespace"], p["ResourceId"], p["ScalableDimension"]
        )


class ScalingPolicy(ArnHandler, CloudFormationModel):
    """``AWS::ApplicationAutoScaling::ScalingPolicy`` (step or target tracking) via ``put_scaling_policy``.

    The target is ``ScalingTargetId`` or the ``ResourceId``/``ScalableDimension``/``ServiceNamespace``
    triple. Its ``Ref`` and ``Arn`` are the policy ARN (step-scaling alarms act on it).
    """

    cfn_type = "AWS::ApplicationAutoScaling::ScalingPolicy"
    name_property = "PolicyName"
    cfn_attributes = frozenset({"Arn"})

    def __init__(
        self,
        name: str,
        properties: dict[str, Any],
        account_id: str,
        region_name: str,
        arn: str,
        target: tuple[str, ...],
    ) -> None:
        super().__init__(name, properties, account_id, region_name, arn)
        self.policy_name = name
        self.target = target

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        p = properties
        if "ScalingTargetId" in p:
            resource_id, dimension, namespace = p["ScalingTargetId"].split("|")
        else:
            resource_id, dimension, namespace = p["ResourceId"], p["ScalableDimension"], p["ServiceNamespace"]
        body_key = {
            "StepScaling": "StepScalingPolicyConfiguration",
            "TargetTrackingScaling": "TargetTrackingScalingPolicyConfiguration",
        }.get(p["PolicyType"])
        if body_key is None or body_key not in p:
            raise ValidationError(
                message=f"{cls.cfn_type} {name}: PolicyType {p['PolicyType']} is not supported locally"
            )
        policy = applicationautoscaling_backends[account_id][region_name].put_scaling_policy(
            policy_name=name,
            service_namespace=namespace,
            resource_id=resource_id,
            scalable_dimension=dimension,
            policy_body=p[body_key],
            policy_type=p["PolicyType"],
        )
        return cls(name, properties, account_id, region_name, policy.policy_arn, (namespace, resource_id, dimension))

    def delete(self, account_id: str, region_name: str) -> None:
        namespace, resource_id, dimension = self.target
        applicationautoscaling_backends[account_id][region_name].delete_scaling_policy(
            self.policy_name, namespace, resource_id, dimension
        )

    def attribute(self, name: str) -> str:
        return self.arn
