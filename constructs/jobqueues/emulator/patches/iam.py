"""IAM: roles created by CloudFormation get their ``ManagedPolicyArns`` attached; an AWS managed policy exists from
its first use by ARN."""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from moto.iam.aws_managed_policies import aws_managed_policies_data
from moto.iam.models import AWSManagedPolicy, IAMBackend, Role, iam_backends

from jobqueues.emulator.patches.after_create import after_create

#: An AWS managed policy's ARN: ``arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole``.
_AWS_MANAGED_ARN = re.compile(r"^arn:[\w-]+:iam::aws:policy(?:/[^/]+)*/(?P<name>[^/]+)$")
#: The IAM calls that name a policy by ARN and must find an AWS managed one.
_CALLS_BY_ARN = ("attach_role_policy", "attach_group_policy", "attach_user_policy", "get_policy", "get_policy_version")
_LOADING = threading.Lock()


def attach_managed_policies() -> None:
    """Attach a CloudFormation role's ``ManagedPolicyArns`` (moto drops them); an unknown ARN fails the deploy, as on
    AWS."""

    def attach(role: Role, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        backend = iam_backends[account_id]["aws"]
        for arn in properties.get("ManagedPolicyArns", []):
            backend.attach_role_policy(arn, role.name)

    after_create(Role, attach)


def load_aws_managed_policies_on_demand(backend: type[IAMBackend] = IAMBackend) -> None:
    """Create an AWS managed policy (moto's copy of it) when a call first names its ARN, instead of all at start.

    moto loads either none (an attach then fails) or, with ``MOTO_IAM_LOAD_MANAGED_POLICIES``, all 1,582 into each
    account and partition an IAM backend is made for, and every request makes the default account's: about 0.5 s of
    CPU in each emulator before its second request is answered. An unknown ARN still fails, as on AWS. What differs:
    ``ListPolicies`` with ``Scope=AWS`` lists only the policies used so far (docs/emulator.md).
    """
    backend._init_aws_policies = lambda self: []  # type: ignore[method-assign]
    for name in _CALLS_BY_ARN:
        setattr(backend, name, _loading_first(getattr(backend, name)))


def _loading_first(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def by_arn(self: IAMBackend, policy_arn: str, *args: Any, **kwargs: Any) -> Any:
        _ensure_aws_managed_policy(self, policy_arn)
        return call(self, policy_arn, *args, **kwargs)

    return by_arn


def _ensure_aws_managed_policy(backend: IAMBackend, arn: str) -> None:
    match = _AWS_MANAGED_ARN.match(arn)
    if match is None or arn in backend.managed_policies:
        return
    data = _aws_managed_policy_data().get(match["name"])
    if data is None:
        return  # moto's own call then fails: no such policy
    policy = AWSManagedPolicy.from_data(match["name"], backend.account_id, backend.region_name, data)
    if policy.arn != arn:
        return  # another path, or partition, than the policy's
    with _LOADING:  # two requests may name it at once: one policy object
        if arn not in backend.managed_policies:
            backend.managed_policies[arn] = policy
            backend.aws_managed_policies.append(policy)


@functools.cache
def _aws_managed_policy_data() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(aws_managed_policies_data)
    return parsed
