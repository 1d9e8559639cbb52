"""A construct's CloudFormation logical id, computed in Python from its path in its stack.

The CDK computes it in its Node kernel (``Stack.allocateLogicalId``: ``makeUniqueId`` over the ids of the scopes
below the stack). Asking the kernel costs round trips per resource (the resource, its stack, the id), which were
most of a job type's synth overhead over the same resources written by hand; this is the same algorithm, checked
against the kernel once per stack (:func:`matches_kernel`) since a stack may rename or allocate ids its own way.
"""

from __future__ import annotations

import hashlib
import re

#: makeUniqueId's constants (aws-cdk-lib core/lib/private/uniqueid.ts).
_HIDDEN_ID = "Default"  # a scope's default child: left out of the id
_HIDDEN_FROM_HUMAN_ID = "Resource"  # left out of the readable part, kept in the hash
_HASH_LEN = 8
_MAX_HUMAN_LEN = 240
_MAX_ID_LEN = 255
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def logical_id(components: list[str]) -> str:
    """The logical id of the construct whose path below its stack is ``components`` (its scopes' ids, the stack's
    excluded, e.g. ``["Orders", "Queue", "Resource"]``), as ``Stack.getLogicalId`` allocates it."""
    components = [c for c in components if c != _HIDDEN_ID]
    if not components:
        raise ValueError("a logical id needs at least one path component")
    if len(components) == 1:
        candidate = _NOT_ALPHANUMERIC.sub("", components[0])
        if len(candidate) <= _MAX_ID_LEN:
            return candidate
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()
    human = "".join(_NOT_ALPHANUMERIC.sub("", c) for c in _without_repeats(components) if c != _HIDDEN_FROM_HUMAN_ID)
    return human[:_MAX_HUMAN_LEN] + digest[:_HASH_LEN].upper()


def _without_repeats(components: list[str]) -> list[str]:
    """Drop a component that the one before it ends with (``Queue/Queue`` reads ``Queue``)."""
    kept: list[str] = []
    for component in components:
        if not kept or not kept[-1].endswith(component):
            kept.append(component)
    return kept
