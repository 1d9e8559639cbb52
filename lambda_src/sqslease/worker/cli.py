"""The worker's command line: options and environment checked up front, each problem reported on one line.

``python -m sqslease.worker`` runs :func:`main` (see :mod:`sqslease.worker` for the options and the shutdown). Its
options are the settings of :class:`sqslease.config.ConsumerConfig`, each also read from its variable; the
command line wins.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from sqslease.clients import SqsClients, consumer_region, make_clients, queue_endpoint
from sqslease.config import SETTINGS, ConsumerConfig, named
from sqslease.emf import EmfLogger
from sqslease.fifo_retry import redrive_policy
from sqslease.hooks import configured_hooks
from sqslease.idempotency_gate import configured_key, configured_store
from sqslease.imports import import_object, resolve_exceptions
from sqslease.processor import Handler
from sqslease.retry import FatalSqsError
from sqslease.rules import HUNG_EXIT_CODE as HUNG_EXIT_CODE  # the exit status is the rules' (Lambda's too)
from sqslease.settings import LeaseSettings
from sqslease.stdout_lines import WholeLines
from sqslease.worker import HandlerHungError, Worker

FATAL_EXIT_CODE = 1
USAGE_EXIT_CODE = 2
PROG = "python -m sqslease.worker"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def usage_error(message: str) -> NoReturn:
    """End the process with status 2 and one line, ``python -m sqslease.worker: error: message``."""
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(USAGE_EXIT_CODE)


class _CommandLine(argparse.ArgumentParser):
    """Reports a bad option on one line (``prog: error: ...``) with exit status 2."""

    def error(self, message: str) -> NoReturn:
        usage_error(message)


def command_line() -> argparse.ArgumentParser:
    """The worker's argument parser: one option per setting of :class:`~sqslease.config.ConsumerConfig`."""
    parser = _CommandLine(prog=PROG, description="Long-polling SQS consumer (sqslease.worker)", allow_abbrev=False)
    ConsumerConfig.add_arguments(parser)
    return parser


def read_config(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> ConsumerConfig:
    """The worker's configuration: its options (default ``sys.argv``) over its variables (default ``os.environ``).
    A bad one ends the process: status 2, one line naming the option and its variable."""
    args = command_line().parse_args(None if argv is None else list(argv))
    try:
        return ConsumerConfig.from_args(args, environ)
    except ValueError as error:
        usage_error(named(str(error)))


def loaded_handler(config: ConsumerConfig) -> Handler:
    """The handler ``config`` names, with its exceptions, hooks and key function imported once (the worker reuses
    them): a missing or bad one ends the process with status 2, naming the option."""
    queue_url, handler = SETTINGS["queue_url"], SETTINGS["handler"]
    if not config.queue_url or not config.handler:
        usage_error(
            f"{queue_url.option} and {handler.option} (or {queue_url.variable} and {handler.variable}) are required"
        )
    try:
        function = import_object(config.handler)
    except ValueError as error:
        usage_error(f"{handler.spelled()}: {error}")
    if not callable(function):
        usage_error(f"{handler.option} {config.handler!r} is not callable: name a function handler(body, message)")
    lease = config.lease
    imports = (
        ("non_retryable", lambda: resolve_exceptions(lease.non_retryable)),
        ("hooks", lambda: configured_hooks(lease.job_type, lease.hooks)),
        ("idempotency_key", lambda: configured_key(lease.idempotency_key)),
    )
    for name, load in imports:
        try:
            load()
        except ValueError as error:
            usage_error(f"{SETTINGS[name].spelled()}: {error}")
    named_function: Handler = function
    return named_function


def sqs_clients(config: ConsumerConfig) -> SqsClients:
    """The worker's SQS clients, in the configured region or the queue URL's; none ends the process (status 2)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    queue_url = config.queue_url or ""
    try:
        session = boto3.session.Session()
        region = consumer_region(session, queue_url)
        if not region:
            usage_error(
                f"no AWS region: the queue URL {queue_url!r} names none; set AWS_REGION (or AWS_DEFAULT_REGION, "
                "or a profile's region), or pass the queue's AWS URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"
            )
        endpoint = queue_endpoint(queue_url)  # an emulator's URL: its host, not AWS's
        return make_clients(config.lease, config.concurrency, session=session, region_name=region, **endpoint)
    except BotoCoreError as error:  # e.g. AWS_PROFILE naming no profile
        usage_error(f"AWS configuration (AWS_PROFILE, AWS_CONFIG_FILE, AWS_* variables): {error}")


def with_redrive_policy(settings: LeaseSettings, sqs: Any, queue_url: str) -> LeaseSettings:
    """``settings`` with a FIFO queue's ``max_receive_count`` and ``dead_letter_queue_url`` read from its
    ``RedrivePolicy`` where the options do not give them (the constructs give both), so that a failed message is
    retried in process (:mod:`sqslease.fifo_retry`). A policy that cannot be read is logged: the worker runs on, its
    failures releasing their groups' later messages."""
    if not queue_url.endswith(".fifo") or (settings.max_receive_count and settings.dead_letter_queue_url):
        return settings
    try:
        policy = redrive_policy(sqs, queue_url)
    except Exception as error:  # the worker's own requests report a fatal error: this one only costs the retries
        logging.getLogger("sqslease").warning("could not read the RedrivePolicy of %s: %s", queue_url, error)
        return settings
    if policy is None:
        return settings
    max_receive_count, dead_letter_queue_url = policy
    logging.getLogger("sqslease").info(
        "FIFO queue: maxReceiveCount %d, DLQ %s (its RedrivePolicy)", max_receive_count, dead_letter_queue_url
    )
    return dataclasses.replace(
        settings,
        max_receive_count=settings.max_receive_count or max_receive_count,
        dead_letter_queue_url=settings.dead_letter_queue_url or dead_letter_queue_url,
    )


#: The AWS SDK's loggers, kept at INFO or above whatever ``log_level`` says: at DEBUG they write each request's
#: signed headers (a session token among them) and every message body.
SDK_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer")


def configure_logging(log_level: str) -> None:
    """The worker's log on stderr at ``log_level`` (its own, and its handler's loggers), the SDK's at INFO at least."""
    level = logging.getLevelNamesMapping()[log_level.upper()]
    logging.basicConfig(stream=sys.stderr, level=level, format=LOG_FORMAT)
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO))


def main(argv: list[str] | None = None) -> int:
    """``python -m sqslease.worker``; returns the exit status (2: a bad option or environment, on one line)."""
    config = read_config(argv)
    configure_logging(config.log_level)
    handler = loaded_handler(config)
    clients = sqs_clients(config)
    queue_url = config.queue_url or ""
    settings = with_redrive_policy(config.lease, clients.control, queue_url)
    emf = EmfLogger(sys.stdout)
    stdout = sys.stdout = WholeLines(emf)  # a handler's print() (two writes) never splits an EMF line
    try:
        worker = Worker(
            clients.lease,
            queue_url,
            handler,
            settings,
            config.concurrency,
            emf=emf,
            receive_sqs=clients.receive,
            control_sqs=clients.control,
            ecs_agent_uri=os.environ.get("ECS_AGENT_URI"),
            idempotency=configured_store(settings, config.idempotency, config.concurrency),
        )
        worker.run()
    except FatalSqsError:
        return FATAL_EXIT_CODE  # logged once, by the worker
    except HandlerHungError as error:
        logging.getLogger("sqslease").critical("exiting: %s", error)
        return HUNG_EXIT_CODE
    finally:
        stdout.close_lines()
        sys.stdout = emf.stream
    return 0
