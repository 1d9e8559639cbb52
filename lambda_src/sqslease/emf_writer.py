"""One consumer's EMF lines: :class:`sqslease.emf.EmfLogger`'s lines with the consumer's job type, stack and queue
fixed, what the runtime writes per message.

The constant text of a line (its template, :func:`sqslease.emf_text.line_template`) is looked up once per consumer
and outcome and kept for every writer of that consumer (a Lambda invocation makes one), and a line is asked for with
positional arguments: a keyword call with eleven arguments and a seven-part template key per line were a fifth of the
Lambda adapter's cost per record (``bench/runtime_bench.py``).
The text is the same as :meth:`~sqslease.emf.EmfLogger.emit`'s; a line of another kind (an error, a time that is not
a plain number) goes through :meth:`~sqslease.emf.EmfLogger.record`.
"""

from __future__ import annotations

import time
from json.encoder import encode_basestring_ascii

from sqslease.emf import OUTCOMES, SCHEMA_VERSION, EmfLogger
from sqslease.emf_text import FRACTIONS, GROUP_FIELD, MAX_TEMPLATES, line_text

_OUTCOME_SET = frozenset(OUTCOMES)

#: (namespace, job type, queue, stack) -> the consumer's templates by outcome, without and with a ``QueueTime``.
_CONSUMERS: dict[tuple[str, str, str, str | None], tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]] = {}


class LineWriter:
    """Writes the EMF lines of one consumer (``job_type``, ``queue``, ``stack``) through ``logger``.

    :param logger: where the lines go (its stream, its lock, its namespace).
    :param job_type: the line's ``JobType``.
    :param queue: the line's ``Queue`` (the queue's name).
    :param stack: the line's ``Stack``. Default none (no ``Stack``).
    :param deferred: a ``success`` line is held (:meth:`sqslease.emf.EmfLogger.hold`), to be written with the
        other lines of its delete request just before that request is sent (the worker's settler flushes the logger
        then): one write a request instead of one a message, each of which lets the GIL go to a waiting thread.
        Every other line is written at once, after those held. Default False: each line written and flushed as it
        ends (the Lambda adapter: an invocation that times out keeps the lines of what it ran).
    """

    __slots__ = (
        "_deferred",
        "_flush",
        "_held",
        "_lock",
        "_out",
        "_plain",
        "_queued",
        "_write",
        "job_type",
        "logger",
        "queue",
        "stack",
    )

    def __init__(
        self, logger: EmfLogger, job_type: str, queue: str, stack: str | None = None, *, deferred: bool = False
    ) -> None:
        self.logger = logger
        self.job_type = job_type
        self.queue = queue
        self.stack = stack
        self._deferred = deferred
        self._write = logger._write  # bound once: a line of another kind is one call to it
        # The usual line's write, EmfLogger._write's inline (one write and a flush a line, under its lock): bound
        # once, since the call was a tenth of a line's cost; nothing swaps a logger's stream
        self._lock, self._out, self._flush = logger._lock, logger.stream.write, logger.stream.flush
        self._held = logger._held
        # outcome -> template, without and with a QueueTime: one dict lookup a line, no key tuple; shared by the
        # writers of one consumer (the Lambda adapter makes one an invocation)
        consumer = (logger.namespace, job_type, queue, stack)
        templates = _CONSUMERS.get(consumer)
        if templates is None:
            if len(_CONSUMERS) >= MAX_TEMPLATES:
                _CONSUMERS.clear()
            templates = _CONSUMERS[consumer] = ({}, {})
        self._plain, self._queued = templates

    def emit(
        self,
        message_id: str,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        extensions: int,
        lease_lost: bool,
        error: BaseException | None = None,
        queue_ms: float | None = None,
        group: str | None = None,
    ) -> None:
        """Log one processed message (milliseconds; fields as :meth:`sqslease.emf.EmfLogger.record`'s).

        The usual line (no error, its times floats from 0 to 1e12 as a handler's and a queue's always are, its
        template kept) is one f-string and one write: :func:`sqslease.emf_text.line_text`'s text, built here without
        its call, nor the logger's ``_write`` call (each a tenth of a line's cost, ``bench/runtime_bench.py``)."""
        if (
            error is None
            and type(processing_ms) is float
            and 0.0 <= processing_ms < 1e12
            and type(message_id) is str
            and type(receive_count) is int
            and type(extensions) is int
            and (group is None or type(group) is str)
        ):
            if queue_ms is None:
                template, queued = self._plain.get(outcome), ""
            elif type(queue_ms) is float and 0.0 <= queue_ms < 1e12:
                template, thousandths = self._queued.get(outcome), round(queue_ms * 1000)
                queued = f',"QueueTime":{thousandths // 1000}.{FRACTIONS[thousandths % 1000]}'
            else:
                template = None
            if template is not None:
                thousandths = round(processing_ms * 1000)
                end = "}\n" if group is None else f',"{GROUP_FIELD}":{encode_basestring_ascii(group)}}}\n'
                text = (
                    f'{{"_aws":{{"Timestamp":{int(time.time() * 1000)}{template[0]}'
                    f'{encode_basestring_ascii(message_id)},"ProcessingTime":{thousandths // 1000}.'
                    f'{FRACTIONS[thousandths % 1000]}{template[1]}{receive_count},"Extensions":{extensions},'
                    f'"LeaseLost":{int(lease_lost)}{queued}{end}'
                )
                if self._deferred and outcome == "success":
                    self.logger.hold(text)
                    return
                with self._lock:
                    self._out(self.logger._take_held(text) if self._held else text)  # after the lines held before it
                    self._flush()
                return
        self._emit_other(
            message_id, processing_ms, outcome, receive_count, extensions, lease_lost, error, queue_ms, group
        )

    def _emit_other(
        self,
        message_id: str,
        processing_ms: float,
        outcome: str,
        receive_count: int,
        extensions: int,
        lease_lost: bool,
        error: BaseException | None,
        queue_ms: float | None,
        group: str | None,
    ) -> None:
        """:meth:`emit`'s line of another kind: an error, a time that is an int or negative, a template not kept
        yet (looked up here), a value of another type (through :meth:`~sqslease.emf.EmfLogger.record`)."""
        # The times' test is plain_millis's, inline (a call each was a tenth of a line's cost).
        if (
            error is None
            and type(message_id) is str
            and type(receive_count) is int
            and type(extensions) is int
            and ((type(processing_ms) is float and -1e12 < processing_ms < 1e12) or type(processing_ms) is int)
            and (queue_ms is None or (type(queue_ms) is float and -1e12 < queue_ms < 1e12) or type(queue_ms) is int)
            and (group is None or type(group) is str)
        ):
            template = (self._plain if queue_ms is None else self._queued).get(outcome)
            if template is None and outcome in _OUTCOME_SET:
                template = self._template(outcome, queue_ms is not None)
            if template is not None:
                write = self.logger.hold if self._deferred and outcome == "success" else self._write
                write(
                    line_text(
                        int(time.time() * 1000),
                        template[0],
                        message_id,
                        processing_ms,
                        template[1],
                        receive_count,
                        extensions,
                        lease_lost,
                        queue_ms,
                        group,
                    )
                )
                return
        self.logger.record(
            job_type=self.job_type,
            queue=self.queue,
            message_id=message_id,
            processing_ms=processing_ms,
            outcome=outcome,
            receive_count=receive_count,
            extensions=extensions,
            lease_lost=lease_lost,
            error=error,
            queue_ms=queue_ms,
            stack=self.stack,
            group=group,
        )

    def _template(self, outcome: str, queued: bool) -> tuple[str, str]:
        """The template of ``outcome``'s lines (with a ``QueueTime`` or not), from the logger's, then kept here."""
        template = self.logger._template(self.job_type, self.stack, self.queue, outcome, queued, SCHEMA_VERSION)
        (self._queued if queued else self._plain)[outcome] = template
        return template
