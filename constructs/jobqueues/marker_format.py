"""The keys and version of the markers job types leave in their templates (written by :mod:`jobqueues.marker`,
read by :mod:`jobqueues.ops.discovery`) and where a template holds them (:func:`resource_metadata`): plain values, so
the command reads them without ``aws_cdk``."""

from __future__ import annotations

from typing import Any

#: Metadata key of a job queue's source queue resource: job type, construct path, queues, declared numbers.
QUEUE_MARKER = "jobqueues:job"
#: Metadata key of the consumer's resource (the Lambda function, the ECS service): its kind, resources, scaling.
CONSUMER_MARKER = "jobqueues:consumer"
#: Metadata key of an ``EcsJob``'s service built from the default image: the image's build directory, relative
#: to the app's directory (``jobqueues local up`` runs the handlers from there).
IMAGE_DIRECTORY_MARKER = "jobqueues:image_directory"
#: Bumped when a field changes meaning; readers refuse a newer one.
MARKER_VERSION = 1
#: Key of a template's own ``Metadata``: the markers of its resources, by logical id (``{logical_id: {key: marker}}``),
#: written once per stack at synth (one request to the CDK's Node kernel a stack, where a marker on each resource
#: cost three a job type). Readers merge them into each resource's metadata (:func:`resource_metadata`).
RESOURCE_MARKERS = "jobqueues:markers"


def resource_metadata(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each resource's ``Metadata`` by logical id, with the markers the template holds for it under
    :data:`RESOURCE_MARKERS` merged in (a template of an earlier jobqueues has them on its resources only). A logical
    id those markers name that ``Resources`` lacks (a resource renamed after its job queue was built) is included."""
    merged = {logical_id: dict(r.get("Metadata") or {}) for logical_id, r in template.get("Resources", {}).items()}
    for logical_id, markers in ((template.get("Metadata") or {}).get(RESOURCE_MARKERS) or {}).items():
        merged.setdefault(logical_id, {}).update(markers)
    return merged
