"""The ``sqslease`` options every consumer takes, declared (``LambdaJob``, ``EcsJob``) or brought
(``add_lambda_consumer``, ``add_ecs_consumer``): ``hooks`` and ``idempotency_key``, read and checked here once,
with the rules of :mod:`jobqueues.consumer_rules`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobqueues.consumer_contract import ConsumerContract
from jobqueues.consumer_rules import check_hooks, check_idempotency_key
from jobqueues.inputs import PropReader

#: The option names, as every consumer spells them.
RUNTIME_OPTIONS = ("hooks", "idempotency_key")
_HOOKS_FIX = "a list of import paths, e.g. ['myapp.hooks:Timing']"


@dataclass(frozen=True)
class RuntimeOptions:
    """A consumer's ``sqslease`` options, checked.

    :param hooks: import paths of ``sqslease`` hooks, ``package.module:name``. Default: none.
    :param idempotency_key: the import path of the idempotency key function. Default: none (the ``MessageId``).
    """

    hooks: tuple[str, ...] = ()
    idempotency_key: str | None = None

    def apply(self, contract: ConsumerContract) -> ConsumerContract:
        """``contract`` with these options: its consumer writes them as ``SQSLEASE_*`` variables or options."""
        return contract.with_hooks(self.hooks).with_idempotency_key(self.idempotency_key)


def read_runtime_options(read: PropReader, *, idempotency: bool) -> RuntimeOptions:
    """The options in ``read``'s props, each checked; errors go to ``read.errors``.

    :param idempotency: the job type has idempotency on (else a key would be ignored, and is refused).
    """
    hooks = read.sequence("hooks", str, "", _HOOKS_FIX) or []
    read.errors += check_hooks(hooks)
    idempotency_key = read.string("idempotency_key")
    read.errors += check_idempotency_key(idempotency_key, idempotency)
    return RuntimeOptions(tuple(hooks), idempotency_key)


def read_runtime_values(read: PropReader) -> RuntimeOptions:
    """The options in ``read``'s props, their types checked (errors go to ``read.errors``); a declared consumer's
    plan checks their rules (:mod:`jobqueues.lambda_job_plan`, :mod:`jobqueues.ecs_job_plan`)."""
    hooks = read.sequence("hooks", str, "", _HOOKS_FIX) or []
    return RuntimeOptions(tuple(hooks), read.string("idempotency_key"))


def brought_runtime_options(
    hooks: Sequence[str] | None, idempotency_key: str | None, *, idempotency: bool
) -> tuple[RuntimeOptions, list[str]]:
    """A binder's options (``None``: not given) and their errors, each naming the option, the value and the fix."""
    read = PropReader({"hooks": hooks, "idempotency_key": idempotency_key}, RUNTIME_OPTIONS)
    return read_runtime_options(read, idempotency=idempotency), read.errors
