"""The keys and version of the markers job types leave in their templates (written by :mod:`jobqueues.marker`,
read by :mod:`jobqueues.ops.discovery`): plain values, so the command reads them without ``aws_cdk``."""

from __future__ import annotations

#: Metadata key of a job queue's source queue resource: job type, construct path, queues, declared numbers.
QUEUE_MARKER = "jobqueues:job"
#: Metadata key of the consumer's resource (the Lambda function, the ECS service): its kind, resources, scaling.
CONSUMER_MARKER = "jobqueues:consumer"
#: Metadata key of an ``EcsJob``'s service built from the default image: the image's build directory, relative
#: to the app's directory (``jobqueues local up`` runs the handlers from there).
IMAGE_DIRECTORY_MARKER = "jobqueues:image_directory"
#: Bumped when a field changes meaning; readers refuse a newer one.
MARKER_VERSION = 1
