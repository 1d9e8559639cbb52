"""Lambda: functions keep their layers, architectures and tracing, a layer version's ``Ref`` is its ARN, and SQS event
source mappings are records only."""

from __future__ import annotations

from typing import Any

from moto.awslambda.models import LambdaBackend, LambdaFunction, LayerVersion
from moto.sqs.models import sqs_backends

from jobqueues.emulator.patches.after_create import after_create


def keep_lambda_layers() -> None:
    """Give functions created by CloudFormation their ``Layers``, ``Architectures`` and ``TracingConfig`` (moto
    drops them; it keeps ``VpcConfig`` and ``ReservedConcurrentExecutions``).

    A layer version keeps its ``CompatibleArchitectures``. moto's ``AWS::Lambda::LayerVersion`` has no physical
    id, so its ``Ref`` would be the Python object; CloudFormation's is the layer version ARN.
    """
    LayerVersion.physical_resource_id = property(lambda self: self.arn)  # type: ignore[attr-defined]

    def apply(function: LambdaFunction, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        if "Layers" in properties:
            # Resolves each layer version ARN, so an unknown layer fails the deploy as it would on AWS.
            function.update_configuration({"Layers": properties["Layers"]})
        if "Architectures" in properties:
            function.architectures = list(properties["Architectures"])
        if "TracingConfig" in properties:
            function.tracing_config = dict(properties["TracingConfig"])

    after_create(LambdaFunction, apply)

    def keep_architectures(layer: LayerVersion, properties: dict[str, Any], account_id: str, region_name: str) -> None:
        # moto's handler drops a layer version's CompatibleArchitectures; GetLayerVersion reports them.
        layer.compatible_architectures = list(properties.get("CompatibleArchitectures", []))

    after_create(LayerVersion, keep_architectures)


def make_sqs_event_source_mappings_inert() -> None:
    """Keep SQS event source mappings as records only: moto would act on them at every SendMessage.

    moto registers a mapping on its queue, and each SendMessage then receives the messages and
    invokes the function in Docker; without Docker that fails, so the messages burn receive counts
    and end in the DLQ unprocessed. Here the mapping is created and readable
    (``list_event_source_mappings``/``get_event_source_mapping``, state "Enabled") but never
    registered on the queue, so nothing consumes the queue except the local driver that reads it.
    """
    original = LambdaBackend.create_event_source_mapping

    def create_event_source_mapping(self: LambdaBackend, spec: dict[str, Any]) -> Any:
        mapping = original(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            if queue.lambda_event_source_mappings.get(mapping.function_arn) is mapping:
                del queue.lambda_event_source_mappings[mapping.function_arn]
        return mapping

    LambdaBackend.create_event_source_mapping = create_event_source_mapping  # type: ignore[method-assign]
