"""IAM: roles created by CloudFormation get their ``ManagedPolicyArns`` attached."""

from __future__ import annotations

from typing import Any

from moto.iam.models import Role, iam_backends

from jobqueues.emulator.patches.after_create import after_create


def attach_managed_policies() -> None:
    """Attach a CloudFormation role's ``ManagedPolicyArns`` (moto drops them).

    AWS managed policies exist only if moto loads them (``MOTO_IAM_LOAD_MANAGED_POLICIES``, which
    the server sets); an unknown ARN fails the deploy, as on AWS.
    """

    def attach(role: Role, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        backend = iam_backends[account_id]["aws"]
        for arn in properties.get("ManagedPolicyArns", []):
            backend.attach_role_policy(arn, role.name)

    after_create(Role, attach)
