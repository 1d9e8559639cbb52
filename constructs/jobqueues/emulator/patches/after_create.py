"""Extend one of moto's own CloudFormation handlers: run a step after it creates a resource.

moto's handlers drop some properties (a function's ``Layers``, a role's ``ManagedPolicyArns``): the step
applies them to the resource moto created, through the same backend its API uses.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

#: ``step(resource, properties, account_id, region_name)``: what to apply to a resource moto just created.
Step = Callable[[Any, dict[str, Any], str, str], None]


def after_create(model: type[Any], step: Step) -> None:
    """Make ``model.create_from_cloudformation_json`` (a moto ``CloudFormationModel``) run ``step`` on each resource
    it returns.

    ``step`` gets the resource's template ``Properties``; an exception from it fails the resource, and so the
    deploy, as on AWS.
    """
    # The classmethod's function, wherever in the class's MRO moto defines it, called with the class it is on.
    original = inspect.getattr_static(model, "create_from_cloudformation_json").__func__

    def create_from_cloudformation_json(
        cls: type[Any],
        /,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        resource = original(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        step(resource, cloudformation_json.get("Properties", {}), account_id, region_name)
        return resource

    model.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)
