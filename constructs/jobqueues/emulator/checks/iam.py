"""The post-deploy check of IAM roles: their managed policies (IAM is stored by moto, never enforced)."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import UNRESOLVED, Checker, Clients, Comparison, resolve

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::IAM::Role": "policies are stored but not enforced",
    "AWS::IAM::Policy": "stored but not enforced",
}


def _role(server: Clients, physical_id: str, c: Comparison) -> None:
    attached = server.client("iam").list_attached_role_policies(RoleName=physical_id)["AttachedPolicies"]
    arns = resolve(c.properties.get("ManagedPolicyArns", []), c.stack)
    if arns is not UNRESOLVED:  # the order of attachment does not matter
        c.expect_value("ManagedPolicyArns", sorted(arns), sorted(p["PolicyArn"] for p in attached))


CHECKERS: dict[str, Checker] = {"AWS::IAM::Role": _role}
