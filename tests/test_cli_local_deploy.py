"""``jobqueues local deploy`` and the checks ``local up`` makes before it deploys, through the console script: each
test a deploy (or a synth) of its own, run beside the others (``tests/test_cli_local.py`` holds the ``up`` run)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from emulator_fixtures import NEEDS_CDK, OPS_APP_DIR
from support.cli_runs import JOBQUEUES, start

pytestmark = pytest.mark.heavy  # a deploy a test: scheduled first (tests/conftest.py)


@NEEDS_CDK
def test_env_of_an_unknown_job_type_is_refused_before_the_deploy() -> None:
    # GIVEN an app of two Stages (tests/team_stages_app) and --env naming a job type it does not have
    app_dir = Path(__file__).resolve().parent / "team_stages_app"
    # WHEN local up starts
    run = start("local", "up", "--env", "Export:DEBUG=1", "--env", "Exports:DEBUG=1", cwd=app_dir)
    status = run.wait(240)
    # THEN it stops after the synth, before anything is deployed, with the job types it has, status 2
    assert status == 2, run.text()
    assert (
        "error: --env Export:...: no job type Export in 2 stacks searched; job types: Dev-TeamC/Exports" in run.text()
    )
    assert "resources created" not in run.text() and "Traceback" not in run.text()


@NEEDS_CDK
def test_local_up_runs_an_app_whose_adopted_queue_the_emulator_lacks(tmp_path: Path) -> None:
    # GIVEN an app of a top-level stack and two Stages, whose top-level stack adopts legacy-billing, which no stack
    # creates (a docs-only trial saw `local up` end at once on SQS's "The specified queue does not exist", naming no
    # queue)
    app = Path(__file__).resolve().parent / "emulator_apps" / "stages_app.py"
    # WHEN `jobqueues local up` runs it until idle, from a directory without a cdk.json
    run = start("local", "up", "--app", f"{sys.executable} {app}", "--until-idle", "2", cwd=tmp_path)
    status = run.wait(240)
    # THEN it runs and ends as usual: every stack deployed and verified, the endpoint printed for the other commands
    assert status == 0, run.text()
    assert "consumers running" in run.text() and "Traceback" not in run.text()
    assert re.search(r"^export AWS_ENDPOINT_URL=http://localhost:\d+$", run.text(), re.MULTILINE)
    assert all(f"stack {name}: " in run.text() for name in ("EmulatorShared", "Dev-EmulatorJobs", "Prod-EmulatorJobs"))
    # ... the queue it adopts said to be missing, with the command that creates it
    assert re.search(
        r"^note: EmulatorShared/Billing adopts queue legacy-billing \(JobQueue.from_queue_attributes\), which no stack "
        r"creates: create it before its consumer runs: aws --endpoint-url http://localhost:\d+ sqs create-queue "
        r"--queue-name legacy-billing --attributes VisibilityTimeout=30 "
        r"\(and its dead-letter queue legacy-billing-dlq\)$",
        run.text(),
        re.MULTILINE,
    ), run.text()
    # ... and its row in the table says it is missing
    assert "DLQ missing" in run.text(), run.text()  # the cell "queue and DLQ missing", wrapped at its width


#: The smallest app to deploy: one stack of one queue.
TINY_APP = """
import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs

app = cdk.App()
sqs.Queue(cdk.Stack(app, "KeepRunning"), "Queue", enforce_ssl=True)
app.synth()
"""


@NEEDS_CDK
def test_local_deploy_prints_the_endpoint_then_what_to_run_next(tmp_path: Path) -> None:
    # GIVEN the smallest app (the stages app's deploy is checked through `local up`, above)
    (tmp_path / "app.py").write_text(TINY_APP)
    # WHEN `jobqueues local deploy` deploys it
    run = start("local", "deploy", "--app", f"{sys.executable} app.py", cwd=tmp_path)
    status = run.wait(240)
    # THEN it is deployed, the endpoint printed, and, the emulator gone with the command, what to run next
    assert status == 0, run.text()
    assert "stack KeepRunning: " in run.text()
    assert re.search(r"^export AWS_ENDPOINT_URL=http://localhost:\d+$", run.text(), re.MULTILINE)
    assert run.lines[-1].startswith("emulator stopped. Next: `jobqueues local up` in your app's directory"), run.text()


@NEEDS_CDK
def test_keep_running_ends_on_ctrl_c_with_130_as_the_exit_statuses_say(tmp_path: Path) -> None:
    # GIVEN `local deploy --keep-running`, its emulator up once the deploy is done
    (tmp_path / "app.py").write_text(TINY_APP)
    run = start("local", "deploy", "--keep-running", "--app", f"{sys.executable} app.py", cwd=tmp_path)
    run.wait_for_line("emulator running (Ctrl-C to stop)", timeout_s=240)
    port = int(re.findall(r"^export AWS_ENDPOINT_URL=http://localhost:(\d+)$", run.text(), re.MULTILINE)[0])
    # WHEN Ctrl-C stops it THEN the status is 130, as for `local up` (docs/cli.md), and the emulator is gone
    run.process.send_signal(signal.SIGINT)
    assert run.wait(60) == 130, run.text()
    assert run.lines[-1] == "interrupted: the emulator is stopped" and "Traceback" not in run.text()
    with pytest.raises(OSError):
        socket.create_connection(("localhost", port), timeout=2).close()


@NEEDS_CDK
def test_an_app_that_fails_to_synth_is_one_error() -> None:
    completed = subprocess.run(
        [str(JOBQUEUES), "local", "deploy", "--app", "python no_such_app.py"],
        cwd=OPS_APP_DIR,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 1
    assert completed.stderr.startswith("error: the app `python no_such_app.py` failed"), completed.stderr
    assert "no_such_app.py" in completed.stderr and "Traceback" not in completed.stderr
