"""The emulator's IAM: an AWS managed policy exists from its first use by ARN
(``jobqueues.emulator.patches.iam.load_aws_managed_policies_on_demand``), not loaded whole into every backend.

Each test patches a subclass of moto's ``IAMBackend`` of its own, so moto's class is left as it was."""

from __future__ import annotations

import json
import uuid

import pytest
from moto.iam.aws_managed_policies import aws_managed_policies_data
from moto.iam.exceptions import NotFoundException
from moto.iam.models import IAMBackend

from jobqueues.emulator.patches.iam import load_aws_managed_policies_on_demand
from jobqueues.emulator.server import LocalServer

ACCOUNT = "123456789012"
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
ASSUME = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]})


def patched_backend() -> IAMBackend:
    backend = type("PatchedIAMBackend", (IAMBackend,), {})
    load_aws_managed_policies_on_demand(backend)
    return backend(region_name="aws", account_id=ACCOUNT)  # type: ignore[no-any-return]


def test_a_new_backend_loads_no_aws_managed_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN moto told to load AWS managed policies (as the emulator's server did: 1,582 in each backend)
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    assert len(IAMBackend(region_name="aws", account_id=ACCOUNT).managed_policies) > 1000
    # WHEN the patched backend is made THEN it holds none yet
    assert patched_backend().managed_policies == {}


def test_a_role_attaches_an_aws_managed_policy_by_its_arn() -> None:
    # GIVEN a role, and no AWS managed policy loaded
    iam = patched_backend()
    iam.create_role("fn", ASSUME, "/", None, "", [], None)
    # WHEN it attaches one by ARN
    iam.attach_role_policy(BASIC, "fn")
    # THEN the role has it, and the policy is moto's copy of AWS's
    assert [p.arn for p in iam.get_role("fn").managed_policies.values()] == [BASIC]
    policy = iam.get_policy(BASIC)
    data = json.loads(aws_managed_policies_data)["AWSLambdaBasicExecutionRole"]
    document = iam.get_policy_version(BASIC, policy.default_version_id).document
    assert (policy.path, json.loads(document)) == (data["Path"], data["Document"])
    # ... created once: a second attach and a get find the same object
    iam.attach_role_policy(BASIC, "fn")
    assert iam.get_policy(BASIC) is policy and iam.aws_managed_policies == [policy]


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:iam::aws:policy/service-role/NoSuchPolicy",
        "arn:aws:iam::aws:policy/AWSLambdaBasicExecutionRole",  # the right name on another path
        "arn:aws:iam::123456789012:policy/service-role/AWSLambdaBasicExecutionRole",  # a customer's ARN
    ],
)
def test_an_arn_of_no_aws_managed_policy_is_still_not_found(arn: str) -> None:
    iam = patched_backend()
    iam.create_role("fn", ASSUME, "/", None, "", [], None)
    with pytest.raises(NotFoundException):
        iam.attach_role_policy(arn, "fn")
    assert iam.managed_policies == {}


def test_the_emulator_serves_an_aws_managed_policy_by_its_arn(local_aws: LocalServer) -> None:
    iam, role = local_aws.client("iam"), f"fn-{uuid.uuid4().hex[:8]}"
    assert iam.get_policy(PolicyArn=BASIC)["Policy"]["Arn"] == BASIC
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=ASSUME)
    iam.attach_role_policy(RoleName=role, PolicyArn=BASIC)
    assert [p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]] == [BASIC]
