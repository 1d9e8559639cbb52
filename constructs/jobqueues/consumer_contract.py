"""The typed contract from a job queue's declaration to its consumer: the real ``LeaseSettings`` it runs with.

Built at synth, where ``LeaseSettings``' own validation is the lease rule: a declaration whose consumer could
not keep its leases fails there, not in a container at start. A consumer is told it through the runtime's own
:class:`sqslease.config.ConsumerConfig` (:meth:`ConsumerContract.config`): a Lambda function as its variables,
an ECS worker as its options, so a renamed setting cannot leave a consumer reading a name nobody writes.
Pure Python (no aws_cdk): the queue URLs are the CDK's token strings, resolved at deploy time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqslease.config import ENV_PREFIX, SETTINGS, ConsumerConfig, options, variables
from sqslease.idempotency_settings import IdempotencySettings
from sqslease.rules import (
    DEFAULT_HEARTBEAT_INTERVAL_S,
    DEFAULT_SHUTDOWN_GRACE_S,
    DEFAULT_WORKER_CONCURRENCY,
    consumer_extension_threshold,
)
from sqslease.settings import LeaseSettings

#: Written even at their default, so that a template shows the lease its consumer keeps (and, with ``stack``, what
#: its EMF lines are measured as: the deployment).
LEASE_FIELDS = (
    "dead_letter_queue_url",
    "job_type",
    "stack",
    "heartbeat",
    "visibility_timeout",
    "extension_threshold",
)
#: The idempotency settings a consumer is told with idempotency on: the table and the records' retention.
IDEMPOTENCY_FIELDS = ("idempotency_table", "idempotency_retention_period")
#: The worker's command.
WORKER_MODULE = ("python", "-m", "sqslease.worker")
#: Variables the worker reads besides its configuration: ECS sets ``ECS_AGENT_URI`` (task scale-in protection).
WORKER_VARIABLES = ("ECS_AGENT_URI",)


def reserved_variable(name: str) -> str | None:
    """Why a consumer's own environment must not hold variable ``name``, or ``None`` when it may.

    ``sqslease`` reads every setting's variable that the contract does not write (a fallback of the options), so
    such a variable would change the lease the declaration planned; the worker's other variables are set by ECS.
    """
    hooks, key = SETTINGS["hooks"], SETTINGS["idempotency_key"]
    if name.upper() == hooks.variable:
        return f"{hooks.variable} is the job's hooks= prop: pass hooks=['package.module:name', ...] instead"
    if name.upper() == key.variable:
        return f"{key.variable} is the job's idempotency_key= prop: pass idempotency_key='package.module:function'"
    if name.upper().startswith(ENV_PREFIX):
        return (
            f"{ENV_PREFIX}* variables are sqslease's settings, which the construct sets from the declaration "
            "(a variable would override a default the plan relies on); declare the setting on the job instead"
        )
    if name in WORKER_VARIABLES:
        return f"{name} is set by ECS (the worker's task scale-in protection calls it)"
    return None


@dataclass(frozen=True)
class ConsumerContract:
    """What a consumer of one job queue runs with.

    :param queue_url: the source queue's URL (a token string at synth).
    :param lease: the lease settings, validated by ``sqslease`` itself when built.
    :param visibility_timeout_token: the visibility timeout as the token string a queue was given, when it is
        unknown at synth (``lease`` then holds a placeholder that is never written). Default: none.
    :param idempotency: the idempotency records' table (a token string at synth) and retention, validated by
        ``sqslease`` itself when built (:meth:`with_idempotency`). Default: none (idempotency off).
    """

    queue_url: str
    lease: LeaseSettings
    visibility_timeout_token: str | None = None
    idempotency: IdempotencySettings | None = None

    @classmethod
    def of(
        cls,
        *,
        job_type: str,
        queue_url: str,
        dead_letter_queue_url: str | None,
        visibility_timeout_s: float | None,
        visibility_timeout_token: str | None = None,
        lease_extension: bool,
        max_processing_time_s: float | None = None,
        max_batching_window_s: float = 0,
        max_receive_count: int | None = None,
        stack: str | None = None,
        delete_payloads: bool = True,
    ) -> ConsumerContract:
        """The contract of a queue with these lease facts; raises ``ValueError`` when ``sqslease`` would refuse
        them (the queue's declaration checks the same rule first, with a fix).

        :param visibility_timeout_s: the queue's visibility timeout; ``None`` for a token, then given as
            ``visibility_timeout_token``.
        :param max_receive_count: the DLQ's ``maxReceiveCount``: with the DLQ's URL, a FIFO consumer retries a
            failed message in process and dead-letters it itself (docs/sqslease.md, "FIFO queues"). Default
            ``None`` (a token, or an adopted queue): not written; the worker reads the queue's ``RedrivePolicy``.
        :param stack: the name of the stack that deploys the job queue, on each of its consumer's EMF lines
            (``Stack``): jobstats measures each deployment of a job type apart. Default: none (not written).
        :param delete_payloads: the consumer deletes a payload kept in S3 after its message (``delete_payloads``);
            ``False`` is told, as any setting off its default. Default True.
        """
        vt = LeaseSettings.visibility_timeout if visibility_timeout_s is None else visibility_timeout_s
        lease = LeaseSettings(
            visibility_timeout=vt,
            extension_threshold=consumer_extension_threshold(vt, heartbeat=lease_extension),
            heartbeat_interval=DEFAULT_HEARTBEAT_INTERVAL_S,
            heartbeat=lease_extension,
            # The declared longest a message may take, counted from its handler's start: a handler still running
            # then has failed (timed_out). The lease cap stays SQS's 12 h from receipt (max_total_lease's default):
            # a cap of max_processing_time would lapse the lease of a message that waited in the prefetch.
            max_processing_time=max_processing_time_s,
            dead_letter_queue_url=dead_letter_queue_url,
            max_receive_count=max_receive_count,
            max_batching_window=max_batching_window_s,
            job_type=job_type,
            stack=stack,
            delete_payloads=delete_payloads,
        )
        token = visibility_timeout_token if visibility_timeout_s is None else None
        return cls(queue_url=queue_url, lease=lease, visibility_timeout_token=token)

    def with_idempotency(self, table_name: str, retention_period_s: float) -> ConsumerContract:
        """This contract with idempotency on: records in table ``table_name``, COMPLETED ones kept
        ``retention_period_s`` (plus the runtime's margin); raises ``ValueError`` when ``sqslease`` would refuse it."""
        settings = IdempotencySettings(table=table_name, retention_period=retention_period_s)
        return replace(self, idempotency=settings)

    def with_hooks(self, hooks: Sequence[str]) -> ConsumerContract:
        """This contract with the consumer's ``hooks`` (import paths, checked by
        :func:`jobqueues.consumer_rules.check_hooks`), told as the setting ``hooks``."""
        return replace(self, lease=replace(self.lease, hooks=tuple(hooks)))

    def with_idempotency_key(self, path: str | None) -> ConsumerContract:
        """This contract with the consumer's idempotency key function (an import path, checked by
        :func:`jobqueues.consumer_rules.check_idempotency_key`), told as the setting ``idempotency_key``.
        ``None``: the ``MessageId`` (nothing told)."""
        return replace(self, lease=replace(self.lease, idempotency_key=path))

    def config(
        self,
        handler: str | None = None,
        concurrency: int = DEFAULT_WORKER_CONCURRENCY,
        shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S,
    ) -> ConsumerConfig:
        """Everything a consumer of this contract is told, as ``sqslease`` holds it (validated there).

        :param handler: the per-message function. Default: none.
        :param concurrency: handlers running at once in one worker. Default: 4.
        :param shutdown_grace_s: seconds running handlers get after SIGTERM. Default: 25.
        """
        return ConsumerConfig(
            queue_url=self.queue_url,
            handler=handler,
            concurrency=concurrency,
            lease=replace(self.lease, shutdown_grace=shutdown_grace_s),
            idempotency=self.idempotency or IdempotencySettings(),
        )

    def fields(self, *extra: str) -> list[str]:
        """The lease fields a consumer is given: :data:`LEASE_FIELDS`, what differs from the runtime's default,
        and ``extra``."""
        named = [*LEASE_FIELDS, *extra]
        return [*named, *(f for f in self.lease.changed_fields() if f not in named)]

    def settings(self, *extra: str) -> dict[str, str]:
        """Setting name -> value as text: the queue URL and :meth:`fields` of the lease, as ``sqslease`` reads them.

        :param extra: lease fields to write even at their default.
        """
        return self._told(self.config(), ["queue_url", *self.fields(*extra)])

    def environment(self, handler: str | None = None) -> dict[str, str]:
        """What a Lambda consumer is told, as the variables it reads: :meth:`settings`, the idempotency settings
        (with idempotency on) and the handler.

        :param handler: the per-message function, ``module.function``. Default: not set.
        """
        told = self.settings()
        if self.idempotency is not None:
            told.update(self._told(self.config(), IDEMPOTENCY_FIELDS))
        if handler is not None:
            told.update(self._told(self.config(handler), ["handler"]))
        return variables(told)

    def worker_command(
        self,
        handler: str,
        concurrency: int = DEFAULT_WORKER_CONCURRENCY,
        shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S,
    ) -> list[str]:
        """The container command of an ECS consumer: ``python -m sqslease.worker`` with everything it is told as
        options (options, not variables: visible in the task definition, and cdk-nag's ECS2 asks for no container
        environment).

        :param handler: the per-message function, ``package.module:function``.
        :param concurrency: handlers running at once in one task. Default: 4.
        :param shutdown_grace_s: seconds running handlers get after SIGTERM. Default: 25.
        """
        config = self.config(handler, concurrency, shutdown_grace_s)
        told = self._told(config, ["handler", "concurrency"])
        told.update(self._told(config, ["queue_url", *self.fields("shutdown_grace")]))
        if self.idempotency is not None:
            told.update(self._told(config, IDEMPOTENCY_FIELDS))
        return [*WORKER_MODULE, *options(told)]

    def brought_worker_settings(self) -> dict[str, str]:
        """Setting name -> text: what ``add_ecs_consumer`` completes a brought worker's command with, the options
        its :meth:`worker_command` could not hold: the hooks and the key function, given to the binder, when set;
        the idempotency settings too, with idempotency on (a command of the worker's own may lack them)."""
        names = [*(IDEMPOTENCY_FIELDS if self.idempotency is not None else ())]
        names += [name for name in ("hooks", "idempotency_key") if name in self.lease.changed_fields()]
        return self._told(self.config(), names)

    def _told(self, config: ConsumerConfig, names: Sequence[str]) -> dict[str, str]:
        """``config``'s values of ``names`` as text, the visibility timeout as its token when it is one."""
        told = config.values(names)
        if self.visibility_timeout_token is not None and "visibility_timeout" in told:
            told["visibility_timeout"] = self.visibility_timeout_token
        return told
