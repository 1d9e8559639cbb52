"""``MeasuredProfiles``: stack code reads the p99s that ``jobstats`` measured (its ``profiles.json``).

    profiles = MeasuredProfiles.load("profiles.json", max_age=Duration.days(30))
    JobQueue(self, "EmailSend", processing_p99=profiles.processing_p99(self, "EmailSend"))

Each stack reads its own deployment's profile, ``<stack name>/<job type>`` (the name its consumers write on their
EMF lines), so the same code in a Dev and a Prod Stage reads each stage's measurement; ``stack=`` names another.
Never a silent default: a profile missing from the file (a new Stage not measured yet), or measured on too few
samples, is a synth-time error, unless an explicit ``fallback`` is given, which is then used with a warning that
says which (``jobqueues:profileMissing``, ``jobqueues:profileTooSmall``); a malformed profile is an error whatever
the fallback. A profile whose data ends longer ago than ``max_age``, or one of lines that name no stack, gets a
warning annotation.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_cdk import Annotations, Duration
from constructs import Construct

from jobqueues import defaults
from jobqueues.declaration_warnings import PROFILE_MISSING, PROFILE_TOO_SMALL, PROFILE_WITHOUT_STACK, STALE_PROFILE
from jobqueues.errors import JobQueueError
from jobqueues.profiles_document import (
    PROFILES_FIELD,
    REGENERATE,
    document_problem,
    job_type_of,
    kind,
    p99_problem,
    profile_name,
    recommended_p99_s,
)
from jobqueues.registry import stack_of
from sqslease.emf import deployment_name


class MeasuredProfiles:
    """Per-deployment measurements from a ``jobstats`` profiles document (``STACK/JOB_TYPE`` -> profile).

    :param document: the parsed ``profiles.json``.
    :param source: where it came from, for messages.
    :param max_age: warn when a job type's data ends longer ago than this. Default:
        ``jobqueues.defaults.PROFILE_MAX_AGE_S``.
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
        #: When the measurements of the whole document end, if it says; a profile's own window comes first.
        self.generated_at = _time(document, "generated_at", lambda problem: self._malformed(None, problem))
        self.max_age_s = defaults.PROFILE_MAX_AGE_S if max_age is None else max_age.to_seconds()
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
    def deployments(self) -> list[str]:
        """The names of the profiles, ``STACK/JOB_TYPE`` (a job type alone: lines that named no stack), sorted."""
        return sorted(self.document[PROFILES_FIELD])

    def entry(self, job_type: str, stack: str) -> tuple[str, dict[str, Any]]:
        """The name and raw profile of ``job_type`` as stack ``stack`` deploys it (:func:`profile_name`); a missing
        one is a synth-time error naming what exists and the fixes."""
        profiles = self.document[PROFILES_FIELD]
        name = profile_name(profiles, stack, job_type)
        if name is None:
            missing, fixes = self._missing(job_type, stack)
            raise JobQueueError(f"{missing}: {', '.join(fixes)}, or declare processing_p99 explicitly")
        entry = profiles[name]
        if not isinstance(entry, dict):
            raise JobQueueError(f"{self.source}: profile {name!r} is {kind(entry)}, not an object: {REGENERATE}")
        return name, entry

    def _missing(self, job_type: str, stack: str) -> tuple[str, list[str]]:
        """What is missing (``stack`` has no profile of ``job_type``), and the fixes: measure it, or use another
        stack's measurement when the file has one."""
        profiles = self.document[PROFILES_FIELD]
        fixes = [f"run jobstats on logs of stack {stack}'s consumers"]
        # another stack's profile of the job type (a bare one would have been found): a new Stage may use it
        others = sorted(n for n, e in profiles.items() if isinstance(e, dict) and job_type_of(n, e) == job_type)
        if others:
            fixes.append(f"pass stack={others[0].rpartition('/')[0]!r} to use that stack's measurement")
        missing = f"no profile {deployment_name(stack, job_type)!r} in {self.source} (it has: "
        return f"{missing}{', '.join(self.deployments) or 'none'})", fixes

    def _malformed(self, name: str | None, problem: str) -> JobQueueError:
        where = self.source if name is None else f"{self.source}, profile {name!r}"
        return JobQueueError(f"{where}: {problem}: {REGENERATE}, or correct the field")

    def processing_p99(
        self, scope: Construct, job_type: str, *, fallback: Duration | None = None, stack: str | None = None
    ) -> Duration:
        """The measured p99 of ``job_type`` as a ``Duration`` (whole milliseconds, rounded up by jobstats).

        :param scope: a construct in the stack whose profile is read (the stack, or the job queue's parent); where
            warnings are annotated.
        :param fallback: used, with a warning, when the stack has no profile of ``job_type`` yet (a new Stage) or
            the profile refuses to recommend (too few samples); never for a malformed profile. Default none: both
            are errors.
        :param stack: the name of the stack whose measurement to use (e.g. a new Stage reading Prod's). Default:
            the name of ``scope``'s stack, as its consumers write it on their lines.
        """
        stack_name = stack if stack is not None else stack_of(scope).stack_name  # the CDK takes no token there
        if fallback is not None and profile_name(self.document[PROFILES_FIELD], stack_name, job_type) is None:
            missing, fixes = self._missing(job_type, stack_name)
            Annotations.of(scope).add_warning_v2(
                PROFILE_MISSING,
                f"{missing}: using the fallback processing_p99 of {fallback.to_human_string()} until it is measured: "
                f"{', or '.join(fixes)}",
            )
            return fallback
        name, entry = self.entry(job_type, stack_name)
        if name != deployment_name(stack_name, job_type):
            Annotations.of(scope).add_warning_v2(
                PROFILE_WITHOUT_STACK,
                f"{job_type}: the profile {name!r} in {self.source} was measured on lines that name no stack (an "
                f"sqslease that did not write one, or a consumer not told its stack): the samples of every stack "
                f"running {job_type} may be in it; profile lines of consumers that write Stack",
            )
        self._warn_if_stale(scope, name, entry)
        p99_s = self._p99_s(name, entry)
        if p99_s is None:
            reason = entry.get("refused")
            if reason is not None and not isinstance(reason, str):
                raise self._malformed(name, f"refused={reason!r} is {kind(reason)}, not a text")
            reason = reason or "no recommendation"
            if fallback is None:
                raise JobQueueError(
                    f"{self.source} has no usable p99 for {name!r}: {reason}; "
                    "or pass fallback=Duration... to use a declared value meanwhile"
                )
            Annotations.of(scope).add_warning_v2(
                PROFILE_TOO_SMALL,
                f"{name}: {reason}; using the fallback processing_p99 of {fallback.to_human_string()}",
            )
            return fallback
        return Duration.millis(round(p99_s * 1000))

    def _p99_s(self, name: str, entry: dict[str, Any]) -> float | None:
        """The recommended p99 in seconds, ``None`` when refused; anything else is an error naming the field."""
        problem = p99_problem(entry)
        if problem is not None:
            raise self._malformed(name, problem)
        return recommended_p99_s(entry)

    def _warn_if_stale(self, scope: Construct, name: str, entry: dict[str, Any]) -> None:
        window = entry.get("window")
        if window is not None and not isinstance(window, dict):
            raise self._malformed(name, f"window={window!r} is {kind(window)}, not an object")
        ended = _time(window or {}, "window.to", lambda problem: self._malformed(name, problem)) or self.generated_at
        if ended is None:
            return
        age_s = (self.now - ended).total_seconds()
        if age_s > self.max_age_s:
            Annotations.of(scope).add_warning_v2(
                STALE_PROFILE,
                f"{name}: the measurements in {self.source} end {age_s / 86_400:.0f} days ago (max_age "
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
