"""GIVEN construct paths below a stack WHEN jobqueues computes their logical ids in Python THEN they are the ids the
CDK's kernel allocates (``Stack.get_logical_id``), including Stages, hidden ``Default`` children, ``Resource``
leaves, repeated components, characters ids drop, and names long enough to be cut."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from constructs import Construct
from hypothesis import given, settings
from hypothesis import strategies as st

from jobqueues.logical_ids import logical_id

_ids = st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=12).filter(lambda s: s != "Default")


def _kernel_id(path: list[str], stage: bool = False) -> str:
    app = cdk.App()
    scope: Construct = cdk.Stage(app, "Dev") if stage else app
    stack = cdk.Stack(scope, "Jobs")
    parent: Construct = stack
    for component in path:
        parent = Construct(parent, component)
    resource = sqs.CfnQueue(parent, "Resource")
    return stack.get_logical_id(resource)


def test_known_paths_match_the_kernel() -> None:
    for path in (
        ["Orders", "Queue"],
        ["Orders", "DeadLetterQueue"],
        ["Default", "Orders", "Queue"],
        ["Team", "Orders", "Queue"],
        ["Queue"],
        ["OrdersQueue", "Queue"],
        ["Orders-2.fifo", "Queue"],
        ["A" * 250, "Queue"],
    ):
        assert logical_id([*path, "Resource"]) == _kernel_id(path), path
    assert logical_id(["Orders", "Queue", "Resource"]) == _kernel_id(["Orders", "Queue"], stage=True)


def test_a_single_component_is_the_id_itself() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs")
    assert logical_id(["My-Queue"]) == stack.get_logical_id(sqs.CfnQueue(stack, "My-Queue")) == "MyQueue"


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.lists(_ids, min_size=1, max_size=4))
def test_any_path_matches_the_kernel(path: list[str]) -> None:
    assert logical_id([*path, "Resource"]) == _kernel_id(path)
