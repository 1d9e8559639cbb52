"""The worker's command line: options and environment checked up front, each problem reported on one line.

``python -m sqslease.worker`` runs :func:`main` (see :mod:`sqslease.worker` for the options and the shutdown).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import re
import sys
from typing import Any, NoReturn

from sqslease.clients import consumer_region, make_clients
from sqslease.fifo_retry import redrive_policy
from sqslease.hooks import configured_hooks
from sqslease.idempotency_gate import configured_key
from sqslease.imports import import_object, resolve_exceptions
from sqslease.retry import FatalSqsError
from sqslease.rules import DEFAULT_WORKER_CONCURRENCY as DEFAULT_CONCURRENCY
from sqslease.rules import HUNG_EXIT_CODE as HUNG_EXIT_CODE  # the exit status is the rules' (Lambda's too)
from sqslease.settings import ENV_PREFIX, LeaseSettings
from sqslease.worker import HandlerHungError, Worker

FATAL_EXIT_CODE = 1
USAGE_EXIT_CODE = 2


class _CommandLine(argparse.ArgumentParser):
    """Reports a bad option or environment on one line (``prog: error: ...``) with exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT_CODE, f"{self.prog}: error: {message}\n")


def name_options(message: str) -> str:
    """Add the option and variable of each lease setting ``message`` names by its field name."""
    named = [f.name for f in dataclasses.fields(LeaseSettings) if re.search(rf"(?<![-\w]){f.name}(?!\w)", message)]
    if not named:
        return message
    options = ", ".join(f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}" for name in named)
    return f"{message} (set with {options})"


def _whole_number(raw: str, source: str, meaning: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{source}={raw!r} is not a whole number: give {meaning}") from None
    if value < 1:
        raise ValueError(f"{source}={value}: give {meaning}")
    return value


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


def main(argv: list[str] | None = None) -> int:
    """``python -m sqslease.worker``; returns the exit status (2: a bad option or environment, on one line)."""
    parser = _CommandLine(prog="python -m sqslease.worker", description="Long-polling SQS consumer (sqslease.worker)")
    parser.add_argument("--queue-url", default=os.environ.get("SQSLEASE_QUEUE_URL"))
    parser.add_argument("--handler", default=os.environ.get("SQSLEASE_HANDLER"), help="package.module:function")
    parser.add_argument(
        "--concurrency", help=f"handlers running at once; env SQSLEASE_CONCURRENCY; default {DEFAULT_CONCURRENCY}"
    )
    parser.add_argument("--log-level", default=os.environ.get("SQSLEASE_LOG_LEVEL", "INFO"))
    LeaseSettings.add_arguments(parser)
    args = parser.parse_args(argv)
    levels = logging.getLevelNamesMapping()
    if args.log_level.upper() not in levels:
        parser.error(f"--log-level (SQSLEASE_LOG_LEVEL) {args.log_level!r} is not a level: give DEBUG, INFO or WARNING")
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    if not args.queue_url or not args.handler:
        parser.error("--queue-url and --handler (or SQSLEASE_QUEUE_URL and SQSLEASE_HANDLER) are required")
    try:
        settings = LeaseSettings.from_args(args)
        concurrency = _whole_number(
            args.concurrency or os.environ.get("SQSLEASE_CONCURRENCY") or str(DEFAULT_CONCURRENCY),
            "--concurrency" if args.concurrency else "SQSLEASE_CONCURRENCY",
            "the number of handlers to run at once, at least 1",
        )
    except ValueError as error:
        parser.error(name_options(str(error)))
    try:
        handler = import_object(args.handler)
    except ValueError as error:
        parser.error(f"--handler (SQSLEASE_HANDLER): {error}")
    if not callable(handler):
        parser.error(f"--handler {args.handler!r} is not callable: name a function handler(body, message)")
    try:
        resolve_exceptions(settings.non_retryable)
    except ValueError as error:
        parser.error(f"--non-retryable ({ENV_PREFIX}NON_RETRYABLE): {error}")
    try:
        configured_hooks(settings.job_type, settings.hooks)  # made once: the worker reuses them
    except ValueError as error:
        parser.error(f"--hooks ({ENV_PREFIX}HOOKS): {error}")
    try:
        configured_key(settings.idempotency_key)  # made once: the worker reuses it
    except ValueError as error:
        parser.error(f"--idempotency-key ({ENV_PREFIX}IDEMPOTENCY_KEY): {error}")

    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.session.Session()
        region = consumer_region(session, args.queue_url)
        if not region:
            parser.error(
                f"no AWS region: the queue URL {args.queue_url!r} names none; set AWS_REGION (or AWS_DEFAULT_REGION, "
                "or a profile's region), or pass the queue's AWS URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"
            )
        clients = make_clients(settings, concurrency, session=session, region_name=region)
    except BotoCoreError as error:  # e.g. AWS_PROFILE naming no profile
        parser.error(f"AWS configuration (AWS_PROFILE, AWS_CONFIG_FILE, AWS_* variables): {error}")
    settings = with_redrive_policy(settings, clients.control, args.queue_url)
    worker = Worker(
        clients.lease,
        args.queue_url,
        handler,
        settings,
        concurrency,
        receive_sqs=clients.receive,
        control_sqs=clients.control,
        ecs_agent_uri=os.environ.get("ECS_AGENT_URI"),
    )
    try:
        worker.run()
    except FatalSqsError:
        return FATAL_EXIT_CODE  # logged once, by the worker
    except HandlerHungError as error:
        logging.getLogger("sqslease").critical("exiting: %s", error)
        return HUNG_EXIT_CODE
    return 0
