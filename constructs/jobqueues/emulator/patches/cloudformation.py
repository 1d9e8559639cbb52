"""CloudFormation: strict about what it cannot create, change sets told apart by stack, failures that stop.

See each function's docstring for what moto does without it.
"""

from __future__ import annotations

from typing import Any

from moto.cloudformation import parsing
from moto.cloudformation.exceptions import CloudFormationError, ValidationError
from moto.cloudformation.models import ChangeSet, CloudFormationBackend
from moto.cloudformation.responses import CloudFormationResponse
from moto.core.responses import ActionResult, EmptyResult

#: Types whose resources moto would report created while the Lambda behind them never ran.
CUSTOM_RESOURCE_HINTS = {
    "Custom::VpcRestrictDefaultSG": "create the Vpc with restrict_default_security_group=False",
    "Custom::LogRetention": "pass an explicit logs.LogGroup(retention=...) instead of log_retention=",
    "Custom::S3AutoDeleteObjects": "drop auto_delete_objects=True from the bucket",
    "Custom::AWS": "replace the AwsCustomResource with a native CloudFormation resource",
}


class ChangeSetNotFound(CloudFormationError):
    """CloudFormation's answer to a change set that does not exist (cdk waits for it after a delete)."""

    code = "ChangeSetNotFoundException"


def find_change_set(
    backend: CloudFormationBackend, change_set_name: str, stack_name: str | None = None
) -> ChangeSet | None:
    """The change set with this ARN, else the newest one of this name for ``stack_name`` (a name or ARN), if any.

    cdk names every stack's change set "cdk-deploy-change-set"; moto's own lookups ignore the stack, so with
    ``cdk deploy --concurrency N`` a stack could be answered, or executed, with another stack's change set.
    """
    if change_set_name in backend.change_sets:
        return backend.change_sets[change_set_name]
    named = [
        cs
        for cs in backend.change_sets.values()
        if cs.change_set_name == change_set_name and stack_name in (None, cs.stack_name, cs.stack_id)
    ]
    return named[-1] if named else None


def tell_change_sets_apart_by_stack() -> None:
    """Make ``DescribeChangeSet`` and ``DeleteChangeSet`` find the change set of the stack they name.

    A describe that answered another stack's same-named change set made cdk execute that one and leave its own
    stack in ``REVIEW_IN_PROGRESS`` while reporting success. Deleting a change set that does not exist succeeds,
    as CloudFormation's does for an existing stack (cdk deletes its old change set before each update).
    """

    def describe_change_set(
        self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None
    ) -> ChangeSet:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise ChangeSetNotFound(f"ChangeSet [{change_set_name}] does not exist")
        return change_set

    def delete_change_set(self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is not None:
            del self.change_sets[change_set.change_set_id]

    def describe_change_set_response(self: CloudFormationResponse) -> ActionResult:
        name, stack = self._get_param("ChangeSetName"), self._get_param("StackName")
        return ActionResult(describe_change_set(self.cloudformation_backend, name, stack))

    def delete_change_set_response(self: CloudFormationResponse) -> EmptyResult:
        delete_change_set(self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
        return EmptyResult()

    CloudFormationBackend.describe_change_set = describe_change_set  # type: ignore[method-assign]
    CloudFormationBackend.delete_change_set = delete_change_set  # type: ignore[method-assign]
    CloudFormationResponse.describe_change_set = describe_change_set_response  # type: ignore[method-assign]
    CloudFormationResponse.delete_change_set = delete_change_set_response  # type: ignore[method-assign]


def harden_change_set_execution() -> None:
    """Make ``ExecuteChangeSet`` (how ``cdk deploy`` creates stacks) fail loudly and publish Outputs.

    moto answers a resource that fails to create with a 500, which SDKs retry; the retry then finds
    nothing left to add and "succeeds". Here a failure marks the stack and change set failed and
    answers a 400 naming the resource, which no client retries. moto also creates a change-set stack
    with an empty template and never rebuilds its outputs, so ``cdk`` could not read
    ``BootstrapVersion`` from ``CDKToolkit``; they are rebuilt after each execution. Nor does it give a change-set
    stack the region's exports or publish its own, so a stack importing another's value (``Fn::ImportValue``, a
    cross-stack reference) failed with ``ExportNotFound``: both are done here, as ``CreateStack`` does.
    """
    original = CloudFormationBackend.execute_change_set

    def execute_change_set(self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = find_change_set(self, change_set_name, stack_name)
        if change_set is not None and change_set.execution_status == "EXECUTE_FAILED":
            raise ValidationError(message=f"change set {change_set_name} already failed; create a new one")
        if change_set is not None:
            stack = self.stacks[change_set.stack_id]
            stack.cross_stack_resources = stack.resource_map.cross_stack_resources = self.exports
        try:
            original(self, change_set.change_set_id if change_set else change_set_name, stack_name)
        except Exception as error:
            if change_set is not None:
                change_set.execution_status = "EXECUTE_FAILED"
                stack = self.stacks[change_set.stack_id]
                stack.status = "ROLLBACK_COMPLETE" if change_set.change_set_type == "CREATE" else "UPDATE_FAILED"
                stack._add_stack_event(stack.status, resource_status_reason=str(error))
            if isinstance(error, ValidationError):
                raise
            raise ValidationError(message=f"local emulator failed to create a resource: {error!r}") from error
        for stack in self.stacks.values():
            if stack.status.endswith("_COMPLETE") and stack.template:
                stack._parse_template()
                stack.output_map = stack._create_output_map()
                self.exports.update({export.name: export for export in stack.exports})

    CloudFormationBackend.execute_change_set = execute_change_set  # type: ignore[method-assign]


def custom_resource_error(resource_type: str) -> str | None:
    """Why a custom resource cannot deploy locally and how to avoid it, or None for other types."""
    if not (resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource"):
        return None
    hint = CUSTOM_RESOURCE_HINTS.get(resource_type, "replace it with native CloudFormation resources")
    return (
        f"{resource_type} is a custom resource: the local emulator would report it created while its "
        f"Lambda never ran, so it refuses it. To avoid it: {hint}"
    )


def make_unsupported_types_fatal() -> None:
    """Fail the deploy on a resource moto cannot really create, instead of skipping or faking it.

    moto skips an unknown type with a warning, and reports a custom resource created without its
    Lambda having run; both fail here, naming the resource.
    """
    original = parsing.parse_resource

    def strict_parse_resource(resource_json: dict[str, Any], resources_map: Any) -> Any:
        custom = custom_resource_error(resource_json["Type"])
        if custom:
            raise ValidationError(message=custom)
        parsed = original(resource_json, resources_map)
        if not parsed:
            raise ValidationError(
                message=(
                    f"{resource_json['Type']} is not supported by the local emulator: "
                    "add a handler for it in jobqueues/emulator/cfn/ and list it in jobqueues/emulator/cfn/registry.py"
                )
            )
        return parsed

    parsing.parse_resource = strict_parse_resource


def keep_retained_resources_except_on_create() -> None:
    """Keep a ``RetainExceptOnCreate`` resource when its stack is deleted, as CloudFormation does.

    moto keeps only ``Retain`` resources (a job queue's DLQ by default, ``RemovalPolicy.RETAIN``) and deletes the
    ones of ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``. A stack deleted here was created (a failed create
    is not rolled back by deleting it), so both are kept. Update and replacement policies are not emulated.
    """
    original = parsing.ResourceMap.delete

    def delete(self: parsing.ResourceMap) -> None:
        for resource in self._resource_json_map.values():
            if resource.get("DeletionPolicy") == "RetainExceptOnCreate":
                resource["DeletionPolicy"] = "Retain"
        original(self)

    parsing.ResourceMap.delete = delete  # type: ignore[method-assign]
