"""Compare deployed resources with their templates, property by property, where moto keeps the data.

One module per AWS service, as the handlers of :mod:`jobqueues.emulator.cfn`: each holds the checks of its resource
types (``CHECKERS``) and what the emulator cannot show of them (``NOT_VERIFIABLE``: properties moto drops and
behaviour it does not emulate). :func:`check_resource` reads a resource back with boto3 and returns one line per
property whose value differs from the template's (:mod:`.comparison`). Template values with intrinsics are resolved
against the stack's physical ids by :mod:`jobqueues.ops.intrinsics` (``Ref``, ``Fn::Join``, ``Fn::Sub``, a queue's
``Fn::GetAtt``, pseudo parameters); a value it cannot compute is not compared, except a KMS key's ARN (compared by
the key's physical id) and a security group's id.
"""

from __future__ import annotations

from typing import Any

from jobqueues.emulator.checks import (
    autoscaling,
    cloudwatch,
    dynamodb,
    ec2,
    ecs,
    iam,
    lambda_,
    logs,
    s3,
    secretsmanager,
    sqs,
)
from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison
from jobqueues.ops import intrinsics

#: The service modules, each with ``CHECKERS`` and ``NOT_VERIFIABLE`` for its resource types.
SERVICES = (sqs, lambda_, cloudwatch, autoscaling, iam, logs, ecs, ec2, dynamodb, secretsmanager, s3)

#: Resource type -> its check (a type without one is only checked to exist).
CHECKERS: dict[str, Checker] = {t: check for service in SERVICES for t, check in service.CHECKERS.items()}

#: What the post-deploy check cannot verify locally, per resource type (printed after a deploy).
NOT_VERIFIABLE: dict[str, str] = {t: why for service in SERVICES for t, why in service.NOT_VERIFIABLE.items()}


def check_resource(
    server: Clients, resource_type: str, physical_id: str, properties: dict[str, Any], stack: intrinsics.Stack
) -> tuple[int, list[str]]:
    """How many properties were compared, and the mismatches; (0, []) for a type without a checker."""
    checker = CHECKERS.get(resource_type)
    if checker is None:
        return 0, []
    comparison = Comparison(properties, stack)
    checker(server, physical_id, comparison)
    return comparison.compared, comparison.mismatches
