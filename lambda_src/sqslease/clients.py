"""The boto3 SQS clients a consumer uses, each with its own connection pool, timeouts and retry policy.

- ``lease``: extensions, deletes, releases. Short connect/read timeouts and no botocore retries: sqslease
  retries these itself within the leases' slack, so no backoff or 60 s read timeout of botocore can run
  inside the heartbeat. Its pool holds every lease request that can be in flight at once.
- ``receive``: long polls only, so a 20 s poll never holds a connection an extension needs. Its read timeout
  is the poll's wait plus a margin.
- ``control``: the in-flight governor (GetQueueAttributes) and DLQ sends, with botocore's standard retries.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqslease.settings import LeaseSettings

#: Settler threads (one for deletes, one for visibility changes) that send lease requests too, plus the one full
#: batch of deletes at a time that the thread queuing its tenth sends itself (sqslease.settle_queue).
SETTLER_THREADS = 3
RECEIVE_READ_MARGIN_S = 5
AWS_DOMAINS = ("amazonaws.com", "amazonaws.com.cn", "api.aws")
REGION_PATTERN = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")


@dataclass(frozen=True)
class SqsClients:
    """The three clients of one consumer (see the module docstring)."""

    lease: Any
    receive: Any
    control: Any


def queue_region(queue_url: str) -> str | None:
    """The region an AWS queue URL names (``https://sqs.eu-west-1.amazonaws.com/ACCOUNT/NAME``, FIPS, VPC
    endpoint and legacy ``REGION.queue.amazonaws.com`` hosts); None for any other URL (an emulator's)."""
    host = urllib.parse.urlsplit(queue_url).hostname or ""
    if not host.endswith(AWS_DOMAINS):
        return None
    return next((label for label in host.split(".") if REGION_PATTERN.fullmatch(label)), None)


def consumer_region(session: Any, queue_url: str) -> str | None:
    """The region a consumer's clients use: the configured one (``AWS_DEFAULT_REGION``, a profile's), else
    ``AWS_REGION`` (which Lambda and ECS set and botocore does not read), else the queue URL's; None if none."""
    return session.region_name or os.environ.get("AWS_REGION") or queue_region(queue_url)


def queue_endpoint(queue_url: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``{"endpoint_url": ...}`` for a consumer's SQS clients when its queue URL's host is not SQS's regional one
    (an emulator's, a proxy's, a VPC endpoint's ``vpce`` name): the URL's scheme and host, so that requests go where
    the URL points and never to AWS instead. Empty for an AWS regional URL (botocore's endpoint for the region), and
    when an endpoint is configured (``AWS_ENDPOINT_URL_SQS``, ``AWS_ENDPOINT_URL``): the configuration wins."""
    if environ.get("AWS_ENDPOINT_URL_SQS") or environ.get("AWS_ENDPOINT_URL"):
        return {}
    parts = urllib.parse.urlsplit(queue_url)
    host = parts.hostname or ""
    if not parts.scheme or not host or (host.endswith(AWS_DOMAINS) and ".vpce." not in host):
        return {}
    return {"endpoint_url": f"{parts.scheme}://{parts.netloc}"}


def lease_pool_size(settings: LeaseSettings) -> int:
    """Connections lease requests can use at once: the heartbeat's requests plus the settler's."""
    return settings.max_requests_in_flight + SETTLER_THREADS


def make_clients(
    settings: LeaseSettings, concurrency: int = 1, session: Any = None, **client_kwargs: Any
) -> SqsClients:
    """Build the three clients. ``client_kwargs`` (e.g. ``endpoint_url``, ``region_name``) go to every client.

    :param concurrency: handlers running at once; each may send to the DLQ over the ``control`` client.
    :param session: a ``boto3.Session`` (default: a new one).
    """
    session = session or _session()
    return SqsClients(
        lease_client(settings, session, **client_kwargs),
        receive_client(settings, session, **client_kwargs),
        control_client(concurrency, session, **client_kwargs),
    )


def lease_client(settings: LeaseSettings, session: Any = None, **client_kwargs: Any) -> Any:
    """Client for extensions, deletes and releases: ``lease_request_timeout``, no botocore retries."""
    from botocore.config import Config

    timeout = settings.lease_request_timeout
    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "total_max_attempts": 1},  # sqslease retries within the leases' slack
        max_pool_connections=lease_pool_size(settings),
    )
    return (session or _session()).client("sqs", config=config, **client_kwargs)


def receive_client(settings: LeaseSettings, session: Any = None, **client_kwargs: Any) -> Any:
    """Client for long polls only: read timeout = the poll's wait + 5 s; the receive loop backs off itself."""
    from botocore.config import Config

    config = Config(
        connect_timeout=5,
        read_timeout=settings.poll_wait + RECEIVE_READ_MARGIN_S,
        retries={"mode": "standard", "total_max_attempts": 1},
        max_pool_connections=1,
    )
    return (session or _session()).client("sqs", config=config, **client_kwargs)


def control_client(concurrency: int = 1, session: Any = None, **client_kwargs: Any) -> Any:
    """Client for the in-flight governor and DLQ sends: botocore's standard retries, 10 s read timeout."""
    from botocore.config import Config

    config = Config(
        connect_timeout=5, read_timeout=10, retries={"mode": "standard"}, max_pool_connections=concurrency + 1
    )
    return (session or _session()).client("sqs", config=config, **client_kwargs)


def _session() -> Any:
    import boto3

    return boto3.session.Session()
