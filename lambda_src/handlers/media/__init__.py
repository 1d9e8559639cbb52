"""Media jobs run by ECS workers (``python -m sqslease.worker --handler media.transcode:handle``)."""
