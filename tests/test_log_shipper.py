"""``jobqueues local up``'s log shipper keeps the EMF lines alone under ``logs/emf`` (what jobstats reads)."""

from __future__ import annotations

import io
import json

from jobqueues.emulator.consumers.log_shipper import is_emf
from sqslease.emf import EmfLogger


def test_only_whole_emf_objects_count_as_emf_lines() -> None:
    # GIVEN a consumer's output: an EMF line, an OpenTelemetry console span (one JSON object over many lines, as
    # docs/sqslease.md's tracing_setup exports to stderr), a JSON log line and plain text
    out = io.StringIO()
    EmfLogger(out).record(
        job_type="Render", queue="q", message_id="m", processing_ms=5.0, outcome="success",
        receive_count=1, extensions=0, lease_lost=False,
    )  # fmt: skip
    (emf_line,) = out.getvalue().splitlines()
    span = json.dumps({"name": "q process", "context": {"trace_id": "0x1"}}, indent=4).splitlines()
    lines = [emf_line, *span, '{"level": "info", "msg": "x"}', "INFO started"]
    # THEN only the EMF line is one (the span's first line, "{", was counted before: jobstats found it malformed)
    assert [line for line in lines if is_emf(line)] == [emf_line]
