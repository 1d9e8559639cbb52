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
#: A queue marker's declared numbers, in seconds (``None``: not declared). Under :data:`RESOURCE_MARKERS` one that
#: is no integer is written as its decimal text (:func:`template_marker`): cfn-lint refuses such a number in a
#: template's own ``Metadata`` (E4002), where it accepts one in a resource's.
SECONDS_FIELDS = (
    "visibility_timeout_s",
    "processing_p99_s",
    "max_processing_time_s",
    "lambda_timeout_s",
    "max_batching_window_s",
)


def template_marker(marker: dict[str, Any]) -> dict[str, Any]:
    """``marker`` as the template's own ``Metadata`` holds it (:data:`RESOURCE_MARKERS`): each of its
    :data:`SECONDS_FIELDS` that is no integer written as the shortest decimal text that reads back as the same float
    (``repr``: ``0.383`` as ``"0.383"``); integers, as every other field, as they are. :func:`resource_metadata`
    reads it back."""
    return {k: repr(v) if k in SECONDS_FIELDS and _fraction(v) else v for k, v in marker.items()}


def _fraction(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer()


def _read_template_marker(marker: Any) -> Any:
    """The marker :func:`template_marker` wrote, its numbers read back (``float``: the same float, to the last
    digit); a marker that is no object, as it is (its readers refuse it)."""
    if not isinstance(marker, dict):
        return marker
    return {k: _seconds(k, v) if k in SECONDS_FIELDS and isinstance(v, str) else v for k, v in marker.items()}


def _seconds(field: str, text: str) -> float:
    try:
        return float(text)
    except ValueError as error:
        raise ValueError(f"marker field {field}: {text!r} is no number of seconds") from error


def resource_metadata(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each resource's ``Metadata`` by logical id, with the markers the template holds for it under
    :data:`RESOURCE_MARKERS` merged in, read back as on a resource (:func:`template_marker`; a template of an earlier
    jobqueues has them on its resources only). A logical id those markers name that ``Resources`` lacks (a resource
    renamed after its job queue was built) is included.

    :raises ValueError: a number of seconds under :data:`RESOURCE_MARKERS` that is no decimal text.
    """
    merged = {logical_id: dict(r.get("Metadata") or {}) for logical_id, r in template.get("Resources", {}).items()}
    for logical_id, markers in ((template.get("Metadata") or {}).get(RESOURCE_MARKERS) or {}).items():
        merged.setdefault(logical_id, {}).update({k: _read_template_marker(m) for k, m in markers.items()})
    return merged
