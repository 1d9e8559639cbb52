"""Stack code reading jobstats' profiles.json: each stack its own deployment's profile (``STACK/JOB_TYPE``), errors
and warnings at synth, never a silent default."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Annotations, Match, Template
from cdk_helpers import ENV, new_stack

from jobqueues import JobQueue, JobQueueError, MeasuredProfiles

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def document(profiles: dict[str, dict]) -> dict:
    """A profiles document holding ``profiles`` by name (``STACK/JOB_TYPE``; new_stack()'s stack is ``Test``)."""
    return {"schema_version": 2, "generated_at": "2026-11-21T00:00:00.000Z", "deployments": profiles}


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
    path.write_text(json.dumps(document({"Test/VideoTranscode": entry(240.0)})))
    stack = new_stack()
    profiles = MeasuredProfiles.load(path, now=NOW)
    JobQueue(stack, "VideoTranscode", processing_p99=profiles.processing_p99(stack, "VideoTranscode"))
    Template.from_stack(stack).has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 480})
    Annotations.from_stack(stack).has_no_warning("*", Match.any_value())


def test_missing_job_type_is_a_synth_error_naming_what_exists() -> None:
    profiles = MeasuredProfiles(document({"Test/EmailSend": entry(1.5)}), now=NOW)
    with pytest.raises(
        JobQueueError, match=r"no profile 'Test/Thumbnails' in profiles.json \(it has: Test/EmailSend\)"
    ):
        profiles.processing_p99(new_stack(), "Thumbnails")


def test_too_few_samples_is_an_error_or_an_explicit_fallback_with_a_warning() -> None:
    profiles = MeasuredProfiles(
        document({"Test/Rare": entry(None, refused="only 12 messages (at least 1000 ...)")}), now=NOW
    )
    with pytest.raises(JobQueueError, match="only 12 messages"):
        profiles.processing_p99(new_stack(), "Rare")
    stack = new_stack()
    assert profiles.processing_p99(stack, "Rare", fallback=Duration.seconds(20)).to_seconds() == 20
    Annotations.from_stack(stack).has_warning("/Test", Match.string_like_regexp("using the fallback"))


def test_stale_profile_warns(tmp_path: Path) -> None:
    profiles = MeasuredProfiles(document({"Test/EmailSend": entry(1.5, ended="2026-09-01T00:00:00.000Z")}), now=NOW)
    stack = new_stack()
    assert profiles.processing_p99(stack, "EmailSend").to_milliseconds() == 1500
    Annotations.from_stack(stack).has_warning("/Test", Match.string_like_regexp("end 82 days ago"))
    fresh = MeasuredProfiles(
        document({"Test/EmailSend": entry(1.5, ended="2026-09-01T00:00:00.000Z")}), max_age=Duration.days(90), now=NOW
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
                stack="Test",  # what the constructs tell a consumer of stack Test
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
    measured = json.loads(out.read_text())["deployments"]
    assert vts["EmailSend"] == 10  # the floor
    assert vts["Resize"] == math.ceil(2 * measured["Test/Resize"]["recommended_processing_p99_s"])
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
    path.write_text(json.dumps(document({"Test/EmailSend": profile})))
    with pytest.raises(JobQueueError) as raised:
        MeasuredProfiles.load(path, now=NOW).processing_p99(new_stack(), "EmailSend")
    text = str(raised.value)
    assert str(path) in text and "profile 'Test/EmailSend'" in text and message in text, text
    assert "regenerate it with `python -m jobstats profile`" in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "is a list, not a jobstats profiles document"),
        ('"profiles"', "is a str, not a jobstats profiles document"),
        ('{"schema_version": 2, "deployments": {"Test/EmailSend": [1.5]}}', "profile 'Test/EmailSend' is a list"),
        ('{"schema_version": 2}', "has no deployments object (missing), so it is not a jobstats profiles document"),
        ('{"schema_version": 3, "deployments": {}}', "of a supported version (schema_version 3, expected 2)"),
        ('{"schema_version": 2, "generated_at": "soon", "deployments": {}}', "generated_at='soon' is not an ISO 8601"),
        # version 1's profiles are per job type alone: they mix every stack's samples, so they are refused
        (
            '{"schema_version": 1, "job_types": {"EmailSend": {}}}',
            "is a schema_version 1 profiles document, whose profiles are per job type: they mix the samples of every "
            "stack that runs one (a Dev and a Prod Stage); regenerate it with `python -m jobstats profile`",
        ),
    ],
)
def test_a_malformed_document_is_a_synth_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "profiles.json"
    path.write_text(content)
    with pytest.raises(JobQueueError) as raised:
        MeasuredProfiles.load(path, now=NOW).processing_p99(new_stack(), "EmailSend")
    assert str(path) in str(raised.value) and message in str(raised.value), str(raised.value)


def two_stages() -> tuple[cdk.Stack, cdk.Stack]:
    """Stack TeamC deployed by a Dev and a Prod Stage: CloudFormation names Dev-TeamC and Prod-TeamC."""
    app = cdk.App()
    dev, prod = (cdk.Stack(cdk.Stage(app, stage, env=ENV), "TeamC") for stage in ("Dev", "Prod"))
    return dev, prod


def test_each_stage_s_stack_reads_its_own_deployment_s_profile() -> None:
    # GIVEN one job type measured in Dev (p99 1 s) and in Prod (p99 30 s)
    profiles = MeasuredProfiles(
        document({"Dev-TeamC/Exports": entry(1.0), "Prod-TeamC/Exports": entry(30.0), "Dev-TeamC/Other": entry(1.0)}),
        now=NOW,
    )
    # WHEN each Stage's stack reads it with the same code (no stack named: the scope's own)
    vts = {}
    stacks = two_stages()
    for stack in stacks:
        exports = JobQueue(stack, "Exports", processing_p99=profiles.processing_p99(stack, "Exports"))
        vts[stack.stack_name] = exports.visibility_timeout.to_seconds()
    # THEN each gets its own deployment's measurement, without a warning
    assert vts == {"Dev-TeamC": 10, "Prod-TeamC": 60}
    for stack in stacks:
        Annotations.from_stack(stack).has_no_warning("*", Match.any_value())
    assert profiles.deployments == ["Dev-TeamC/Exports", "Dev-TeamC/Other", "Prod-TeamC/Exports"]


def test_a_new_stage_reads_another_stage_s_profile_only_when_told() -> None:
    profiles = MeasuredProfiles(document({"Prod-TeamC/Exports": entry(30.0)}), now=NOW)
    staging = cdk.Stack(cdk.Stage(cdk.App(), "Staging", env=ENV), "TeamC")
    with pytest.raises(JobQueueError) as missing:
        profiles.processing_p99(staging, "Exports")
    assert str(missing.value) == (
        "no profile 'Staging-TeamC/Exports' in profiles.json (it has: Prod-TeamC/Exports): run jobstats on logs of "
        "stack Staging-TeamC's consumers, pass stack='Prod-TeamC' to use that stack's measurement, or declare "
        "processing_p99 explicitly"
    )
    scope = cdk.Stack(cdk.Stage(cdk.App(), "Staging", env=ENV), "TeamC")
    inner = JobQueue(scope, "Emails", processing_p99=Duration.seconds(1))  # any scope in the stack names it
    assert profiles.processing_p99(inner, "Exports", stack="Prod-TeamC").to_seconds() == 30


def test_a_profile_of_lines_that_name_no_stack_is_used_with_a_warning() -> None:
    # GIVEN a profile measured on lines of consumers not told their stack (an older sqslease): keyed by job type alone
    profiles = MeasuredProfiles(document({"Exports": entry(2.0), "Prod-TeamC/Exports": entry(30.0)}), now=NOW)
    dev, prod = two_stages()
    # WHEN a stack without a profile of its own reads it THEN it is used, with a warning that says why it may mix
    assert profiles.processing_p99(dev, "Exports").to_seconds() == 2
    Annotations.from_stack(dev).has_warning(
        "/Dev/TeamC", Match.string_like_regexp("Exports: the profile 'Exports' in profiles.json was measured on lines")
    )
    # ... and a stack's own profile always comes first
    assert profiles.processing_p99(prod, "Exports").to_seconds() == 30
    Annotations.from_stack(prod).has_no_warning("*", Match.any_value())


def test_a_new_stage_without_measurements_uses_the_fallback_with_a_warning_naming_the_missing_profile() -> None:
    # GIVEN a file measured in Prod only, and a new Staging Stage with a declared fallback
    profiles = MeasuredProfiles(document({"Prod-TeamC/Exports": entry(30.0)}), now=NOW)
    staging = cdk.Stack(cdk.Stage(cdk.App(), "Staging", env=ENV), "TeamC")
    # WHEN its stack reads its own profile, which does not exist yet
    p99 = profiles.processing_p99(staging, "Exports", fallback=Duration.seconds(2))
    exports = JobQueue(staging, "Exports", processing_p99=p99)
    # THEN the fallback drives the job queue, with a warning of its own kind that names the missing profile, what the
    # file has and how to measure it (or use Prod's)
    assert p99.to_seconds() == 2 and exports.visibility_timeout.to_seconds() == 10
    Annotations.from_stack(staging).has_warning(
        "/Staging/TeamC",
        Match.string_like_regexp(
            r"no profile 'Staging-TeamC/Exports' in profiles.json \(it has: Prod-TeamC/Exports\): using the fallback "
            r"processing_p99 of 2 seconds until it is measured: run jobstats on logs of stack Staging-TeamC's "
            r"consumers, or pass stack='Prod-TeamC' to use that stack's measurement \[ack: jobqueues:profileMissing\]"
        ),
    )


def test_a_fallback_never_covers_a_malformed_profile() -> None:
    profiles = MeasuredProfiles(document({"Test/Exports": {"count": "many"}}), now=NOW)
    with pytest.raises(JobQueueError, match="profile 'Test/Exports'"):
        profiles.processing_p99(new_stack(), "Exports", fallback=Duration.seconds(2))
    broken = MeasuredProfiles(document({"Test/Exports": ["not", "an", "object"]}), now=NOW)
    with pytest.raises(JobQueueError, match="profile 'Test/Exports' is a list"):
        broken.processing_p99(new_stack(), "Exports", fallback=Duration.seconds(2))
