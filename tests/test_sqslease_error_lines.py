"""GIVEN a handler that raises WHEN sqslease settles the message THEN its EMF line says what was raised, bounded,
so that ``jobqueues dlq list`` can show why a message is in the DLQ. No network: the processor on fakes."""

from __future__ import annotations

import io
import json

from sqslease.emf import EmfLogger
from sqslease.emf_text import ERROR_TEXT_LIMIT


class CardDeclined(Exception):
    pass


def record(error: BaseException | None, outcome: str = "failure") -> dict[str, object]:
    out = io.StringIO()
    EmfLogger(out).record(
        job_type="Invoices",
        queue="q",
        message_id="m-1",
        processing_ms=1.0,
        outcome=outcome,
        receive_count=2,
        extensions=0,
        lease_lost=False,
        error=error,
    )
    line: dict[str, object] = json.loads(out.getvalue())
    return line


def test_failure_line_names_the_exception_and_its_text() -> None:
    line = record(CardDeclined("card\n  declined for order 7"))
    assert line["ErrorType"] == f"{__name__}.CardDeclined"
    assert line["Error"] == "card declined for order 7"


def test_builtin_exception_type_is_short_and_empty_text_is_the_repr() -> None:
    line = record(ValueError())
    assert line["ErrorType"] == "ValueError" and line["Error"] == "ValueError()"


def test_error_text_is_bounded() -> None:
    line = record(RuntimeError("x" * 10_000))
    assert isinstance(line["Error"], str) and len(line["Error"]) == ERROR_TEXT_LIMIT and line["Error"].endswith("…")


def test_success_line_has_no_error_fields() -> None:
    line = record(None, "success")
    assert "ErrorType" not in line and "Error" not in line


def test_a_failed_record_s_line_carries_its_error_through_the_processor() -> None:
    # GIVEN a batch whose second record raises (the Lambda adapter and the worker share sqslease.processor)
    from support.emf import read_emf
    from support.fakes import FakeContext, FakeSQS
    from support.lambda_events import fake_event

    from sqslease.lambda_adapter import process_event
    from sqslease.message import Message
    from sqslease.settings import FailurePolicy, LeaseSettings

    def handler(body: str, message: Message) -> None:
        if body == "bad":
            raise CardDeclined(f"{body}: card declined")

    emf = io.StringIO()
    settings = LeaseSettings(visibility_timeout=30, heartbeat_interval=0.2, failure_policy=FailurePolicy.VISIBLE_NOW)
    # WHEN the invocation runs it
    process_event(fake_event(["ok", "bad"]), FakeContext(60), handler, settings, FakeSQS(), emf=EmfLogger(emf))
    # THEN the failure line names the error; the success line has none
    lines = {line["MessageId"]: line for line in read_emf(emf)}
    assert lines["m1"]["ErrorType"].endswith("CardDeclined") and lines["m1"]["Error"] == "bad: card declined"
    assert "ErrorType" not in lines["m0"]
