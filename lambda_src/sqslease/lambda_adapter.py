"""SQS-triggered Lambda functions: the same handler signature, partial batch failures, leases, deadline guard.

    from sqslease.lambda_adapter import sqs_batch_handler

    @sqs_batch_handler
    def handler(body: str, message) -> None:
        ...  # raise to fail this record only

The decorated function is the Lambda entry point ``handler(event, context)``; it returns
``{"batchItemFailures": [...]}`` (enable ``ReportBatchItemFailures`` on the event source mapping). When every
record failed it raises :class:`BatchFailedError` instead (``raise_on_entire_batch_failure``, default on, as
Powertools does), so that Lambda backs the event source off. A fatal SQS error (access denied, missing queue,
unusable KMS key) is raised as :class:`sqslease.retry.FatalSqsError`.

The records run one at a time, in order (:mod:`sqslease.lambda_batch`). FIFO queues (``.fifo``): with
``max_receive_count`` and ``dead_letter_queue_url`` set (the constructs set both), a failed record is retried within
the invocation while its back-off fits, and sent to the DLQ at ``max_receive_count`` (:mod:`sqslease.invocation_retry`).
Otherwise a group stops at its first failure; its remaining records are released and reported as failures. With
``skip_group_on_error=False`` (the default, as Powertools' ``SqsFifoPartialProcessor``) the whole rest of the batch
stops; with True only that group does.

The deadline guard: no record starts when less than the deadline margin is left, ``deadline_margin`` but at
most a quarter of the time the invocation started with (:func:`sqslease.rules.lambda_deadline_margin`); the
unstarted records are released and reported as failures. A record on a spare thread (its ``max_processing_time``
shorter than the invocation has) still running then, or at ``max_processing_time``, is timed out
(:mod:`sqslease.record_runner`): reported as a failure, EMF ``timed_out``, its lease held until its handler returns
and settles it by the failure policy. A handler still running when the invocation ends ends the execution
environment (:mod:`sqslease.hung_records`): ``process_event`` settles the rest as Lambda would and raises
:class:`~sqslease.hung_records.RecordsHungError`, and the decorated entry point exits the process (status 3), so
that the handler never runs beside its message's redelivery. A record on the invocation's own thread (every other
one) is timed out by the deadline watchdog (:mod:`sqslease.deadline_watch`) if it still runs at the hang point, half
the margin before the end (one that ends before, even inside the margin, is not): the watchdog settles the batch as
Lambda would and ends the environment through ``on_hung`` (the decorated entry point's), since the invocation's
thread is the one that hangs.

An event not SQS's is refused before any record runs: ``NotAnSqsEventError``, a ``ValueError`` naming the format.

``async def`` handlers: their coroutines run one record at a time, like plain handlers, on an event loop the
invocation starts on the first one and stops (cancelling what is left) before it returns. Hooks
(:mod:`sqslease.hooks`) are called before and after each record.

With the heartbeat on (``lease_extension=True`` on the job type), every record's lease is renewed as the
invocation starts (ceil(records / 10) ChangeMessageVisibilityBatch requests, before the first record runs) and
heartbeated while the records wait their turn and run, so no record becomes visible while its invocation runs,
however long the event source held the batch. A record whose lease cannot be renewed (SQS no longer honours its
receipt handle) is not started and is reported as a failure. The trade-off of the shorter queue visibility
timeout this allows: a batch the event source holds longer than that (while it retries throttled invocations)
becomes visible again before the function runs, at the cost of a receive and possibly a second run.

The queue: lease requests (extensions, releases) go to ``SQSLEASE_QUEUE_URL``, which the ``jobqueues``
constructs set on every consumer function (an emulator's or a VPC endpoint's URL works as given); without it, to
the URL the records' ``eventSourceARN`` names (``https://sqs.REGION.amazonaws.com/ACCOUNT/NAME``). A ``queue_url``
argument wins over both. If the configured URL names another queue than the records' ARN (another account or
name, or another region when the URL names one), that is logged as an error on every invocation and the records
are settled on the queue of their ARN: their receipt handles are valid there only, and requests to the other
queue would fail their leases (a record not renewed is not started) and send messages that never ran to the DLQ.
So no message is lost, and the log says which setting to fix.

The SQS clients are created once per process (the first invocation), not per invocation, and so are the lease
settings read from the ``SQSLEASE_*`` variables (:func:`env_settings`): Lambda fixes a function's environment for
the life of its execution environment (a configuration change starts new ones). ``SQSLEASE_QUEUE_URL`` is still
read on every invocation (one lookup). Code that changes the variables within one process (a test, a script)
passes ``settings=ConsumerConfig.from_env().lease`` instead.

What an invocation costs besides the handlers (``bench/runtime_bench.py``): all records successful, no thread (a
sender starts with the first release), and the last invocation's processor. The renewal at the start (lease extension
on, :mod:`sqslease.renewal`) sends its first request of 10 from the invocation's thread (the others from a pool); a
heartbeat starts only if a renewed lease would come due before the invocation ends, which a lease longer than the
function's timeout (a ``LambdaJob``'s: timeout + 10 s) never does.

Idempotency (exactly-once completion, docs/sqslease.md): with ``SQSLEASE_IDEMPOTENCY_TABLE`` set (the store is
built once per process) or a store passed, each record claims its DynamoDB record before its handler runs; a
duplicate is reported done unrun, a record another consumer holds (or that no record could be written for) is a
``batchItemFailure`` left to its lease.

Already on Powertools' ``BatchProcessor``? Keep it, and wrap its call in :func:`leases_held` to add lease
extension and the deadline guard's release of unstarted records.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sqslease.config import ConsumerConfig
from sqslease.emf import EmfLogger
from sqslease.hooks import MessageHooks
from sqslease.hung_records import RecordsHungError, end_environment
from sqslease.idempotency import KeyFunction, message_id_key
from sqslease.idempotency_gate import IdempotencyGate, chosen_key, env_store
from sqslease.idempotency_store import IdempotencyStore
from sqslease.invocation import EventLeases, event_queue_url
from sqslease.lambda_batch import invocation_processor, record_batch, spare_processor
from sqslease.payload_pointer import PayloadStore
from sqslease.processor import Handler
from sqslease.settings import LeaseSettings
from sqslease.sqs_event import sqs_records

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


class BatchFailedError(Exception):
    """Every record of the batch failed (raised so that Lambda backs the event source off)."""

    def __init__(self, failures: list[dict[str, str]]) -> None:
        super().__init__(f"all {len(failures)} records of the batch failed")
        self.failures = failures


def process_event(
    event: dict[str, Any],
    context: Any,
    handler: Handler,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
    emf: EmfLogger | None = None,
    *,
    skip_group_on_error: bool = False,
    raise_on_entire_batch_failure: bool = True,
    hooks: Iterable[MessageHooks] = (),
    idempotency: IdempotencyStore | None = None,
    key: KeyFunction = message_id_key,
    sleep: Callable[[float], None] = time.sleep,
    on_hung: Callable[[RecordsHungError], object] | None = None,
    payloads: PayloadStore | None = None,
) -> dict[str, Any]:
    """Run ``handler(body, message)`` (a plain or an ``async def`` function) on each record; return the partial
    batch response.

    :param sqs: client for extensions, releases and DLQ sends. Default: one per process (see module doc).
    :param queue_url: the records' queue. Default ``SQSLEASE_QUEUE_URL``, else the records' ARN's (module doc).
    :param skip_group_on_error: FIFO only: after a failure stop only that record's group, not the batch.
    :param raise_on_entire_batch_failure: raise :class:`BatchFailedError` when every record failed.
    :param hooks: called before and after each record, after those ``settings.hooks`` names. Default none.
    :param idempotency: the idempotency store (exactly-once completion, see docs/sqslease.md). Default: the one
        ``SQSLEASE_IDEMPOTENCY_*`` describe, built once per process, or none (off) without
        ``SQSLEASE_IDEMPOTENCY_TABLE``.
    :param key: ``key(body, message) -> str``, what makes two records the same job (idempotency on only). Default:
        the function ``settings.idempotency_key`` names (imported once per process), else the ``MessageId``.
    :param sleep: how the invocation waits out a FIFO retry's back-off, in seconds. Default ``time.sleep``.
    :param on_hung: called with the :class:`RecordsHungError` of a record hung on the invocation's own thread, on the
        deadline watchdog's thread once it settled the batch (:mod:`sqslease.deadline_watch`), since this call cannot
        return or raise while the handler runs. Default none: it raises the error if the handler returns.
        :func:`sqs_batch_handler` passes :func:`~sqslease.hung_records.end_environment`.
    :param payloads: reads the payloads of pointer records (:mod:`sqslease.payload_pointer`) and deletes them after
        their records' deletes. Default: the process's (:func:`env_payloads`).
    """
    records = sqs_records(event)  # NotAnSqsEventError (a ValueError) for another trigger's event
    if not records:
        return {"batchItemFailures": []}
    settings = settings or env_settings()
    queue_url = event_queue_url(records, queue_url)
    sqs = sqs or default_client(settings, queue_url)
    store = idempotency if idempotency is not None else env_idempotency(settings)
    gate = IdempotencyGate(store, chosen_key(key, settings)) if store is not None else None
    held = EventLeases(event, context, settings, sqs, queue_url, gate)
    payloads = payloads if payloads is not None else env_payloads(settings)
    processor = invocation_processor(handler, held, settings, sqs, emf, hooks, gate, payloads)
    batch = record_batch(
        records, held, processor, context, skip_group_on_error=skip_group_on_error, sleep=sleep, on_hung=on_hung
    )
    failures = batch.run()
    spare_processor(processor)  # only once it returned: a hung handler's thread may still settle through it
    if raise_on_entire_batch_failure and len(failures) == len(records):
        raise BatchFailedError(failures)
    return {"batchItemFailures": failures}


def sqs_batch_handler(
    handler: Handler | None = None,
    *,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
    skip_group_on_error: bool = False,
    raise_on_entire_batch_failure: bool = True,
    hooks: Iterable[MessageHooks] = (),
    idempotency: IdempotencyStore | None = None,
    key: KeyFunction = message_id_key,
) -> Any:
    """Decorator: ``handler(body, message)`` -> Lambda entry point ``(event, context) -> batch response``.

    Keyword arguments as :func:`process_event`. On its :class:`~sqslease.hung_records.RecordsHungError` (a handler
    still running after its timeout) the entry point ends the process: :func:`sqslease.hung_records.end_environment`
    (from the deadline watchdog's thread when the record hung on the invocation's own).
    """

    def wrap(func: Handler) -> LambdaHandler:
        @functools.wraps(func)
        def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                return process_event(
                    event,
                    context,
                    func,
                    settings,
                    sqs,
                    queue_url,
                    skip_group_on_error=skip_group_on_error,
                    raise_on_entire_batch_failure=raise_on_entire_batch_failure,
                    hooks=hooks,
                    idempotency=idempotency,
                    key=key,
                    on_hung=end_environment,  # a record hung on the invocation's thread: from the watchdog's
                )
            except RecordsHungError as error:
                end_environment(error)

        return lambda_handler

    return wrap(handler) if handler is not None else wrap


@contextlib.contextmanager
def leases_held(
    event: dict[str, Any],
    context: Any,
    settings: LeaseSettings | None = None,
    sqs: Any = None,
    queue_url: str | None = None,
) -> Iterator[None]:
    """Extend the leases of every record of ``event`` while the block runs (e.g. Powertools' processing).

    Lambda settles the records itself (deletes successes, retries ``batchItemFailures``); this only keeps
    them from reappearing while the invocation still works on them.
    """
    records = sqs_records(event)
    if not records:
        yield
        return
    settings = settings or env_settings()
    queue_url = event_queue_url(records, queue_url)
    held = EventLeases(event, context, settings, sqs or default_client(settings, queue_url), queue_url)
    try:
        yield
    finally:
        held.close()
    held.raise_if_fatal()


_client: Any = None
_client_lock = threading.Lock()
_env_settings: LeaseSettings | None = None
_UNSET: Any = object()
_env_store: Any = _UNSET
_payloads: PayloadStore | None = None


def env_idempotency(settings: LeaseSettings) -> IdempotencyStore | None:
    """The process's idempotency store from ``SQSLEASE_IDEMPOTENCY_*`` (``None``: off), built on first use with the
    first ``settings`` (its DynamoDB client's timeouts, its job type), then kept like the SQS client."""
    global _env_store
    if _env_store is _UNSET:  # once per process: no lock on every invocation
        with _client_lock:
            if _env_store is _UNSET:
                _env_store = env_store(settings)
    store: IdempotencyStore | None = _env_store
    return store


def env_payloads(settings: LeaseSettings) -> PayloadStore:
    """The process's payload store (:mod:`sqslease.payload_pointer`), made on first use with the first ``settings``
    (``delete_payloads``), its S3 client made on the first pointer."""
    global _payloads
    if _payloads is None:
        with _client_lock:
            if _payloads is None:
                _payloads = PayloadStore(delete=settings.delete_payloads)
    return _payloads


def env_settings() -> LeaseSettings:
    """The ``SQSLEASE_*`` lease settings of this process: parsed on first use, then kept (see the module doc)."""
    global _env_settings
    if _env_settings is None:
        _env_settings = ConsumerConfig.from_env().lease  # two threads may both parse: the same result
    return _env_settings


def default_client(settings: LeaseSettings, queue_url: str) -> Any:
    """The process's SQS lease client, made on first use (request timeouts from the first ``settings``), in the
    region :func:`sqslease.clients.consumer_region` finds (Lambda sets ``AWS_REGION`` only), sending to the host of
    an emulator's queue URL (:func:`sqslease.clients.queue_endpoint`). Lambda reuses the process: one pool."""
    global _client
    if _client is None:  # the first invocation only: the others take no lock
        with _client_lock:
            if _client is None:
                import boto3

                from sqslease.clients import consumer_region, lease_client, queue_endpoint

                session = boto3.session.Session()
                region = consumer_region(session, queue_url)
                _client = lease_client(settings, session, region_name=region, **queue_endpoint(queue_url))
    return _client
