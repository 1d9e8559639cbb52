"""Stack code reading jobstats' profiles.json: errors and warnings at synth, never a silent default."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Annotations, Match, Template
from cdk_helpers import new_stack

from jobqueues import JobQueue, JobQueueError, MeasuredProfiles

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def document(**job_types: dict) -> dict:
    return {"schema_version": 1, "generated_at": "2026-11-21T00:00:00.000Z", "job_types": job_types}


def entry(p99_s: float | None, ended: str = "2026-11-20T00:00:00.000Z", refused: str | None = None) -> dict:
    return {
        "count": 5000 if p99_s else 12,
        "p99_ms": (p99_s or 1) * 1000,
        "recommended_processing_p99_s": p99_s,
        "recommended_visibility_timeout_s": None,
        "refused": refused,
        "window": {"from": "2026-11-01T00:00:00.000Z", "to": ended},
    }


def test_measured_p99_drives_the_visibility_timeout(tmp_path: Path) -> None:
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps(document(VideoTranscode=entry(240.0))))
    stack = new_stack()
    profiles = MeasuredProfiles.load(path, now=NOW)
    JobQueue(stack, "VideoTranscode", processing_p99=profiles.processing_p99(stack, "VideoTranscode"))
    Template.from_stack(stack).has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 480})
    Annotations.from_stack(stack).has_no_warning("*", Match.any_value())


def test_missing_job_type_is_a_synth_error_naming_what_exists() -> None:
    profiles = MeasuredProfiles(document(EmailSend=entry(1.5)), now=NOW)
    with pytest.raises(JobQueueError, match=r"'Thumbnails' is not in profiles.json \(it has: EmailSend\)"):
        profiles.processing_p99(new_stack(), "Thumbnails")


def test_too_few_samples_is_an_error_or_an_explicit_fallback_with_a_warning() -> None:
    profiles = MeasuredProfiles(document(Rare=entry(None, refused="only 12 messages (at least 1000 ...)")), now=NOW)
    with pytest.raises(JobQueueError, match="only 12 messages"):
        profiles.processing_p99(new_stack(), "Rare")
    stack = new_stack()
    assert profiles.processing_p99(stack, "Rare", fallback=Duration.seconds(20)).to_seconds() == 20
    Annotations.from_stack(stack).has_warning("/Test", Match.string_like_regexp("using the fallback"))


def test_stale_profile_warns(tmp_path: Path) -> None:
    profiles = MeasuredProfiles(document(EmailSend=entry(1.5, ended="2026-09-01T00:00:00.000Z")), now=NOW)
    stack = new_stack()
    assert profiles.processing_p99(stack, "EmailSend").to_milliseconds() == 1500
    Annotations.from_stack(stack).has_warning("/Test", Match.string_like_regexp("end 82 days ago"))
    fresh = MeasuredProfiles(
        document(EmailSend=entry(1.5, ended="2026-09-01T00:00:00.000Z")), max_age=Duration.days(90), now=NOW
    )
    quiet = new_stack()
    fresh.processing_p99(quiet, "EmailSend")
    Annotations.from_stack(quiet).has_no_warning("*", Match.any_value())


def test_missing_or_foreign_file_is_a_synth_error(tmp_path: Path) -> None:
    with pytest.raises(JobQueueError, match="not found: run `python -m jobstats profile"):
        MeasuredProfiles.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(JobQueueError, match="not valid JSON"):
        MeasuredProfiles.load(bad)
    bad.write_text(json.dumps({"something": "else"}))
    with pytest.raises(JobQueueError, match="not a jobstats profiles document"):
        MeasuredProfiles.load(bad)


def test_a_real_jobstats_profile_with_millisecond_p99s_drives_job_queues(spark: object, tmp_path: Path) -> None:
    """EMF lines as sqslease writes them -> `python -m jobstats profile` -> MeasuredProfiles -> JobQueue."""
    import io
    import random

    from jobstats.__main__ import main as jobstats_main
    from sqslease.emf import EmfLogger

    lines = io.StringIO()
    emf = EmfLogger(lines)
    rng = random.Random(7)
    started = int(dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp() * 1000)
    for i in range(3000):
        for job_type, scale_ms in (("EmailSend", 120.0), ("Resize", 2_300.0)):
            emf.record(
                job_type=job_type,
                queue=job_type,
                message_id=f"{job_type}-{i}",
                processing_ms=rng.lognormvariate(0, 0.5) * scale_ms,
                outcome="success",
                receive_count=1,
                extensions=0,
                lease_lost=False,
                timestamp_ms=started + i * 1000,
            )
    logs = tmp_path / "logs.jsonl"
    logs.write_text(lines.getvalue())
    out = tmp_path / "profiles.json"
    assert jobstats_main(["profile", str(logs), "--out", str(out), "--min-samples", "1000"]) == 0

    profiles = MeasuredProfiles.load(out, now=NOW)
    stack = new_stack()
    vts = {}
    for job_type in ("EmailSend", "Resize"):
        p99 = profiles.processing_p99(stack, job_type)
        assert not float(p99.to_seconds(integral=False)).is_integer()  # milliseconds, as jobstats writes them
        vts[job_type] = JobQueue(stack, job_type, processing_p99=p99).visibility_timeout.to_seconds()
    template = Template.from_stack(stack)
    measured = json.loads(out.read_text())["job_types"]
    assert vts["EmailSend"] == 10  # the floor
    assert vts["Resize"] == math.ceil(2 * measured["Resize"]["recommended_processing_p99_s"])
    template.has_resource_properties(
        "AWS::SQS::Queue", {"QueueName": "Test-Resize", "VisibilityTimeout": vts["Resize"]}
    )


MALFORMED_ENTRIES = [
    ("p99 as a string", {"recommended_processing_p99_s": "1.5"}, "recommended_processing_p99_s='1.5' is a str"),
    ("negative p99", {"recommended_processing_p99_s": -2.0}, "recommended_processing_p99_s=-2.0 is not positive"),
    ("NaN p99", {"recommended_processing_p99_s": math.nan}, "recommended_processing_p99_s=nan is not positive"),
    ("bool p99", {"recommended_processing_p99_s": True}, "recommended_processing_p99_s=True is a bool"),
    ("bad date", {"window": {"from": "x", "to": "yesterday"}}, "window.to='yesterday' is not an ISO 8601 time"),
    ("numeric date", {"window": {"to": 1700000000}}, "window.to=1700000000 is an int, not an ISO 8601 time"),
    ("window not an object", {"window": "last week"}, "window='last week' is a str, not an object"),
    ("refusal not text", {"recommended_processing_p99_s": None, "refused": 12}, "refused=12 is an int"),
    ("missing p99", {"recommended_processing_p99_s": ...}, "has no recommended_processing_p99_s"),
]


@pytest.mark.parametrize(("case", "change", "message"), MALFORMED_ENTRIES, ids=[c[0] for c in MALFORMED_ENTRIES])
def test_a_malformed_profile_is_a_synth_error_naming_file_job_type_field_and_fix(
    tmp_path: Path, case: str, change: dict, message: str
) -> None:
    profile = {**entry(1.5), **change}
    profile = {k: v for k, v in profile.items() if v is not ...}
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps(document(EmailSend=profile)))
    with pytest.raises(JobQueueError) as raised:
        MeasuredProfiles.load(path, now=NOW).processing_p99(new_stack(), "EmailSend")
    text = str(raised.value)
    assert str(path) in text and "'EmailSend'" in text and message in text, text
    assert "regenerate it with `python -m jobstats profile`" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "is a list, not a jobstats profiles document"),
        ('"profiles"', "is a str, not a jobstats profiles document"),
        ('{"schema_version": 1, "job_types": {"EmailSend": [1.5]}}', "job type 'EmailSend' is a list, not an object"),
        ('{"schema_version": 1}', "has no job_types object (missing), so it is not a jobstats profiles document"),
        ('{"schema_version": 2, "job_types": {}}', "of a supported version (schema_version 2, expected 1)"),
        ('{"schema_version": 1, "generated_at": "soon", "job_types": {}}', "generated_at='soon' is not an ISO 8601"),
    ],
)
def test_a_malformed_document_is_a_synth_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "profiles.json"
    path.write_text(content)
    with pytest.raises(JobQueueError) as raised:
        MeasuredProfiles.load(path, now=NOW).processing_p99(new_stack(), "EmailSend")
    assert str(path) in str(raised.value) and message in str(raised.value), str(raised.value)
