"""Which deployment (``STACK/JOB_TYPE``) a consumer's EMF line belongs to, for ``local up``'s summary and the chaos
report: the one whose queue the line's ``Queue`` names (what handed the message out), else the line's ``Stack`` and
``JobType`` (:func:`sqslease.emf.deployment_name`). Never the job type alone: a Dev and a Prod Stage run the same
job types, each on its own queue.
"""

from __future__ import annotations

import collections
import json
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from jobqueues.ops.discovery import JobType
from sqslease.emf import deployment_name


def queue_name(queue_url: str) -> str:
    """The queue's name: the last segment of its URL (hosts differ between the emulator, the proxy and AWS), what
    sqslease writes as a line's ``Queue``."""
    return urllib.parse.urlsplit(queue_url).path.rstrip("/").rsplit("/", 1)[-1]


def queue_deployments(queues: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """Queue name -> deployment name, from ``(deployment name, queue URL)`` pairs (a URL ``None``: left out)."""
    return {queue_name(url): name for name, url in queues if url is not None}


def deployment_of(record: Mapping[str, Any], queues: Mapping[str, str]) -> str | None:
    """The deployment of one parsed EMF line: its queue's (``queues``: :func:`queue_deployments`), else its stack
    and job type; ``None`` when the line names neither a known queue nor a job type."""
    queue = record.get("Queue")
    if isinstance(queue, str) and queue in queues:
        return queues[queue]
    job_type, stack = record.get("JobType"), record.get("Stack")
    if not isinstance(job_type, str) or not job_type:
        return None
    return deployment_name(stack if isinstance(stack, str) and stack else None, job_type)


def outcome_counts(streams: Iterable[Iterable[str]], job_types: Iterable[JobType]) -> dict[str, dict[str, int]]:
    """Deployment name -> outcome -> lines, from the consumers' output (each stream's lines; those that are not
    JSON objects are skipped)."""
    queues = queue_deployments((job.name, job.queue_url) for job in job_types)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for lines in streams:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            name = deployment_of(record, queues) if isinstance(record, dict) else None
            if name is not None:
                counts[name][str(record.get("Outcome"))] += 1
    return {name: dict(outcomes) for name, outcomes in counts.items()}
