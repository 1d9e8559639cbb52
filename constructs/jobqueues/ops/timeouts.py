"""How long the ``jobqueues`` command's AWS clients wait: the one place of its timeouts.

botocore's defaults (60 s to connect, 60 s for an answer, 3 attempts) kept a command three minutes on a port that
accepts connections and never answers. Every call the commands make is answered within a second or two by AWS and
by the emulator, so they wait :data:`CONNECT_TIMEOUT_S` for a connection and :data:`READ_TIMEOUT_S` for an answer,
with botocore's retries (standard mode: 3 attempts, or ``AWS_MAX_ATTEMPTS`` / the config file's ``max_attempts``):
an endpoint that never answers is given up after about ``3 x READ_TIMEOUT_S`` seconds (docs/cli.md).
"""

from __future__ import annotations

from typing import Any

#: Seconds to wait for a TCP connection to the endpoint.
CONNECT_TIMEOUT_S = 5.0
#: Seconds to wait for an answer once a request is sent (each attempt).
READ_TIMEOUT_S = 10.0


def client_config() -> Any:
    """The ``botocore.config.Config`` of every client the commands make: :data:`CONNECT_TIMEOUT_S` and
    :data:`READ_TIMEOUT_S`; retries as botocore's (the user's ``AWS_MAX_ATTEMPTS`` and ``AWS_RETRY_MODE`` apply)."""
    from botocore.config import Config

    return Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S)
