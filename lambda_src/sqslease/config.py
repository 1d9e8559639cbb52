"""Everything a consumer is told, in one typed object (:class:`ConsumerConfig`), and the one place where its
settings are named.

A setting is a field: the config's own (``queue_url``, ``handler``, ``concurrency``, ``log_level``), a
:class:`~sqslease.settings.LeaseSettings` field, of the same name (``visibility_timeout``, ``hooks``), or an
:class:`~sqslease.idempotency_settings.IdempotencySettings` field, prefixed ``idempotency_``
(``idempotency_table``). Its environment variable is ``SQSLEASE_`` and the name in upper case
(``SQSLEASE_VISIBILITY_TIMEOUT``), its option ``--`` and the name in kebab case (``--visibility-timeout``):
:data:`SETTINGS`, derived from the dataclass fields, is the only place either is spelled. A Lambda function is told
its configuration as variables (:meth:`ConsumerConfig.to_env`), an ECS worker as options
(:meth:`ConsumerConfig.to_args`); ``python -m sqslease.worker`` reads its options over its variables
(:meth:`ConsumerConfig.from_args`), ``sqslease.lambda_entry`` its variables (:meth:`ConsumerConfig.from_env`).
Values are written and read by :mod:`sqslease.setting_values`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NoReturn

from sqslease.idempotency_settings import INVALID_IDEMPOTENCY_SETTINGS, IdempotencySettings
from sqslease.rules import DEFAULT_WORKER_CONCURRENCY
from sqslease.setting_values import from_text, kind_of, metavar, to_text, unwritable
from sqslease.settings import INVALID_SETTINGS, LeaseSettings

ENV_PREFIX = "SQSLEASE_"
#: How a ``ValueError`` of :class:`ConsumerConfig`'s own checks begins; the problems follow, separated by ``"; "``.
INVALID_CONFIG = "invalid sqslease consumer settings: "
#: The config's parts whose fields are settings, and the prefix of their settings' names.
PARTS = {"lease": "", "idempotency": "idempotency_"}
_ROLE = re.compile(r":[\w:]+:`~?([^`]+)`")


@dataclass(frozen=True)
class ConsumerConfig:
    """Everything a consumer is told: its queue, its handler, how many run at once, its lease and its idempotency.

    :param queue_url: the queue to consume. Required by ``python -m sqslease.worker``; a Lambda function settles its
        records on the queue their ARN names, and logs an error when this names another. Default ``None``.
    :param handler: the per-message function, ``package.module:function`` (a Lambda function's may be
        ``module.function``). Required. Default ``None``.
    :param concurrency: handlers running at once in one worker, at least 1. Default 4. Jobs of a few milliseconds
        want 10: with jobs shorter than a receive, each receive brings about ``concurrency`` messages, at most 10
        ("Jobs shorter than a receive" in docs/sqslease.md).
    :param log_level: the worker's logging level (``DEBUG``, ``INFO``, ``WARNING``...), its handler's loggers
        included; the AWS SDK's (``sqslease.worker.cli.SDK_LOGGERS``) stay at ``INFO`` at least: at ``DEBUG`` they
        write each signed request and every message body. Default ``INFO``.
    :param lease: the lease settings, each a setting of its field's name. Default ``LeaseSettings()``.
    :param idempotency: the idempotency settings, each a setting ``idempotency_<field>``. Default: no table (off).
    """

    queue_url: str | None = None
    handler: str | None = None
    concurrency: int = DEFAULT_WORKER_CONCURRENCY
    log_level: str = "INFO"
    lease: LeaseSettings = field(default_factory=LeaseSettings)
    idempotency: IdempotencySettings = field(default_factory=IdempotencySettings)

    def __post_init__(self) -> None:
        problems = []
        if self.concurrency < 1:
            problems.append(f"concurrency must be at least 1 (handlers running at once), got {self.concurrency}")
        if self.log_level.upper() not in logging.getLevelNamesMapping():
            problems.append(f"log_level {self.log_level!r} is not a level: give DEBUG, INFO or WARNING")
        for setting in SETTINGS.values():
            why = unwritable(setting.kind, self.value(setting.name))
            if why is not None:
                problems.append(f"{setting.name} {why}")
        if problems:
            raise ValueError(INVALID_CONFIG + "; ".join(problems))

    def value(self, name: str) -> object:
        """The value of setting ``name``; a ``KeyError`` for no setting."""
        setting = SETTINGS[name]
        return getattr(getattr(self, setting.part) if setting.part else self, setting.field)

    def values(self, names: Collection[str] | None = None) -> dict[str, str]:
        """Setting name -> its value as text, in :data:`SETTINGS`' order; ``None`` values are left out.

        :param names: only these settings; a name that is no setting is a ``ValueError``. Default: every one.
        """
        unknown = sorted(set(names or ()) - SETTINGS.keys())
        if unknown:
            raise ValueError(f"no sqslease setting {', '.join(unknown)}: the settings are sqslease.config.SETTINGS")
        chosen = (n for n in SETTINGS if names is None or n in names)
        return {n: to_text(value) for n in chosen if (value := self.value(n)) is not None}

    def to_env(self, names: Collection[str] | None = None) -> dict[str, str]:
        """The environment variables that tell a consumer this config (a Lambda function's); see :meth:`values`."""
        return variables(self.values(names))

    def to_args(self, names: Collection[str] | None = None) -> list[str]:
        """The command-line options that tell a worker this config (an ECS task's); see :meth:`values`."""
        return options(self.values(names))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, part: str | None = None) -> ConsumerConfig:
        """The config ``environ``'s variables tell (default ``os.environ``); an empty variable is not given.
        A ``ValueError`` names a variable whose value is no value of its setting, or what the config refuses.

        :param part: read only the variables of this part's settings (``"lease"``, ``"idempotency"``), the rest
            at their defaults. Default: every setting.
        """
        given = _from_environ(environ)
        return cls.of_text({n: v for n, v in given.items() if part is None or SETTINGS[n].part == part})

    @classmethod
    def from_args(
        cls, args: argparse.Namespace | Sequence[str], environ: Mapping[str, str] | None = None
    ) -> ConsumerConfig:
        """The config of parsed options (:meth:`add_arguments`'s), or of an argument list, over ``environ``'s
        variables (default ``os.environ``): an option wins over its variable."""
        if not isinstance(args, argparse.Namespace):
            parser = _Parser(add_help=False, allow_abbrev=False)
            cls.add_arguments(parser)
            args = parser.parse_args(list(args))
        given = _from_environ(environ)
        for setting in SETTINGS.values():
            raw = getattr(args, setting.name, None)
            if raw is not None:
                given[setting.name] = (raw, setting.option)
        return cls.of_text(given)

    @classmethod
    def of_text(cls, given: Mapping[str, tuple[str, str]]) -> ConsumerConfig:
        """The config of setting name -> (its value as text, where it was given: the option or the variable)."""
        parts: dict[str, dict[str, object]] = {"": {}, **{part: {} for part in PARTS}}
        for name, (raw, source) in given.items():
            setting = SETTINGS[name]
            parts[setting.part][setting.field] = from_text(setting.kind, raw, source)
        lease = LeaseSettings(**parts["lease"])  # type: ignore[arg-type]
        idempotency = IdempotencySettings(**parts["idempotency"])  # type: ignore[arg-type]
        return cls(**parts[""], lease=lease, idempotency=idempotency)  # type: ignore[arg-type]

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """One option per setting, with its ``--help`` line (what it is, its unit and default, its variable); each
        parsed as text (default ``None``: not given), read by :meth:`from_args`."""
        groups = {
            part: parser.add_argument_group(title)
            for part, title in (("", "the consumer"), ("lease", "lease settings"), ("idempotency", "idempotency"))
        }
        for setting in SETTINGS.values():
            groups[setting.part].add_argument(
                setting.option,
                dest=setting.name,
                default=None,
                metavar=metavar(setting.kind),
                help=setting.help().replace("%", "%%"),
            )


@dataclass(frozen=True)
class Setting:
    """One setting of :class:`ConsumerConfig`: where its value lives, and its names.

    :param name: its name: its field's, or ``idempotency_`` and its field's for an idempotency setting.
    :param part: where its field is: ``""`` (the config itself), ``"lease"`` or ``"idempotency"``.
    :param field: its field's name in the dataclass that declares it.
    :param kind: the field's annotation without ``| None`` (:func:`sqslease.setting_values.kind_of`).
    :param owner: the dataclass that declares the field, whose docstring documents it.
    """

    name: str
    part: str
    field: str
    kind: str
    owner: type

    @property
    def variable(self) -> str:
        """The environment variable: ``SQSLEASE_VISIBILITY_TIMEOUT``."""
        return ENV_PREFIX + self.name.upper()

    @property
    def option(self) -> str:
        """The command-line option: ``--visibility-timeout``."""
        return "--" + self.name.replace("_", "-")

    def spelled(self) -> str:
        """How a message names the setting for a worker: ``--hooks (SQSLEASE_HOOKS)``."""
        return f"{self.option} ({self.variable})"

    def help(self) -> str:
        """Its ``--help`` text: its docstring entry (with its unit and default) and its variable."""
        text = _ROLE.sub(r"\1", param_docs(self.owner).get(self.field, "")).replace("``", "")
        return f"{text} Env {self.variable}.".lstrip()


@functools.cache
def param_docs(owner: type) -> dict[str, str]:
    """Field name -> its ``:param name: text`` entry in ``owner``'s docstring, on one line."""
    entries: dict[str, str] = {}
    current = None
    for line in (owner.__doc__ or "").splitlines():
        entry = re.match(r"\s*:param (\w+):\s*(.*)", line)
        if entry:
            current = entry[1]
            entries[current] = entry[2].strip()
        elif current is not None and line.strip() and not line.strip().startswith(":"):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def _settings() -> dict[str, Setting]:
    found: dict[str, Setting] = {}
    owners: tuple[tuple[str, type], ...] = (("", ConsumerConfig), ("lease", LeaseSettings))
    for part, owner in (*owners, ("idempotency", IdempotencySettings)):
        for f in dataclasses.fields(owner):
            if not part and f.name in PARTS:
                continue  # a part, whose fields are the settings
            setting = Setting(PARTS.get(part, "") + f.name, part, f.name, kind_of(f.type), owner)
            if setting.name in found:
                raise TypeError(f"two sqslease settings are named {setting.name}: rename a field")
            found[setting.name] = setting
    return found


#: Every setting, by name: the config's own, then the lease's, then the idempotency's, in their fields' order.
SETTINGS: Mapping[str, Setting] = MappingProxyType(_settings())


def variables(values: Mapping[str, str]) -> dict[str, str]:
    """Setting name -> text (:meth:`ConsumerConfig.values`) as the environment variables that tell them."""
    return {SETTINGS[name].variable: text for name, text in values.items()}


def options(values: Mapping[str, str]) -> list[str]:
    """Setting name -> text (:meth:`ConsumerConfig.values`) as the options that tell them: ``--name value``, or
    ``--name=value`` for a value that begins with ``-`` (which a parser would take for an option). A value that
    is exactly ``--`` cannot be told as an option (argparse reads it as the end of the options): ``ValueError``."""
    args: list[str] = []
    for name, text in values.items():
        option = SETTINGS[name].option
        if text == "--":
            raise ValueError(f"{name}='--' cannot be passed as the option {option} (it marks the end of options)")
        args += [f"{option}={text}"] if text.startswith("-") else [option, text]
    return args


def given(args: Sequence[str]) -> dict[str, str]:
    """The settings an argument list gives, name -> its text as given (the last one when given twice); other
    arguments (``python -m sqslease.worker``, an option of no setting) are passed over."""
    parser = _Parser(add_help=False, allow_abbrev=False)
    ConsumerConfig.add_arguments(parser)
    known, _ = parser.parse_known_args(list(args))
    return {name: raw for name, raw in vars(known).items() if raw is not None}


def named(message: str) -> str:
    """``message`` (a ``ValueError`` of the config or of one of its parts) with the option and variable of each
    setting it names: ``... (set with --extension-threshold or SQSLEASE_EXTENSION_THRESHOLD)``."""
    if message.startswith(INVALID_SETTINGS):
        candidates = [(s.field, s) for s in SETTINGS.values() if s.part == "lease"]
    elif message.startswith(INVALID_IDEMPOTENCY_SETTINGS):
        candidates = [(s.field, s) for s in SETTINGS.values() if s.part == "idempotency"]
    else:
        candidates = [(s.name, s) for s in SETTINGS.values()]
    found = [s for word, s in candidates if re.search(rf"(?<![-\w]){word}(?!\w)", message)]
    if not found:
        return message
    return f"{message} (set with {', '.join(f'{s.option} or {s.variable}' for s in found)})"


def _from_environ(environ: Mapping[str, str] | None) -> dict[str, tuple[str, str]]:
    environ = os.environ if environ is None else environ
    given = {name: (environ.get(s.variable) or "", s.variable) for name, s in SETTINGS.items()}
    return {name: pair for name, pair in given.items() if pair[0]}


class _Parser(argparse.ArgumentParser):
    """Options parsed for :meth:`ConsumerConfig.from_args`: a bad one is a ``ValueError``, not an exit."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)
