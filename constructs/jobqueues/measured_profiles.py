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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, Duration
from constructs import Construct

from jobqueues.declaration_warnings import PROFILE_TOO_SMALL, STALE_PROFILE
from jobqueues.errors import JobQueueError
from jobqueues.profiles_document import REGENERATE, document_problem, kind, p99_problem, recommended_p99_s


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
        problem = document_problem(document, source)
        if problem is not None:
            raise JobQueueError(problem)
        self.document = document
        self.source = source
        #: When the measurements of the whole document end, if it says; a job type's own window comes first.
        self.generated_at = _time(document, "generated_at", lambda problem: self._malformed(None, problem))
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
        entry: Any = self.document["job_types"].get(job_type)
        if entry is None:
            raise JobQueueError(
                f"job type {job_type!r} is not in {self.source} (it has: {', '.join(self.job_types) or 'none'}): "
                "run jobstats on logs that include it, or declare processing_p99 explicitly"
            )
        if not isinstance(entry, dict):
            raise JobQueueError(f"{self.source}: job type {job_type!r} is {kind(entry)}, not an object: {REGENERATE}")
        return entry

    def _malformed(self, job_type: str | None, problem: str) -> JobQueueError:
        where = self.source if job_type is None else f"{self.source}, job type {job_type!r}"
        return JobQueueError(f"{where}: {problem}: {REGENERATE}, or correct the field")

    def processing_p99(self, scope: Construct, job_type: str, *, fallback: Duration | None = None) -> Duration:
        """The measured p99 of ``job_type`` as a ``Duration`` (whole milliseconds, rounded up by jobstats).

        :param scope: where warnings are annotated (the stack or the job queue's parent).
        :param fallback: used, with a warning, when the profile refuses to recommend (too few samples).
        """
        entry = self.entry(job_type)
        self._warn_if_stale(scope, job_type, entry)
        p99_s = self._p99_s(job_type, entry)
        if p99_s is None:
            reason = entry.get("refused")
            if reason is not None and not isinstance(reason, str):
                raise self._malformed(job_type, f"refused={reason!r} is {kind(reason)}, not a text")
            reason = reason or "no recommendation"
            if fallback is None:
                raise JobQueueError(
                    f"{self.source} has no usable p99 for {job_type!r}: {reason}; "
                    "or pass fallback=Duration... to use a declared value meanwhile"
                )
            Annotations.of(scope).add_warning_v2(
                PROFILE_TOO_SMALL,
                f"{job_type}: {reason}; using the fallback processing_p99 of {fallback.to_human_string()}",
            )
            return fallback
        return Duration.millis(round(p99_s * 1000))

    def _p99_s(self, job_type: str, entry: dict[str, Any]) -> float | None:
        """The recommended p99 in seconds, ``None`` when refused; anything else is an error naming the field."""
        problem = p99_problem(entry)
        if problem is not None:
            raise self._malformed(job_type, problem)
        return recommended_p99_s(entry)

    def _warn_if_stale(self, scope: Construct, job_type: str, entry: dict[str, Any]) -> None:
        window = entry.get("window")
        if window is not None and not isinstance(window, dict):
            raise self._malformed(job_type, f"window={window!r} is {kind(window)}, not an object")
        ended = _time(window or {}, "window.to", lambda problem: self._malformed(job_type, problem)) or (
            self.generated_at
        )
        if ended is None:
            return
        age_s = (self.now - ended).total_seconds()
        if age_s > self.max_age_s:
            Annotations.of(scope).add_warning_v2(
                STALE_PROFILE,
                f"{job_type}: the measurements in {self.source} end {age_s / 86_400:.0f} days ago (max_age "
                f"{self.max_age_s / 86_400:g} days): re-run jobstats on recent logs",
            )


def _time(holder: dict[str, Any], field: str, malformed: Callable[[str], JobQueueError]) -> dt.datetime | None:
    """The ISO 8601 time at ``field`` (a dotted name: its last part is the key in ``holder``); ``None`` if absent."""
    value = holder.get(field.rpartition(".")[2])
    if value is None:
        return None
    example = "e.g. 2026-11-20T00:00:00.000Z"
    if not isinstance(value, str):
        raise malformed(f"{field}={value!r} is {kind(value)}, not an ISO 8601 time ({example})")
    try:
        time = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise malformed(f"{field}={value!r} is not an ISO 8601 time ({example})") from None
    return time if time.tzinfo is not None else time.replace(tzinfo=dt.UTC)
