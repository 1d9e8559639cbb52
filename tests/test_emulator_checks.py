"""The post-deploy check's pieces without a server: one check per resource type across the service modules, and
the comparison's resolving, normalising and counting (the checks against a deployed app are in the
``test_emulator_*_options`` modules)."""

from __future__ import annotations

from jobqueues.emulator.checks import CHECKERS, NOT_VERIFIABLE, SERVICES
from jobqueues.emulator.checks.comparison import UNRESOLVED, Comparison, kms_key, physical_id_of
from jobqueues.ops.stack_template import StackTemplate

STACK = StackTemplate(
    "S",
    {"Resources": {"Key": {"Type": "AWS::KMS::Key"}, "Group": {"Type": "AWS::EC2::SecurityGroup"}}},
    "123456789012",
    "eu-west-1",
    {"Key": "key-id-1", "Group": "sg-1"},
)


def test_every_resource_type_has_one_check_in_one_service_module() -> None:
    checks = [t for service in SERVICES for t in service.CHECKERS]
    notes = [t for service in SERVICES for t in service.NOT_VERIFIABLE]
    assert len(checks) == len(set(checks)) == len(CHECKERS) >= 18
    assert len(notes) == len(set(notes)) == len(NOT_VERIFIABLE) >= 15
    for service in SERVICES:  # a module checks its own service's types
        prefixes = {t.split("::")[1] for t in (*service.CHECKERS, *service.NOT_VERIFIABLE)}
        assert len(prefixes) <= 1, f"{service.__name__} checks {prefixes}"


def test_a_get_att_stands_for_the_physical_id_of_its_one_attribute() -> None:
    assert physical_id_of({"Fn::GetAtt": ["Group", "GroupId"]}, STACK, "GroupId") == "sg-1"
    assert physical_id_of({"Fn::GetAtt": "Group.GroupId"}, STACK, "GroupId") == "sg-1"
    assert physical_id_of({"Fn::GetAtt": ["Group", "VpcId"]}, STACK, "GroupId") is UNRESOLVED
    assert physical_id_of({"Fn::GetAtt": ["Missing", "GroupId"]}, STACK, "GroupId") is UNRESOLVED
    assert physical_id_of({"Ref": "Group"}, STACK, "GroupId") == "sg-1"
    assert physical_id_of("sg-literal", STACK, "GroupId") == "sg-literal"


def test_a_kms_key_compares_by_its_key_id() -> None:
    assert kms_key({"Fn::GetAtt": ["Key", "Arn"]}, STACK) == "key-id-1"
    assert kms_key({"Fn::GetAtt": ["Key", "KeyId"]}, STACK) is UNRESOLVED
    assert kms_key("arn:aws:kms:eu-west-1:123456789012:key/key-id-1") == "key-id-1"
    assert kms_key("alias/aws/sqs", STACK) == "alias/aws/sqs"
    assert kms_key(None) == kms_key("") == "none"


def test_a_comparison_counts_what_it_compares_and_skips_what_it_cannot_compute() -> None:
    c = Comparison({"Timeout": 30, "Name": {"Fn::GetAtt": ["Key", "Arn"]}, "Flag": True}, STACK)
    c.expect("Timeout", "30.0")  # numbers compare as numbers
    c.expect("Flag", "true")
    c.expect("Name", "anything")  # a GetAtt the resolver cannot compute: not compared
    c.expect("Absent", "x")  # absent from the template, no default: not compared
    c.expect("Memory", 256, default=128)
    assert c.compared == 3
    assert c.mismatches == ["Memory: template 128, emulator 256"]
