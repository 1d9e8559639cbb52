"""``jobqueues drift``: the deployed visibility timeouts of ``tests/ops_app`` against a real jobstats
``profiles.json`` (EMF lines written by sqslease's own ``EmfLogger``, profiled by jobstats on the session's
SparkSession), and the pure comparison on its own.

GIVEN measurements that disagree with the stack (Invoices' p99 is 8 s where it declared a p99 giving a 10 s VT),
WHEN drift runs, THEN it exits 1 and prints the change to make; GIVEN measurements that agree, it exits 0.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cdk_helpers import lint_template
from emulator_fixtures import NEEDS_CDK, OPS_APP_DIR, Deployment

from jobqueues.cli import main
from jobqueues.ops.discovery import JobType, LambdaConsumer
from jobqueues.ops.drift import (
    NO_PROFILE,
    NO_RECOMMENDATION,
    NOT_DEPLOYED,
    OK,
    TOO_LONG,
    TOO_SHORT,
    compare,
    compare_all,
)
from jobqueues.ops.errors import OpsError
from jobqueues.ops.profiles import load_profiles, profiles_outside
from jobqueues.ops.queues import Deployed
from jobqueues.profiles_document import PROFILES_FIELD, SUPPORTED_SCHEMA_VERSION
from sqslease.emf import EmfLogger

JOBQUEUES = Path(sys.executable).parent / "jobqueues"
START_MS = 1_795_000_000_000


def emf_lines(name: str, durations_ms: list[float]) -> str:
    """One success line per duration, written by sqslease's EmfLogger as a consumer of deployment ``name``
    (``STACK/JOB_TYPE``, or a job type alone: a consumer not told its stack) writes it."""
    stack, _, job_type = name.rpartition("/")
    out = io.StringIO()
    logger = EmfLogger(out)
    for i, duration in enumerate(durations_ms):
        logger.record(
            job_type=job_type,
            stack=stack or None,
            queue=f"https://sqs.us-east-1.amazonaws.com/123456789012/{job_type}",
            message_id=f"{job_type}-{i}",
            processing_ms=duration,
            outcome="success",
            receive_count=1,
            extensions=0,
            lease_lost=False,
            timestamp_ms=START_MS + i * 1000,
        )
    return out.getvalue()


def spread(low_ms: float, high_ms: float, count: int = 1200) -> list[float]:
    """``count`` durations from ``low_ms`` to ``high_ms`` evenly: the p99 is near ``high_ms``."""
    return [low_ms + (high_ms - low_ms) * i / (count - 1) for i in range(count)]


def write_profiles(spark: Any, directory: Path, lines: dict[str, list[float]]) -> Path:
    from jobstats.pipeline import profile
    from jobstats.profiles import write_document

    logs = directory / "logs"
    logs.mkdir(parents=True)
    for name, durations in lines.items():
        (logs / f"{name.replace('/', '-')}.log").write_text(emf_lines(name, durations))
    path = directory / "profiles.json"
    write_document(profile(spark, [str(logs)]), path)
    return path


#: The lines behind the two jobstats documents the command's tests read: measurements that disagree with the ops app
#: (Invoices' p99 8 s where its VT is 10 s) and ones that agree.
PROFILE_LINES: dict[str, dict[str, list[float]]] = {
    "disagree": {
        "Prod-Billing/Invoices": spread(2_000, 8_000),
        "OpsShared/Emails": spread(100, 1_500),
        "Ghost": spread(10, 50),
    },
    "agree": {
        "Prod-Billing/Invoices": spread(500, 2_500),
        "OpsShared/Emails": spread(100, 1_500),
        "Prod-Billing/Receipts": spread(50, 400),
    },
}
#: Those documents as jobstats wrote them from :data:`PROFILE_LINES`, kept beside this module so that the ops app's
#: tests need no SparkSession of their own (a second JVM in their process): the test below profiles the lines again
#: on the session's SparkSession and fails when jobstats writes anything else (``JOBQUEUES_PIN_TEMPLATES=1`` writes
#: them again).
PROFILES_DIR = Path(__file__).resolve().parent / "drift_profiles"


@pytest.fixture
def profiles() -> dict[str, Path]:
    """Two real jobstats documents: one that disagrees with the ops app, one that agrees."""
    return {name: PROFILES_DIR / f"{name}.json" for name in PROFILE_LINES}


def test_the_kept_profiles_are_what_jobstats_writes_from_their_lines(
    spark: Any, tmp_path: Path, profiles: dict[str, Path]
) -> None:
    for name, lines in PROFILE_LINES.items():
        written = json.loads(write_profiles(spark, tmp_path / name, lines).read_text())
        if os.environ.get("JOBQUEUES_PIN_TEMPLATES") == "1":  # the lines' directory was this test's own
            profiles[name].write_text(json.dumps({**written, "inputs": ["logs"]}, indent=2) + "\n")
        kept = json.loads(profiles[name].read_text())
        for document in (written, kept):  # when, and from which files: the rest is the measurement
            document.pop("generated_at"), document.pop("inputs")
        assert written == kept, f"{profiles[name]} is not what jobstats writes now (JOBQUEUES_PIN_TEMPLATES=1)"


def measured_p99_ms(path: Path, name: str) -> int:
    return round(json.loads(path.read_text())["deployments"][name]["recommended_processing_p99_s"] * 1000)


def p99_code(p99_ms: int) -> str:
    """How drift writes a p99 of ``p99_ms`` (a profile's measurement, around 8 s): whole seconds, else millis."""
    return f"Duration.seconds({p99_ms // 1000})" if p99_ms % 1000 == 0 else f"Duration.millis({p99_ms})"


@NEEDS_CDK
def test_drift_exits_1_and_prints_the_fix(
    ops_deployment: Deployment, profiles: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url = ops_deployment.server.endpoint
    status = main(["--endpoint-url", url, "drift", "--profiles", str(profiles["disagree"])])
    out = capsys.readouterr()
    assert status == 1, out
    p99_ms = measured_p99_ms(profiles["disagree"], "Prod-Billing/Invoices")
    assert 7_900 <= p99_ms <= 8_100
    assert f"change: processing_p99={p99_code(p99_ms)} on job type Invoices" in out.out
    assert "Prod-Billing/Invoices: VT 10 s is below the expected 16 s" in out.out
    assert "drift: 1 of 4 job types (Prod-Billing/Invoices)" in out.err

    # --json: every job type, the one not deployed and the one without a profile included
    assert main(["--endpoint-url", url, "drift", "--profiles", str(profiles["disagree"]), "--json"]) == 1
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["Prod-Billing/Invoices"]["status"] == TOO_SHORT and rows["Prod-Billing/Invoices"]["drifted"]
    assert rows["OpsShared/Emails"]["status"] == OK and rows["OpsShared/Emails"]["visibility_timeout_s"] == 10
    assert rows["Prod-Billing/Receipts"]["status"] == NO_PROFILE
    assert rows["Ghost"]["status"] == NOT_DEPLOYED


@NEEDS_CDK
def test_drift_exits_0_when_the_measurements_agree(ops_deployment: Deployment, profiles: dict[str, Path]) -> None:
    # Through the console script, as a CI step runs it.
    done = subprocess.run(
        [
            str(JOBQUEUES),
            "--endpoint-url",
            ops_deployment.server.endpoint,
            "drift",
            "--profiles",
            str(profiles["agree"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done
    assert "Prod-Billing/Receipts" in done.stdout and "too_" not in done.stdout


@NEEDS_CDK
def test_drift_of_the_synthesized_app(
    profiles: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # --app: the app in the current directory, synthesized with its own cdk.json; no AWS asked (the shell's
    # endpoint is one nothing listens on: a request would be status 3; an --endpoint-url option is refused)
    monkeypatch.chdir(OPS_APP_DIR)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://localhost:1")
    status = main(["drift", "--profiles", str(profiles["disagree"]), "--app", f"{sys.executable} app.py"])
    out = capsys.readouterr().out
    assert status == 1
    assert f"processing_p99={p99_code(measured_p99_ms(profiles['disagree'], 'Prod-Billing/Invoices'))}" in out


@NEEDS_CDK
def test_drift_of_one_stack_and_an_unknown_one(
    ops_deployment: Deployment, profiles: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url = ops_deployment.server.endpoint
    args = ["--endpoint-url", url, "drift", "--profiles", str(profiles["disagree"])]
    # --stack narrows: the profile of Invoices (Prod-Billing, a stack not searched) is not compared, and is not
    # "not deployed" either: it is left out, and a note says so; a profile that names no stack is still listed
    assert main([*args, "--stack", "OpsShared", "--tolerance", "0", "--json"]) == 0
    out = capsys.readouterr()
    rows = {row["name"]: row for row in json.loads(out.out)}
    assert rows["OpsShared/Emails"]["reason"] == "within 0% above the expected 10 s"
    assert sorted(rows) == ["Ghost", "OpsShared/Emails"] and rows["Ghost"]["status"] == NOT_DEPLOYED
    assert out.err == "note: not compared: 1 profile of a stack not searched (--stack): Prod-Billing/Invoices\n"
    # an unknown stack names those that exist, status 2
    assert main([*args, "--stack", "Nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no deployed stack Nope in region ") and "OpsShared" in err and "Prod-Billing" in err


def test_a_bad_profiles_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "profiles.json"
    bad.write_text(json.dumps({"schema_version": 9, "deployments": {}}))
    # bad input is status 2, as elsewhere: 1 is what drift found, which a CI step must tell apart
    assert main(["drift", "--profiles", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad} is not a jobstats profiles document of a supported version (schema_version 9, expected 2): "
        "regenerate it with `python -m jobstats profile`\n"
    )
    assert main(["drift", "--profiles", str(tmp_path / "missing.json")]) == 2
    assert "not found: run `python -m jobstats profile LOGS" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["drift", "--profiles", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad} is not valid JSON")
    # a mistyped number is an error naming the job type and the field, not "no recommendation"
    profile = {"OpsShared/Emails": {"recommended_processing_p99_s": "2"}}
    bad.write_text(json.dumps({"schema_version": 2, "deployments": profile}))
    assert main(["drift", "--profiles", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}, profile 'OpsShared/Emails': recommended_processing_p99_s='2' is a str, not a number of "
        "seconds, e.g. 1.5: regenerate it with `python -m jobstats profile`, or correct the field\n"
    )


@pytest.mark.parametrize(
    "aws_options",
    [
        ["--endpoint-url", "http://localhost:1"],
        ["--region", "eu-west-1"],
        ["--profile", "team"],
        ["--endpoint-url", "http://localhost:1", "--region", "eu-west-1"],
    ],
)
@pytest.mark.parametrize("before_the_command", [False, True])
def test_app_refuses_the_options_of_a_deployment(
    aws_options: list[str], before_the_command: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN --app (the synthesized app, no AWS) with an option that only a deployment's reading uses
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": 2, "deployments": {}}))
    drift = ["drift", "--profiles", str(profiles), "--app", f"python {tmp_path / 'nosuch.py'}"]
    argv = [*aws_options, *drift] if before_the_command else [*drift, *aws_options]
    # WHEN drift runs THEN it is refused as --stack is, one line, status 2, before any synth
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    given = ", ".join(o for o in aws_options if o.startswith("--"))
    assert lines == [f"error: {given}: not with --app, which synthesizes the app and reads no deployment"], lines


def test_app_refuses_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": 2, "deployments": {}}))
    assert main(["drift", "--profiles", str(profiles), "--app", "python app.py", "--stack", "S"]) == 2
    assert capsys.readouterr().err == (
        "error: --stack reads deployed stacks, --app synthesizes the app: pass one of them\n"
    )


@NEEDS_CDK
def test_an_app_that_does_not_synthesize_is_bad_input_not_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a valid profiles file and an --app that fails (a missing script)
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": 2, "deployments": {}}))
    monkeypatch.chdir(OPS_APP_DIR)
    # WHEN drift synthesizes it THEN the status is 2, bad input, which a CI step tells apart from drift's 1
    assert main(["drift", "--profiles", str(profiles), "--app", f"python {tmp_path / 'nosuch.py'}"]) == 2
    assert capsys.readouterr().err.startswith("error: the app ")


# The comparison alone, without a network.

ECS_JOB = JobType("Render", "S", "S/Render", "url", "dlq", processing_p99_s=5.0)
LAMBDA_JOB = JobType(
    "Thumbs",
    "S",
    "S/Thumbs",
    "url",
    "dlq",
    lambda_timeout_s=30,
    max_batching_window_s=5,
    consumer=LambdaConsumer("f", "g", 30),
)


def entry(p99_s: float | None, receives: int = 3) -> dict[str, Any]:
    return {"count": 5000, "recommended_processing_p99_s": p99_s, "recommended_max_receive_count": receives}


def test_a_vt_within_tolerance_is_ok_and_one_above_is_too_long() -> None:
    # measured p99 5 s -> expected VT 10 s
    assert compare(ECS_JOB, entry(5.0), Deployed(12, 3), 0.25).status == OK
    too_long = compare(ECS_JOB, entry(5.0), Deployed(13, 3), 0.25)
    assert too_long.status == TOO_LONG and too_long.drifted
    assert too_long.fixes == ["processing_p99=Duration.seconds(5)"]
    assert compare(ECS_JOB, entry(5.0), Deployed(20, 3), 1.0).status == OK


def test_a_vt_below_the_measurement_is_too_short() -> None:
    drift = compare(ECS_JOB, entry(30.0), Deployed(10, 3), 0.25)
    assert (drift.status, drift.expected_visibility_timeout_s) == (TOO_SHORT, 60)
    assert drift.fixes == ["processing_p99=Duration.seconds(30)"]


def test_a_lambda_job_is_held_to_its_timeout_rule() -> None:
    # 6 x 30 s + 5 s = 185 s, whatever a short p99 says: not too long
    assert compare(LAMBDA_JOB, entry(0.5), Deployed(185, 3), 0.25).status == OK
    # a p99 the 30 s timeout cannot fit: the timeout is the fix
    drift = compare(LAMBDA_JOB, entry(40.0), Deployed(185, 3), 0.25)
    assert drift.status == TOO_SHORT and "timeout=Duration.seconds(" in drift.fixes[-1]


def test_receives_below_the_recommendation_are_a_fix_not_a_failure() -> None:
    drift = compare(ECS_JOB, entry(5.0, receives=6), Deployed(10, 3), 0.25)
    assert drift.status == OK and drift.fixes == ["max_receive_count=6"]


def test_a_refused_profile_and_a_missing_one_never_fail() -> None:
    refused = {"count": 12, "recommended_processing_p99_s": None, "refused": "only 12 messages"}
    rows = compare_all([ECS_JOB, LAMBDA_JOB], {"S/Render": refused}, {}, 0.25)
    assert [(r.name, r.status) for r in rows] == [("S/Render", NO_RECOMMENDATION), ("S/Thumbs", NO_PROFILE)]
    assert rows[0].reason == "only 12 messages" and not any(r.drifted for r in rows)


def test_a_lambda_timeout_too_short_is_fixed_by_the_timeout() -> None:
    # p99 40 s needs a 45 s timeout (5 s deadline margin); its VT 6 x 45 s + 5 s = 275 s covers 2 x p99 = 80 s
    drift = compare(LAMBDA_JOB, entry(40.0), Deployed(185, 3), 0.25)
    assert (drift.status, drift.expected_visibility_timeout_s) == (TOO_SHORT, 275)
    assert drift.fixes == ["timeout=Duration.seconds(45)"]
    assert drift.reason.startswith("the Lambda timeout 30 s cannot fit a record of the measured p99 40 s; VT 185 s")
    # beyond Lambda's 15 min: an EcsJob
    assert compare(LAMBDA_JOB, entry(1000.0), Deployed(185, 3), 0.25).fixes[-1] == "EcsJob(...) instead of LambdaJob"


@pytest.mark.parametrize(
    ("p99_s", "code"),
    [
        (3000.0, "Duration.minutes(50)"),
        (90.0, "Duration.seconds(90)"),
        (0.383, "Duration.millis(383)"),
        (7200.0, "Duration.hours(2)"),
        (61.5, "Duration.millis(61500)"),
    ],
)
def test_a_suggested_duration_is_in_its_largest_whole_unit(p99_s: float, code: str) -> None:
    # GIVEN a measured p99 the stack's VT is far below, WHEN compared, THEN the change reads as a person writes it
    drift = compare(ECS_JOB, entry(p99_s), Deployed(1, 3), 0.25)
    assert drift.fixes == [f"processing_p99={code}"]


def test_a_suggested_lambda_timeout_is_in_its_largest_whole_unit() -> None:
    # p99 115 s needs a 120 s timeout (5 s deadline margin): two whole minutes
    drift = compare(LAMBDA_JOB, entry(115.0), Deployed(185, 3), 0.25)
    assert drift.fixes[0] == "timeout=Duration.minutes(2)"


def test_a_lambda_job_with_lease_extension_whose_p99_rule_wins_is_fixed_by_its_p99() -> None:
    # timeout 60 s + window 0 s + 10 s = 70 s; the timeout fits p99 40 s, but 2 x 40 s = 80 s is the larger rule
    job = JobType("Long", "S", "S/Long", "url", "dlq", lambda_timeout_s=60, lease_extension=True)
    drift = compare(job, entry(40.0), Deployed(70, 3), 0.25)
    assert (drift.status, drift.fixes) == (TOO_SHORT, ["processing_p99=Duration.seconds(40)"])


def test_a_queue_changed_outside_its_stack_says_so() -> None:
    job = JobType(
        "Render", "S", "S/Render", "url", "dlq", processing_p99_s=5.0, visibility_timeout_s=10, max_receive_count=3
    )
    drift = compare(job, entry(5.0), Deployed(30, 3), 0.25)
    assert drift.status == TOO_LONG and drift.reason.endswith(
        "(the stack declares 10 s: the queue was changed outside it; a deploy of the stack sets it back)"
    )
    # ... and the stack's own VT is right for the measurement: no change to its code would help (a p99 change equal
    # to the declared one was suggested, and the drift check stayed red)
    assert drift.fixes == []
    assert "changed outside" not in compare(job, entry(5.0), Deployed(10, 3), 0.25).reason
    # ... while a stack whose own VT is wrong for the measurement gets the change, made on its VT, not the queue's
    too_short = compare(job, entry(20.0), Deployed(30, 3), 0.25)
    assert too_short.fixes == ["processing_p99=Duration.seconds(20)"]


def test_an_adopted_queue_changed_by_its_owner_is_fixed_where_it_is_declared() -> None:
    # GIVEN a queue adopted with from_queue_attributes (no queue resource of the stack's) declaring VT 10 s, whose
    # owner set 120 s, measured at the declared p99 2 s
    job = JobType("Legacy", "S", "S/Legacy", "url", "dlq", processing_p99_s=2.0, visibility_timeout_s=10, adopted=True)
    drift = compare(job, entry(2.0, receives=3), Deployed(120, 1), 0.25)
    # THEN it drifted, the owner is named, and nothing in the stack's code is offered as the change
    assert drift.status == TOO_LONG
    assert drift.reason.endswith(
        "(from_queue_attributes declares 10 s: the queue's owner changed it; have the owner set it back, or declare "
        "what it is)"
    )
    assert drift.fixes == ["maxReceiveCount 3 in the queue's redrive policy, by its owner"]


def test_a_vt_declared_explicitly_is_fixed_by_the_vt_not_by_the_p99_it_does_not_follow() -> None:
    # GIVEN a job type whose stack declares p99 20 s and visibility_timeout 60 s (kept: it is above the 40 s the p99
    # derives), or adopts a queue of VT 60 s, measured at p99 20 s: VT 60 s is over 1.25 x the expected 40 s
    job = JobType("Mail", "S", "S/Mail", "url", "dlq", processing_p99_s=20.0, visibility_timeout_s=60)
    drift = compare(job, entry(20.0), Deployed(60, 3), 0.25)
    # THEN the fix is the VT: the p99 is what was measured already, and a p99 change would leave the VT at 60 s
    assert drift.status == TOO_LONG
    assert drift.fixes == ["visibility_timeout=Duration.seconds(40)"]
    assert drift.reason.endswith(
        "(the stack declares visibility_timeout 60 s, which its p99 does not change: make every change listed together)"
    )
    # ... and a p99 measured apart from the declared one is a fix beside it
    assert compare(job, entry(15.0), Deployed(60, 3), 0.25).fixes == [
        "processing_p99=Duration.seconds(15)",
        "visibility_timeout=Duration.seconds(30)",
    ]
    # ... too short too: a p99 raised past the declared VT would be refused at synth until the VT is raised
    assert compare(job, entry(45.0), Deployed(60, 3), 0.25).fixes == [
        "processing_p99=Duration.seconds(45)",
        "visibility_timeout=Duration.seconds(90)",
    ]
    # ... while a VT the stack derives from its p99 (60 s from 30 s) still follows it
    derived = JobType("Mail", "S", "S/Mail", "url", "dlq", processing_p99_s=30.0, visibility_timeout_s=60)
    assert compare(derived, entry(20.0), Deployed(60, 3), 0.25).fixes == ["processing_p99=Duration.seconds(20)"]


def test_load_profiles_names_the_job_type_and_field(tmp_path: Path) -> None:
    path = tmp_path / "profiles.json"
    for entry_, problem in (
        ({}, "has no recommended_processing_p99_s"),
        ({"recommended_processing_p99_s": -1}, "recommended_processing_p99_s=-1 is not positive"),
        ({"recommended_processing_p99_s": True}, "recommended_processing_p99_s=True is a bool, not a number"),
        ({"recommended_processing_p99_s": 1, "count": 1.5}, "count=1.5 is a float, not a whole number"),
        ({"recommended_processing_p99_s": None, "recommended_max_receive_count": "3"}, "recommended_max_receive_count"),
    ):
        path.write_text(json.dumps({"schema_version": 2, "deployments": {"S/Emails": entry_}}))
        with pytest.raises(OpsError, match=f"profile 'S/Emails': {re.escape(problem)}"):
            load_profiles(path)
    path.write_text(json.dumps({"schema_version": 2, "deployments": {"S/Emails": entry(1.5)}}))
    assert load_profiles(path) == {"S/Emails": entry(1.5)}
    # version 1 (a profile per job type alone, every stack's samples mixed) is refused with the fix
    path.write_text(json.dumps({"schema_version": 1, "job_types": {"Emails": entry(1.5)}}))
    with pytest.raises(OpsError, match=r"is a schema_version 1 profiles document, whose profiles are per job type"):
        load_profiles(path)


def test_a_queue_deleted_outside_its_stack_is_unknown_not_a_crash() -> None:
    from botocore.exceptions import ClientError

    from jobqueues.ops.queues import read_deployed

    class DeletedQueues:
        def get_queue_attributes(self, **_: Any) -> Any:
            raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "GetQueueAttributes")

    job = replace(ECS_JOB, queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/S-Render")
    deployed = read_deployed(DeletedQueues(), [job])
    assert deployed == {"S/Render": Deployed(None, None, missing=True)}
    # its row says which queue is missing and why it may be, with or without a profile, never "could not be read"
    for profile in (entry(5.0), None):
        row = compare(job, profile, deployed["S/Render"], 0.25)
        assert row.status == (NO_RECOMMENDATION if profile else NO_PROFILE)
        assert row.reason.endswith(
            'queue S-Render does not exist (deleted outside its stack, which a deploy does not undo: see "A queue '
            'deleted outside its stack" in docs/cli.md)'
        ), row.reason
    adopted = compare(replace(job, adopted=True), entry(5.0), deployed["S/Render"], 0.25)
    assert adopted.reason.endswith(
        "does not exist (adopted with JobQueue.from_queue_attributes: its owner creates it)"
    ), adopted.reason


def test_each_deployment_of_a_job_type_is_compared_with_its_own_profile() -> None:
    # GIVEN Reports deployed by a Dev and a Prod Stage, each measured on its own lines
    dev, prod = (
        JobType("Reports", stack, f"{stack}/Reports", "url", "dlq", visibility_timeout_s=10, processing_p99_s=5.0)
        for stack in ("Dev-T", "Prod-T")
    )
    profiles = {"Dev-T/Reports": {**entry(1.0), "count": 300}, "Prod-T/Reports": {**entry(30.0), "count": 819}}
    # WHEN drift compares the two deployments
    rows = {row.name: row for row in compare_all([dev, prod], profiles, {}, 0.25)}
    # THEN each row has its own samples and measurement, and names the profile it used
    assert (rows["Dev-T/Reports"].samples, rows["Dev-T/Reports"].measured_p99_s) == (300, 1.0)
    assert (rows["Prod-T/Reports"].samples, rows["Prod-T/Reports"].measured_p99_s) == (819, 30.0)
    assert rows["Dev-T/Reports"].profile == "Dev-T/Reports" and rows["Prod-T/Reports"].status == TOO_SHORT
    assert sorted(rows) == ["Dev-T/Reports", "Prod-T/Reports"]  # no profile left over


def test_a_profile_that_names_no_stack_is_used_only_where_it_cannot_mix_stages() -> None:
    # GIVEN a profile of lines that name no stack (an older sqslease's): keyed by the job type alone
    dev, prod = (
        JobType("Reports", stack, f"{stack}/Reports", "url", "dlq", visibility_timeout_s=10, processing_p99_s=5.0)
        for stack in ("Dev-T", "Prod-T")
    )
    bare = {"Reports": {**entry(5.0), "count": 819}}
    # WHEN one deployment runs the job type THEN it is compared with it, saying so
    (row,) = compare_all([dev], bare, {}, 0.25)
    assert (row.status, row.profile, row.samples) == (OK, "Reports", 819)
    assert row.reason.endswith("(profile 'Reports': lines that name no stack)")
    # WHEN two do THEN neither is: the lines of both may be in it
    rows = compare_all([dev, prod], bare, {}, 0.25)
    assert [(r.name, r.status, r.samples) for r in rows] == [
        ("Dev-T/Reports", NO_PROFILE, None),
        ("Prod-T/Reports", NO_PROFILE, None),
        ("Reports", NOT_DEPLOYED, None),
    ]
    assert rows[0].reason == (
        "no profile 'Dev-T/Reports'; the profile 'Reports' names no stack and 2 deployed stacks run Reports "
        "(Dev-T, Prod-T): profile logs of consumers that write their stack (sqslease's SQSLEASE_STACK)"
    )


#: An app whose EcsJob has neither image= nor a Dockerfile in its image_directory, and a cdk.json without the
#: jobqueues:image context: what a new team has before its first docker build.
NO_IMAGE_APP = """
import aws_cdk as cdk
from aws_cdk import Duration
from cdk_nag import AwsSolutionsChecks
from jobqueues import EcsJob, deploy_time_availability_zones


class Media(cdk.Stack):
    @property
    def availability_zones(self):
        return deploy_time_availability_zones()


app = cdk.App()
EcsJob(Media(app, "Media"), "Resize", handler="resize:handle", image_directory="worker",
       processing_p99=Duration.seconds(3))
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))  # a finding fails the synth
app.synth()
"""


@NEEDS_CDK
def test_drift_of_an_app_whose_image_is_not_buildable_needs_no_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an ECS job with no image and no Dockerfile (its synth fails without the jobqueues:image context)
    (tmp_path / "app.py").write_text(NO_IMAGE_APP)
    (tmp_path / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py"}))
    (tmp_path / "worker").mkdir()
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"schema_version": SUPPORTED_SCHEMA_VERSION, PROFILES_FIELD: {}}))
    monkeypatch.chdir(tmp_path)
    # (what drift synthesizes is kept, to lint it below: drift removes its own copy)
    from jobqueues.ops import synth as synth_module

    kept = tmp_path / "cdk.out"
    synth_unbuilt = synth_module.synth_unbuilt

    def synth_and_keep(*args: Any, **kwargs: Any) -> Path:
        output: Path = synth_unbuilt(*args, **kwargs)
        shutil.copytree(output, kept)
        return output

    monkeypatch.setattr(synth_module, "synth_unbuilt", synth_and_keep)
    # WHEN drift synthesizes it, as `jobqueues local deploy` does (nothing is built: the image does not matter)
    status = main(["drift", "--profiles", str(profiles), "--app", f"{sys.executable} app.py", "--json"])
    out = capsys.readouterr()
    # THEN its queue is compared, with nothing set in cdk.json
    assert status == 0, out.err
    [row] = json.loads(out.out)
    assert (row["name"], row["status"], row["visibility_timeout_s"]) == ("Media/Resize", NO_PROFILE, 10)
    # ... and what it synthesized passes cdk-nag (in the app: a finding fails the synth) and cfn-lint
    from jobqueues.ops.assembly import stack_artifacts

    [stack] = stack_artifacts(kept)
    assert list(lint_template(stack.template_file)) == []


def test_profiles_of_stacks_not_searched_are_left_out() -> None:
    profiles = {"Dev-Jobs/Orders": entry(1.0), "Prod-Jobs/Orders": entry(1.0), "Orders": entry(1.0)}
    # a profile of a stack outside --stack; one that names no stack may be any stack's: kept
    assert profiles_outside(profiles, ["Dev-Jobs"]) == ["Prod-Jobs/Orders"]
    assert profiles_outside(profiles, None) == []  # every stack searched: a profile without one is not deployed


def test_a_no_profile_row_with_more_to_say_is_explained_under_the_table() -> None:
    from jobqueues.cli.drift import _says_more
    from jobqueues.ops.queues import read_deployed

    class DeletedQueues:
        def get_queue_attributes(self, **_: Any) -> Any:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue"}}, "GetQueueAttributes")

    # GIVEN a job type without a profile, whose queue exists, and one whose queue was deleted
    present = compare(ECS_JOB, None, Deployed(30, 3), 0.25)
    job = replace(ECS_JOB, queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/S-Render")
    gone = compare(job, None, read_deployed(DeletedQueues(), [job])["S/Render"], 0.25)
    # THEN only the second says more than its status, and is printed under the table
    assert (present.status, gone.status) == ("no_profile", "no_profile")
    assert not _says_more(present)
    assert _says_more(gone)
