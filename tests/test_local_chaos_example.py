"""``jobqueues local up --chaos 0.2`` on the example app (this repository's own ``cdk.json``): its report finds 0
lost and 0 run on two live handlers.

One run through the console script, in the repository's directory: the app is deployed, 40 Transcode jobs (ECS
workers, scaled from 0, 20 % of their SQS requests faulted, a worker killed every 15 s) and 20 Thumbnails jobs
(the Lambda driver) are sent as soon as the deploy has created their queues, and ``--until-idle`` ends it.

The run ends once its consumed queues were empty for ``--until-idle`` seconds, counted from the consumers' start.
Sent after ``consumers running``, the jobs had to arrive within those seconds (15 were given). Sent as soon as the
deploy has created their queues, they have the rest of the deploy, its checks and the consumers' start to arrive
(all slower, not faster, on a loaded machine) before the idle period counts at all; then 5 s of it end the run
once every job ended. Timeouts are generous; no assertion depends on timing.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from emulator_fixtures import NEEDS_CDK
from support.cli_runs import start, until

from jobqueues.emulator.server import Emulator, free_port
from jobqueues.ops.queues import NO_QUEUE

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
JOBQUEUES = Path(sys.executable).parent / "jobqueues"
REPORT_HEADER = re.compile(
    r"^stack/job type\s+received\s+completed\s+DLQ\s+queued\s+lost\s+ran twice\s+two live handlers\s+never received"
)


def report_rows(text: str) -> dict[str, list[int]]:
    """The report's rows: STACK/JOB_TYPE -> [received, completed, DLQ, queued, lost, ran twice, two live handlers,
    never received]."""
    lines = text.splitlines()
    start_at = next(i for i, line in enumerate(lines) if REPORT_HEADER.match(line))
    rows: dict[str, list[int]] = {}
    for line in lines[start_at + 1 :]:
        fields = line.split()
        if len(fields) != 9 or not all(f.isdigit() for f in fields[1:]):
            break
        rows[fields[0]] = [int(f) for f in fields[1:]]
    return rows


def send(emulator: Emulator, url: str, bodies: list[dict[str, object]]) -> None:
    sqs = emulator.client("sqs")
    for start_at in range(0, len(bodies), 10):
        entries = [{"Id": str(i), "MessageBody": json.dumps(b)} for i, b in enumerate(bodies[start_at : start_at + 10])]
        assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")


#: Job type -> the queue the example app's deploy creates for it.
QUEUES = {"Transcode": "JobQueuesExample-Transcode", "Thumbnails": "JobQueuesExample-Thumbnails"}


def created(sqs: Any, urls: dict[str, str]) -> bool:
    """Whether the deploy has created every queue of :data:`QUEUES`; ``urls`` gets each one's URL once it exists."""
    for job_type, name in QUEUES.items():
        if job_type not in urls:
            try:
                urls[job_type] = sqs.get_queue_url(QueueName=name)["QueueUrl"]
            except ClientError as error:
                if error.response["Error"]["Code"] not in NO_QUEUE:
                    raise
                return False
    return True


@NEEDS_CDK
def test_chaos_on_the_example_app_loses_nothing(tmp_path: Path) -> None:
    port = free_port()
    run = start(
        "local",
        "up",
        "--port",
        str(port),
        "--chaos",
        "0.2",
        "--until-idle",
        "5",
        "--scale-in-after",
        "3",
        "--logs",
        str(tmp_path / "logs"),
        cwd=ROOT,
    )
    try:
        run.wait_for_line("local AWS emulator (moto_server) at", timeout_s=240)
        emulator = Emulator(f"http://localhost:{port}")
        sqs, urls = emulator.client("sqs"), {}
        until(lambda: created(sqs, urls) or run.process.poll() is not None, 240, "the deploy's queues")
        assert set(urls) == set(QUEUES), run.text()
        rng = random.Random(7)
        jobs = [{"id": f"t{i}", "work_s": round(rng.uniform(0.2, 3), 2)} for i in range(40)]
        send(emulator, urls["Transcode"], jobs)
        send(emulator, urls["Thumbnails"], [{"id": f"th{i}", "work_s": 0.1} for i in range(20)])
        until(lambda: run.process.poll() is not None, 300, "the run to end when idle")
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
    assert run.wait(30) == 0, run.text()
    text = run.text()
    assert re.search(r"chaos: \d+ of \d+ SQS requests faulted", text), text
    rows = report_rows(text)
    assert set(rows) >= {"JobQueuesExample/Transcode", "JobQueuesExample/Thumbnails"}, text
    for name, row in rows.items():
        lost, two_live, never_received = row[4], row[6], row[7]
        assert lost == 0 and two_live == 0 and never_received == 0, f"{name}: {text}"
    transcode_row, thumbnails_row = rows["JobQueuesExample/Transcode"], rows["JobQueuesExample/Thumbnails"]
    # Every job was received and none is left: completed, or dead-lettered by faults on every delivery.
    assert transcode_row[0] == 40 and transcode_row[1] + transcode_row[2] == 40, text
    assert thumbnails_row[0] == 20 and thumbnails_row[1] + thumbnails_row[2] == 20, text
