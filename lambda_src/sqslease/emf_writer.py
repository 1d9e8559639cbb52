"""One consumer's EMF lines: :class:`sqslease.emf.EmfLogger`'s lines with the consumer's job type, stack and queue
fixed, what the runtime writes per message.

The constant text of a line (its template, :func:`sqslease.emf_text.line_template`) is looked up once per outcome
and kept by the writer, and a line is asked for with positional arguments: a keyword call with eleven arguments and
a seven-part template key per line were a fifth of the Lambda adapter's cost per record (``bench/runtime_bench.py``).
The text is the same as :meth:`~sqslease.emf.EmfLogger.emit`'s; a line of another kind (an error, a time that is not
a plain number) goes through :meth:`~sqslease.emf.EmfLogger.record`.
"""

from __future__ import annotations

import time

from sqslease.emf import OUTCOMES, SCHEMA_VERSION, EmfLogger
from sqslease.emf_text import line_text, plain_millis

_OUTCOME_SET = frozenset(OUTCOMES)


class LineWriter:
    """Writes the EMF lines of one consumer (``job_type``, ``queue``, ``stack``) through ``logger``.

    :param logger: where the lines go (its stream, its lock, its namespace).
    :param job_type: the line's ``JobType``.
    :param queue: the line's ``Queue`` (the queue's name).
    :param stack: the line's ``Stack``. Default none (no ``Stack``).
    """

    __slots__ = ("_templates", "job_type", "logger", "queue", "stack")

    def __init__(self, logger: EmfLogger, job_type: str, queue: str, stack: str | None = None) -> None:
        self.logger = logger
        self.job_type = job_type
        self.queue = queue
        self.stack = stack
        self._templates: dict[tuple[str, bool], tuple[str, str]] = {}  # (outcome, queued) -> template

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
        """Log one processed message (milliseconds; fields as :meth:`sqslease.emf.EmfLogger.record`'s)."""
        if (
            error is None
            and type(message_id) is str
            and type(receive_count) is int
            and type(extensions) is int
            and plain_millis(processing_ms)
            and (queue_ms is None or plain_millis(queue_ms))
            and (group is None or type(group) is str)
        ):
            key = (outcome, queue_ms is not None)
            template = self._templates.get(key)
            if template is None and outcome in _OUTCOME_SET:
                template = self._templates[key] = self.logger._template(
                    self.job_type, self.stack, self.queue, outcome, key[1], SCHEMA_VERSION
                )
            if template is not None:
                self.logger._write(
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
