"""One CloudWatch Embedded Metric Format line per processed message.

CloudWatch Logs turns the line into metrics (namespace ``jobqueues``, dimension ``JobType``); the
``jobstats`` Spark pipeline reads the same lines to measure p99s, per deployment (:func:`deployment_name`: the
line's ``Stack``, a property that costs no metric, and its ``JobType``). The schema is in docs/sqslease.md.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from json.encoder import encode_basestring_ascii
from typing import IO, Any

from sqslease.emf_text import (
    ENCODER,
    GROUP_FIELD,
    MAX_TEMPLATES,
    TEMPLATE_FIELDS,
    TEMPLATES,
    error_text,
    error_type,
    line_template,
    line_text,
    millis,
    plain_millis,
)

NAMESPACE = "jobqueues"
SCHEMA_VERSION = 1

#: Metric names and units published from each line.
METRICS = (
    {"Name": "ProcessingTime", "Unit": "Milliseconds"},
    {"Name": "Extensions", "Unit": "Count"},
    {"Name": "LeaseLost", "Unit": "Count"},
    {"Name": "ReceiveCount", "Unit": "Count"},
)
#: Published from a line that has ``QueueTime``: a message that ran, with a ``SentTimestamp``.
QUEUE_TIME_METRIC = {"Name": "QueueTime", "Unit": "Milliseconds"}

OUTCOMES = (
    "success",
    "failure",
    "dead_lettered",
    "released",
    "lost",
    "timed_out",
    "duplicate",
    "in_progress_elsewhere",
    "store_unavailable",
)
_OUTCOME_SET = frozenset(OUTCOMES)

#: Outcomes of a message whose handler did not run: released unstarted, or stopped by its idempotency record
#: (done before, held by another consumer, or no record could be written). Their lines publish no ProcessingTime
#: metric (0 ms), and jobstats leaves them out of its durations.
UNRUN_OUTCOMES = ("released", "duplicate", "in_progress_elsewhere", "store_unavailable")


def deployment_name(stack: str | None, job_type: str) -> str:
    """What a line was measured on: ``STACK/JOB_TYPE`` (``Dev-Billing/Invoices``), or the job type alone for a line
    without a ``Stack`` (a consumer not told its stack). Unambiguous: neither a stack name nor a job type holds
    ``/``."""
    return job_type if stack is None else f"{stack}/{job_type}"


#: Lines :meth:`EmfLogger.hold` keeps at most before it writes them itself: a bound, should nothing flush them.
MAX_HELD = 100


class EmfLogger:
    """Writes EMF lines to a stream (stdout by default), a ``write`` and a ``flush`` a line, thread-safe; a line
    given to :meth:`hold` is written with the next line or at :meth:`flush`, in one write with the others held."""

    def __init__(self, stream: IO[str] | None = None, namespace: str = NAMESPACE) -> None:
        self.stream = stream or sys.stdout
        self.namespace = namespace
        self._lock = threading.Lock()  # the stream's: one write (and its flush) at a time, in order
        # Held lines have a lock of their own: holding one never waits for a write, which lets the GIL go with the
        # stream's lock held (a thread blocked on that lock sleeps, and is woken).
        self._held: list[str] = []
        self._held_lock = threading.Lock()

    def hold(self, text: str) -> None:
        """Keep ``text`` (whole lines) for the next write: the worker's success lines, until their deletes are
        sent (:mod:`sqslease.emf_writer`)."""
        with self._held_lock:
            self._held.append(text)
            full = len(self._held) >= MAX_HELD
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the lines held, in one write, and flush the stream. Every line held before the call is written
        when it returns: the stream's lock waits for a write in progress, which may hold them."""
        with self._lock:
            if self._held:
                self.stream.write(self._take_held(""))
                self.stream.flush()

    def _take_held(self, text: str) -> str:
        """The held lines, then ``text``, now held no more."""
        with self._held_lock:
            held = "".join(self._held) + text
            self._held.clear()
        return held

    def record(
        self,
        *,
        job_type: str,
        queue: str,
        message_id: str,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        extensions: int,
        lease_lost: bool,
        timestamp_ms: int | None = None,
        error: BaseException | None = None,
        queue_ms: float | None = None,
        stack: str | None = None,
        group: str | None = None,
    ) -> dict[str, Any]:
        """Log one processed message and return the line's object.

        :param group: the message's ``MessageGroupId`` (a fair queue's tenant, a FIFO group): :data:`GROUP_FIELD`.

        :param stack: the consumer's stack (``LeaseSettings.stack``): the line gets ``Stack`` after ``JobType``.
            Default: none (no ``Stack``).

        :param queue_ms: how long the message waited before this run started, in milliseconds (from its
            ``SentTimestamp``; see :meth:`sqslease.message.Message.queue_time_ms`): the line gets ``QueueTime``
            and publishes it as a metric. Default: none (a message released unrun, or without a
            ``SentTimestamp``).

        :param error: what the handler raised, if anything: the line gets ``ErrorType`` (the exception's
            module-qualified class) and ``Error`` (its text, at most
            :data:`sqslease.emf_text.ERROR_TEXT_LIMIT` characters), which ``jobqueues dlq list`` shows beside a
            dead-lettered message. Default: none.
        """
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        line = {
            "_aws": {
                "Timestamp": timestamp_ms if timestamp_ms is not None else int(time.time() * 1000),
                "CloudWatchMetrics": self._directives(outcome, queue_ms is not None),
            },
            "SchemaVersion": SCHEMA_VERSION,
            "JobType": job_type,
            **({} if stack is None else {"Stack": stack}),
            "Queue": queue,
            "MessageId": message_id,
            "ProcessingTime": millis(processing_ms),
            "Outcome": outcome,
            "ReceiveCount": receive_count,
            "Extensions": extensions,
            "LeaseLost": int(lease_lost),
        }
        if queue_ms is not None:
            line["QueueTime"] = millis(queue_ms)
        if group is not None:
            line[GROUP_FIELD] = group
        if error is not None:
            line["ErrorType"] = error_type(error)
            line["Error"] = error_text(error)
        self._write(self._encode(line))
        return line

    def emit(
        self,
        *,
        job_type: str,
        queue: str,
        message_id: str,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        extensions: int,
        lease_lost: bool,
        error: BaseException | None = None,
        queue_ms: float | None = None,
        stack: str | None = None,
        group: str | None = None,
    ) -> None:
        """:meth:`record` without returning the line's object: what the runtime calls per message. The usual
        line (no error, finite times, whole counts) is formatted straight into its template, text for text what
        :meth:`record` writes, without building the object first; any other goes through :meth:`record`."""
        if (
            error is None
            and type(message_id) is str
            and type(receive_count) is int
            and type(extensions) is int
            and plain_millis(processing_ms)
            and (queue_ms is None or plain_millis(queue_ms))
            and (group is None or type(group) is str)
            and outcome in _OUTCOME_SET
        ):
            queued = queue_ms is not None
            head, middle = TEMPLATES.get(
                (self.namespace, job_type, stack, queue, outcome, SCHEMA_VERSION, queued)
            ) or self._template(job_type, stack, queue, outcome, queued)
            now_ms = int(time.time() * 1000)
            text = line_text(
                now_ms, head, message_id, processing_ms, middle, receive_count, extensions, lease_lost, queue_ms, group
            )
            self._write(text)
            return
        self.record(
            job_type=job_type,
            queue=queue,
            message_id=message_id,
            processing_ms=processing_ms,
            outcome=outcome,
            receive_count=receive_count,
            extensions=extensions,
            lease_lost=lease_lost,
            error=error,
            queue_ms=queue_ms,
            stack=stack,
            group=group,
        )

    def _write(self, text: str) -> None:
        # One write and a flush per line: a Lambda invocation that times out keeps the lines of what it ran.
        with self._lock:
            if not self._held:
                self.stream.write(text)
            else:
                held, refused = self._take_held(""), False
                try:
                    self.stream.write(held + text)  # after the lines held before it, in the same write
                except UnicodeError:
                    refused = True
                if refused:  # out of the except: the text's own error alone, not chained to the combined write's
                    # Text the stream cannot encode (a handler's print, through sqslease.stdout_lines): nothing of
                    # it was written. The held lines are, and the text's own error goes to the thread that wrote it.
                    self.stream.write(held)
                    self.stream.flush()
                    self.stream.write(text)
            self.stream.flush()

    def _directives(self, outcome: str, queued: bool) -> list[dict[str, Any]]:
        """The line's ``CloudWatchMetrics``: its metric names depend on the outcome and on ``QueueTime``."""
        return [{"Namespace": self.namespace, "Dimensions": [["JobType"]], "Metrics": _metrics(outcome, queued)}]

    def _template(
        self,
        job_type: Any,
        stack: Any,
        queue: Any,
        outcome: Any,
        queued: bool,
        schema_version: Any = SCHEMA_VERSION,
    ) -> tuple[str, str]:
        """The encoded text of a line around its message id and processing time
        (:func:`sqslease.emf_text.line_template`), cached in :data:`sqslease.emf_text.TEMPLATES`."""
        key = (self.namespace, job_type, stack, queue, outcome, schema_version, queued)
        template = TEMPLATES.get(key)
        if template is None:
            if len(TEMPLATES) >= MAX_TEMPLATES:
                TEMPLATES.clear()
            directives = self._directives(outcome, queued)
            template = TEMPLATES[key] = line_template(directives, job_type, stack, queue, outcome, schema_version)
        return template

    def _encode(self, line: dict[str, Any]) -> str:
        """The line as one JSON object and a newline. Its fixed parts (the metric directives, job type, queue,
        outcome) are encoded once per logger and outcome, the rest formatted: ``json.dumps`` of every line was
        most of what the Lambda adapter cost per record. Fields beyond :data:`TEMPLATE_FIELDS` follow them,
        encoded as ``json.dumps`` would; anything unexpected goes through ``json.dumps`` whole."""
        aws = line["_aws"]
        timestamp, processing, message_id = aws["Timestamp"], line["ProcessingTime"], line["MessageId"]
        counts = line["ReceiveCount"], line["Extensions"], line["LeaseLost"]
        queued = "QueueTime" in line  # its metric is in the directive: a template of its own
        stack = line.get("Stack")
        fields = len(TEMPLATE_FIELDS) + 1 + ("Stack" in line)  # ``_aws``, and a Stack when the line has one
        if not (
            (stack is None or type(stack) is str)
            and type(timestamp) is int
            and type(message_id) is str
            and (type(processing) is int or (type(processing) is float and math.isfinite(processing)))
            and type(counts[0]) is int
            and type(counts[1]) is int
            and type(counts[2]) is int
            and aws["CloudWatchMetrics"] == self._directives(line["Outcome"], queued)
        ):
            return ENCODER.encode(line) + "\n"
        head, middle = self._template(
            line["JobType"], stack, line["Queue"], line["Outcome"], queued, line["SchemaVersion"]
        )
        queue_time = line.get("QueueTime")
        extra = (
            ""
            if len(line) == fields
            # the usual extra field, a finite float: repr is what json.dumps writes for it
            else f',"QueueTime":{queue_time!r}'
            if len(line) == fields + 1 and type(queue_time) is float and math.isfinite(queue_time)
            else "".join(
                f",{encode_basestring_ascii(name)}:{ENCODER.encode(value)}"
                for name, value in line.items()
                if name not in TEMPLATE_FIELDS and name not in ("_aws", "Stack")
            )
        )
        return (
            f'{{"_aws":{{"Timestamp":{timestamp}{head}{encode_basestring_ascii(message_id)},"ProcessingTime":'
            f'{processing!r}{middle}{counts[0]},"Extensions":{counts[1]},"LeaseLost":{counts[2]}{extra}}}\n'
        )


def _metrics(outcome: str, queued: bool) -> list[dict[str, str]]:
    metrics = [m for m in METRICS if m["Name"] != "ProcessingTime"] if outcome in UNRUN_OUTCOMES else list(METRICS)
    return [*metrics, QUEUE_TIME_METRIC] if queued else metrics
