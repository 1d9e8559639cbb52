"""jobstats' cold path (msgspec and numpy on the executors) gives Spark's reader's partial rows, row for row, for
every file it reads; every file it cannot read exactly as Spark's reader would goes to Spark's reader.

Both run on the session's SparkSession against the same files: the rows of one are the expected value of the
other's (``partial_aggregate(records(read_json(...)))`` is what jobstats ran before the cold path)."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobstats.files import LogFile, file_uri, list_files
from jobstats.parse import read_json, records
from jobstats.reader import read_files
from jobstats.scan import (
    MIN_SPLIT_BYTES,
    OPEN_COST_BYTES,
    SPLITS_PER_TASK,
    Split,
    plan,
    read_blocks,
    scan,
    scan_task,
    split_size,
)
from jobstats.stats import PARTIAL_KEYS, partial_aggregate
from sqslease.emf import OUTCOMES, EmfLogger

START_MS = 1_793_000_000_000
DAY_MS = 86_400_000


def emf_text(count: int, seed: int = 0) -> str:
    """``count`` lines of the real EmfLogger over every outcome, two stacks and none, two queues, three days, with
    and without queue times, redeliveries and extensions."""
    out = io.StringIO()
    logger = EmfLogger(out)
    for i in range(count):
        logger.record(
            job_type=("Email", "Render", "Über-Export")[i % 3],
            stack=(None, "Dev-Billing", "Prod-Billing")[(i + seed) % 3],
            queue=f"q{i % 2}",
            message_id=f"m{seed}-{i}",
            processing_ms=(0.0, 0.0004, 12.5, 999.999, 4_000.25, 86_400_000.0)[i % 6] + i % 7,
            outcome=OUTCOMES[i % len(OUTCOMES)],
            receive_count=1 + i % 60,
            extensions=i % 4,
            lease_lost=i % 11 == 0,
            timestamp_ms=START_MS + (i % 3) * DAY_MS + i,
            queue_ms=None if i % 5 == 0 else 3.0 * i,
        )
    return out.getvalue()


#: Lines the decoder reads, each malformed for a reason of jobstats.rules (Spark's reader reads them the same way).
MALFORMED_BY_RULE = [
    json.dumps({"_aws": {"Timestamp": START_MS}, "ProcessingTime": 5, "Outcome": "success"}),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "", "ProcessingTime": 5, "Outcome": "success"}),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": -1, "Outcome": "success"}),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 1e10, "Outcome": "success"}),
    json.dumps({"JobType": "E", "ProcessingTime": 5, "Outcome": "success"}),
    json.dumps({"_aws": {"Timestamp": -5}, "JobType": "E", "ProcessingTime": 5, "Outcome": "success"}),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 5}),
    json.dumps(
        {"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 5, "Outcome": "x", "ReceiveCount": 0}
    ),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 5, "Outcome": "x", "LeaseLost": -1}),
    json.dumps(
        {"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 5, "Outcome": "x", "QueueTime": 2e9}
    ),
    json.dumps({"_aws": {"Timestamp": START_MS}, "JobType": "E", "ProcessingTime": 5, "Outcome": "x", "Stack": ""}),
    '{"JobType": "E", "JobType": "F", "_aws": {"Timestamp": 1}, "ProcessingTime": 1, "Outcome": "success"}',
    "{}",
    "   ",
    "\t",
]


def record(ms: float, ts: int = START_MS, **fields: Any) -> str:
    return json.dumps(
        {"_aws": {"Timestamp": ts}, "JobType": "Edge", "ProcessingTime": ms, "Outcome": "success", **fields}
    )


#: Records at the edges of the arithmetic: durations whose microseconds are just below a whole number or halfway
#: (rint, not floor or round-half-up), the bounds themselves, days' edges, capped and large counts.
EDGE_RECORDS = [
    record(4.35),
    record(1.005, QueueTime=0.0025),
    record(0.0025, QueueTime=0.0035),
    record(0.0035, ReceiveCount=50),
    record(2.5e-7, ReceiveCount=51),
    record(0, ReceiveCount=2_147_483_647, Extensions=2_147_483_647, LeaseLost=1),
    record(1e9, QueueTime=1_209_600_000),
    record(7.0, ts=0),
    record(7.0, ts=253_402_300_799_999),
    record(7.0, ts=START_MS - START_MS % DAY_MS - 1),
    record(7.0, ts=START_MS - START_MS % DAY_MS),
    record(9.0, Outcome="failure", ReceiveCount=3, Stack="Dev-Billing"),
    record(9.0, Outcome="released", Stack="Solo"),  # a group of released lines alone: its sums are null
]

#: Lines the decoder refuses: each sends its file to Spark's reader.
REFUSED = {
    "cloudwatch export": "2026-10-26T06:53:20.000Z " + emf_text(1).strip(),
    "not json": "INFO sqslease.worker: started",
    "number as text": '{"JobType": "E", "ProcessingTime": "12.5"}',
    "NaN": '{"JobType": "E", "ProcessingTime": NaN}',
    "overflow": '{"JobType": "E", "ProcessingTime": 1e400}',
    "job type not a string": '{"JobType": 7, "ProcessingTime": 1}',
    "two objects": '{"JobType": "E"} {"JobType": "F"}',
    "float count": '{"JobType": "E", "ReceiveCount": 1.0}',
    "long overflow": '{"JobType": "E", "_aws": {"Timestamp": 99999999999999999999}}',
    "null struct": '{"JobType": "E", "_aws": null, "ProcessingTime": 5, "Outcome": "success"}',
}


def canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: repr(tuple(row[k] for k in PARTIAL_KEYS)))


def spark_rows(spark, logs: list[LogFile]) -> dict[str, list[dict]]:  # type: ignore[no-untyped-def]
    rows: dict[str, list[dict]] = {log.uri: [] for log in logs}
    for row in partial_aggregate(records(read_json(spark, logs))).collect():
        rows[file_uri(row["file"])].append({**row.asDict(), "file": file_uri(row["file"])})
    return {uri: canonical(file_rows) for uri, file_rows in rows.items()}


def test_the_cold_path_gives_sparks_rows_split_anywhere(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # GIVEN plain files (one with CRLF ends, blank lines and lines malformed by every rule) and a gzip file
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text(emf_text(300) + "\n".join(MALFORMED_BY_RULE + EDGE_RECORDS) + "\n")
    (logs / "b.log").write_bytes((emf_text(200, seed=1) + "\n  \n").replace("\n", "\r\n").encode())
    with gzip.open(logs / "c.log.gz", "wt") as stream:
        stream.write(emf_text(250, seed=2))
    (logs / "empty.log").write_text("")
    files = list(list_files(spark, [str(logs)]).values())
    # WHEN the cold path reads them in splits of 4 KiB (a line crosses most split edges)
    cold, rest = scan(spark, files, split_bytes=4096)
    # THEN it read every file, and its rows are Spark's
    assert rest == []
    assert {uri: canonical(rows) for uri, rows in cold.items()} == spark_rows(spark, files)
    # (the lines malformed by a rule: all but the empty Stack, the repeated key and the two blank lines)
    assert sum(row["count"] for row in cold[files[0].uri] if row["reason"] is not None) == len(MALFORMED_BY_RULE) - 4


def test_a_file_with_a_line_the_decoder_refuses_is_read_by_spark(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    logs = tmp_path / "logs"
    logs.mkdir()
    for i, line in enumerate(REFUSED.values()):
        (logs / f"refused-{i}.log").write_text(emf_text(40, seed=i) + line + "\n" + emf_text(5))
    (logs / "clean.log").write_text(emf_text(40))
    files = list(list_files(spark, [str(logs)]).values())

    cold, rest = scan(spark, files, split_bytes=4096)

    assert sorted(log.uri for log in rest) == sorted(log.uri for log in files if "refused" in log.uri)
    assert list(cold) == [log.uri for log in files if log.uri.endswith("clean.log")]
    everything = read_files(spark, files)  # the refused files through Spark's reader: jobstats' rows for all
    assert {uri: canonical(rows) for uri, rows in everything.items()} == spark_rows(spark, files)


def test_without_msgspec_on_an_executor_every_split_goes_to_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jobstats.decode", None)  # import jobstats.decode raises ImportError
    splits = [Split("file:///x/a.log", "/x/a.log", 0, 10, False), Split("file:///x/b.log", "/x/b.log", 0, 10, False)]
    results = list(scan_task([splits]))
    assert [(uri, rows) for uri, rows, _ in results] == [("file:///x/a.log", None), ("file:///x/b.log", None)]
    assert all("jobstats.decode" in why for _, _, why in results if why is not None)


def test_one_task_a_core_each_with_about_the_same_bytes() -> None:
    # GIVEN three small files, a large plain file and a gzip file (which cannot be split)
    small = [LogFile(f"file:///l/s{i}.log", f"/l/s{i}.log", 1_000, 0) for i in range(3)]
    large = LogFile("file:///l/big.log", "/l/big.log", 250 * 2**20, 0)
    zipped = LogFile("file:///l/z.log.gz", "/l/z.log.gz", 150 * 2**20, 0)
    # WHEN they are planned for 2 cores in splits of at most 100 MiB
    tasks = plan([*small, large, zipped], tasks=2, split_bytes=100 * 2**20)
    # THEN two tasks: the splits given out largest first to the emptier task, each task's splits in file order
    mib = 2**20
    assert [[(Path(s.path).name, s.start, s.end) for s in task] for task in tasks] == [
        [("s0.log", 0, 1_000), ("s2.log", 0, 1_000), ("big.log", 200 * mib, 250 * mib), ("z.log.gz", 0, 150 * mib)],
        [("s1.log", 0, 1_000), ("big.log", 0, 100 * mib), ("big.log", 100 * mib, 200 * mib)],
    ]
    # (fewer splits than cores: a task each)
    assert plan(small, tasks=8, split_bytes=10_000) == [[split] for split in plan(small, 1, 10_000)[0]]
    with pytest.raises(ValueError, match="not a local file"):
        plan([LogFile("s3a://b/k.log", "s3a://b/k.log", 10, 0)], 2, 100)


def test_the_split_size_gives_each_task_a_few_splits() -> None:
    assert split_size(958 * 2**20, tasks=2) == 958 * 2**20 // (2 * SPLITS_PER_TASK)
    assert split_size(10 * 2**20, tasks=2) == MIN_SPLIT_BYTES
    assert split_size(0, tasks=0) == MIN_SPLIT_BYTES


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=5_000), max_size=12),
    gzip_files=st.sets(st.integers(min_value=0, max_value=11)),
    tasks=st.integers(min_value=1, max_value=6),
    split_bytes=st.integers(min_value=1, max_value=2_000),
)
def test_a_plan_reads_each_byte_once_and_balances_the_tasks(
    sizes: list[int], gzip_files: set[int], tasks: int, split_bytes: int
) -> None:
    files = [
        LogFile(f"file:///l/{i}.log" + (".gz" if i in gzip_files else ""), f"/l/{i}.log", size, 0)
        for i, size in enumerate(sizes)
    ]
    planned = plan(files, tasks, split_bytes)
    splits = [split for task in planned for split in task]
    # THEN at most one task a core, none empty, and every byte of every file in one split
    assert len(planned) <= tasks and all(planned)
    for log in files:
        ranges = sorted((s.start, s.end) for s in splits if s.uri == log.uri)
        assert ranges[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        assert ranges[-1][1] == max(log.size, 1 if log.uri.endswith(".gz") else log.size)
    # AND no task holds more bytes than the lightest one plus its largest split (each counting its open)
    loads = [sum(s.end - s.start + OPEN_COST_BYTES for s in task) for task in planned]
    largest = max((s.end - s.start + OPEN_COST_BYTES for s in splits), default=0)
    assert max(loads, default=0) - min(loads, default=0) <= largest


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab{}\r\t ", max_size=12), max_size=12),
    final_newline=st.booleans(),
    split_bytes=st.integers(min_value=1, max_value=40),
    block_bytes=st.integers(min_value=1, max_value=16),
)
def test_splits_read_every_line_once(lines: list[str], final_newline: bool, split_bytes: int, block_bytes: int) -> None:
    data = ("\n".join(lines) + ("\n" if final_newline and lines else "")).encode()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "a.log"
        path.write_bytes(data)
        edges = range(0, len(data), split_bytes)
        splits = [Split(path.as_uri(), str(path), s, min(s + split_bytes, len(data)), False) for s in edges]
        blocks = [bytes(block) for split in splits for block in read_blocks(split, block_bytes)]  # a view: copied
    # THEN the splits' blocks are the file, each a run of whole lines
    assert b"".join(blocks) == data
    assert all(block.endswith(b"\n") for block in blocks[:-1])
