"""The ``CloudFormationModel`` boilerplate every handler of :mod:`jobqueues.emulator.cfn` shares.

moto's CloudFormation looks resource types up in ``CloudFormationModel.__subclasses__()`` (direct subclasses
only, cached on first use), so each handler lists ``CloudFormationModel`` as a base next to the
:class:`Handler` mixin (:class:`ArnHandler` for one whose ``Ref`` is an ARN), and its module must be imported
before the first deploy (:mod:`jobqueues.emulator.cfn.registry` imports them all).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Self

from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
from moto.core.utils import pascal_to_camelcase, remap_nested_keys


def camel(value: Any) -> Any:
    """CloudFormation's PascalCase keys, recursively, as the camelCase the ECS API takes."""
    return remap_nested_keys(value, pascal_to_camelcase)


def policy_json(document: Any) -> str:
    """A policy document as JSON text (templates give it as an object or, rarely, as a string)."""
    return document if isinstance(document, str) else json.dumps(document)


class Handler:
    """The ``CloudFormationModel`` protocol in terms of a few hooks.

    A handler sets :attr:`cfn_type` (and :attr:`name_property`, :attr:`cfn_attributes` if it has
    them) and writes :meth:`create` (drive the backend, return the handler) and, if something must be
    undone, :meth:`delete`. An update deletes the old resource and creates the new one.
    """

    #: The CloudFormation resource type, e.g. ``AWS::CloudWatch::Alarm``.
    cfn_type: ClassVar[str]
    #: The property that names the resource (moto generates a name when it is absent), or "".
    name_property: ClassVar[str] = ""
    #: ``Fn::GetAtt`` attributes :meth:`attribute` answers.
    cfn_attributes: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        self.name = name
        self.properties = properties
        self.account_id = account_id
        self.region_name = region_name

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        """Create the resource in moto's backend; ``name`` is the physical name moto chose."""
        raise NotImplementedError

    def delete(self, account_id: str, region_name: str) -> None:
        """Undo :meth:`create` (moto calls this on stack deletion and resource removal)."""

    def attribute(self, name: str) -> Any:
        """The value of ``Fn::GetAtt [resource, name]``, for a name in :attr:`cfn_attributes`."""
        raise NotImplementedError(name)

    # The CloudFormationModel protocol, in terms of the hooks above.

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @classmethod
    def cloudformation_name_type(cls) -> str:
        return cls.name_property

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.cfn_type

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.cfn_attributes

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name not in self.cfn_attributes:
            raise UnformattedGetAttTemplateException()
        return self.attribute(attribute_name)

    @classmethod
    def create_from_cloudformation_json(
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> Self:
        return cls.create(resource_name, cloudformation_json.get("Properties", {}), account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: Handler,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> Self:
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)


class ArnHandler(Handler):
    """A :class:`Handler` whose physical id (its ``Ref``) is the ARN its backend gave the resource, not its name."""

    def __init__(self, name: str, properties: dict[str, Any], account_id: str, region_name: str, arn: str) -> None:
        super().__init__(name, properties, account_id, region_name)
        self.arn = arn

    @property
    def physical_resource_id(self) -> str:
        return self.arn
