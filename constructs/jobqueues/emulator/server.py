"""Run ``moto_server`` with jobqueues' CloudFormation handlers, as a process you can kill.

``python -m jobqueues.emulator.server --port 5000`` serves on ``http://localhost:5000``.
:func:`running_server` starts one on a free port for tests, benchmarks and the deploy CLI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobqueues.emulator.paths import SOURCE_ROOT

#: Credentials and region moto accepts; the account is moto's default, 123456789012.
LOCAL_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


@dataclass(frozen=True)
class Emulator:
    """An emulator at ``endpoint``: boto3 clients and SDK environment for it."""

    endpoint: str

    def client(self, service: str) -> Any:
        """A boto3 client for ``service`` on this emulator (test credentials, us-east-1)."""
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=LOCAL_AWS_ENV["AWS_DEFAULT_REGION"],
            aws_access_key_id=LOCAL_AWS_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        )

    def env(self) -> dict[str, str]:
        """Environment variables that point the AWS SDKs and the ``cdk`` CLI at this emulator."""
        return {**LOCAL_AWS_ENV, "AWS_ENDPOINT_URL": self.endpoint}


@dataclass(frozen=True)
class LocalServer(Emulator):
    """A running emulator this process started: its endpoint and process."""

    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


def wait_until_ready(endpoint: str, process: subprocess.Popen[bytes] | None = None, timeout_s: float = 120) -> None:
    """Poll moto's dashboard API until it answers; raise if the process dies or time runs out.

    :param timeout_s: a backstop, not an expectation: the server starts in a few seconds, but importing moto on
        a machine loaded by other work took over 30 s. Default 120.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"local emulator exited with code {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise TimeoutError(f"local emulator at {endpoint} not ready after {timeout_s} s")


@contextlib.contextmanager
def running_server(port: int | None = None, log_path: Path | None = None) -> Iterator[LocalServer]:
    """Start the emulator on ``localhost`` (a free port by default) and stop it on exit.

    ``localhost``, not ``127.0.0.1``: moto resolves CloudFormation template URLs by that host name.
    """
    port = port or free_port()
    endpoint = f"http://localhost:{port}"
    log = open(log_path, "wb") if log_path else None
    process = subprocess.Popen(
        [sys.executable, "-m", "jobqueues.emulator.server", "--port", str(port)],
        stdout=subprocess.DEVNULL if log is None else log,
        stderr=subprocess.STDOUT,
        cwd=SOURCE_ROOT,
        env={**os.environ, **LOCAL_AWS_ENV},
    )
    try:
        wait_until_ready(endpoint, process)
        yield LocalServer(endpoint, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log is not None:
            log.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)

    from moto.server import main as moto_main

    from jobqueues.emulator.install import install

    install()
    moto_main(["--host", "localhost", "--port", str(args.port)])


if __name__ == "__main__":
    main()
