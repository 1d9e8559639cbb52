"""sqslease: lease (visibility-timeout) management for SQS consumers.

- ``sqslease.config``: ``ConsumerConfig``, everything a consumer is told (queue, handler, lease, idempotency), and
  the one place its settings' variables and options are named.
- ``sqslease.rules``: the visibility-timeout rules shared with the ``jobqueues`` constructs and ``jobstats``
  (no AWS imports).
- ``sqslease.worker``: the long-polling consumer (``python -m sqslease.worker``).
- ``sqslease.lambda_adapter``: ``@sqs_batch_handler`` for SQS-triggered Lambda functions, and
  ``leases_held`` to add lease extension around Powertools' batch processing.
- ``sqslease.hooks``: code called before and after each message; ``sqslease.otel``, one OpenTelemetry span per
  message when ``opentelemetry-api`` is installed (``sqslease[otel]``).
- Underneath: ``LeaseScheduler`` (the lease table), ``Heartbeat`` (extensions), ``Settler`` (deletes and
  visibility changes), ``MessageProcessor`` (one handler run, settled by its outcome; failures by
  ``sqslease.failure_policy``: the failure policies, the DLQ), ``RecordBatch`` (a Lambda invocation's records, in
  order; ``FifoRecordBatch`` for a FIFO queue), ``EmfLogger`` (one line per message),
  ``sqslease.clients`` (one client and connection pool each for lease requests, long polls and the rest),
  ``ReadyQueue`` (receive order, one running message per FIFO group), ``TaskProtection`` (ECS scale-in),
  ``Attempt`` (one handler run, settled once: by its end or its ``max_processing_time``), ``AsyncLoop`` (the
  event loop of ``async def`` handlers).
- ``sqslease.idempotency`` and ``sqslease.idempotency_store``: exactly-once completion records in DynamoDB, tied
  to the leases (the worker and the Lambda adapter claim a record before each handler run).

boto3 is needed at run time only by the parts that call SQS; the Lambda runtime ships it.
"""

from sqslease.config import ConsumerConfig
from sqslease.settings import FailurePolicy, LeaseSettings

__version__ = "0.2.0"

__all__ = ["ConsumerConfig", "FailurePolicy", "LeaseSettings"]
