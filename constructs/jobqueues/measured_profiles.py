"""``MeasuredProfiles``: stack code reads the p99s that ``jobstats`` measured (its ``profiles.json``).

    profiles = MeasuredProfiles.load("profiles.json", max_age=Duration.days(30))
    JobQueue(self, "EmailSend", processing_p99=profiles.processing_p99(self, "EmailSend"))

Never a silent default: a job type missing from the file, or measured on too few samples, is a synth-time
error (unless an explicit ``fallback`` is given, which is then used with a warning); a profile whose data
ends longer ago than ``max_age`` gets a warning annotation.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, Duration
from constructs import Construct

from jobqueues.errors import JobQueueError

SUPPORTED_SCHEMA_VERSION = 1


class MeasuredProfiles:
    """Per-job-type measurements from a ``jobstats`` profiles document.

    :param document: the parsed ``profiles.json``.
    :param source: where it came from, for messages.
    :param max_age: warn when a job type's data ends longer ago than this. Default 30 days.
    :param now: the current time (tests). Default now, UTC.
    """

    def __init__(
        self,
        document: dict[str, Any],
        source: str = "profiles.json",
        *,
        max_age: Duration | None = None,
        now: dt.datetime | None = None,
    ) -> None:
        version = document.get("schema_version")
        if version != SUPPORTED_SCHEMA_VERSION or not isinstance(document.get("job_types"), dict):
            raise JobQueueError(
                f"{source} is not a jobstats profiles document (schema_version {version!r}, expected "
                f"{SUPPORTED_SCHEMA_VERSION}): regenerate it with `python -m jobstats profile`"
            )
        self.document = document
        self.source = source
        self.max_age_s = (max_age or Duration.days(30)).to_seconds()
        self.now = now or dt.datetime.now(dt.UTC)

    @classmethod
    def load(
        cls, path: str | Path, *, max_age: Duration | None = None, now: dt.datetime | None = None
    ) -> MeasuredProfiles:
        """Read ``profiles.json``; a missing or unreadable file is a synth-time error."""
        path = Path(path)
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError as error:
            raise JobQueueError(
                f"{path} not found: run `python -m jobstats profile LOGS --out {path}` first, "
                "or declare processing_p99 explicitly"
            ) from error
        except json.JSONDecodeError as error:
            raise JobQueueError(f"{path} is not valid JSON ({error}): regenerate it with jobstats") from error
        return cls(document, str(path), max_age=max_age, now=now)

    @property
    def job_types(self) -> list[str]:
        return sorted(self.document["job_types"])

    def entry(self, job_type: str) -> dict[str, Any]:
        """The raw profile of a job type; a missing one is a synth-time error."""
        entry: dict[str, Any] | None = self.document["job_types"].get(job_type)
        if entry is None:
            raise JobQueueError(
                f"job type {job_type!r} is not in {self.source} (it has: {', '.join(self.job_types) or 'none'}): "
                "run jobstats on logs that include it, or declare processing_p99 explicitly"
            )
        return entry

    def processing_p99(self, scope: Construct, job_type: str, *, fallback: Duration | None = None) -> Duration:
        """The measured p99 of ``job_type`` as a ``Duration`` (whole milliseconds, rounded up by jobstats).

        :param scope: where warnings are annotated (the stack or the job queue's parent).
        :param fallback: used, with a warning, when the profile refuses to recommend (too few samples).
        """
        entry = self.entry(job_type)
        self._warn_if_stale(scope, job_type, entry)
        p99_s = entry.get("recommended_processing_p99_s")
        if p99_s is None:
            reason = entry.get("refused") or "no recommendation"
            if fallback is None:
                raise JobQueueError(
                    f"{self.source} has no usable p99 for {job_type!r}: {reason}; "
                    "or pass fallback=Duration... to use a declared value meanwhile"
                )
            Annotations.of(scope).add_warning_v2(
                "jobqueues:ProfileTooSmall",
                f"{job_type}: {reason}; using the fallback processing_p99 of {fallback.to_human_string()}",
            )
            return fallback
        return Duration.millis(round(p99_s * 1000))

    def _warn_if_stale(self, scope: Construct, job_type: str, entry: dict[str, Any]) -> None:
        ended = (entry.get("window") or {}).get("to") or self.document.get("generated_at")
        if not ended:
            return
        age_s = (self.now - dt.datetime.fromisoformat(ended.replace("Z", "+00:00"))).total_seconds()
        if age_s > self.max_age_s:
            Annotations.of(scope).add_warning_v2(
                "jobqueues:StaleProfile",
                f"{job_type}: the measurements in {self.source} end {age_s / 86_400:.0f} days ago (max_age "
                f"{self.max_age_s / 86_400:g} days): re-run jobstats on recent logs",
            )
