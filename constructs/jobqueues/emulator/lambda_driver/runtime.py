"""One execution environment of a deployed function: a fresh interpreter running :mod:`.bootstrap`.

The interpreter imports the downloaded code, not this project's: the code directory, then the layers' ``python``
directories, on ``sys.path`` as in Lambda.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import site
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from jobqueues.emulator.lambda_driver import bootstrap
from jobqueues.emulator.lambda_driver.function import DeployedFunction, DriverError
from jobqueues.emulator.paths import SOURCE_ROOT
from jobqueues.emulator.server import Emulator

#: The directory holding ``jobqueues.emulator``, which the bootstrap is imported from.
PROJECT_DIR = SOURCE_ROOT
#: Seconds a runtime may take to import the function's code (Lambda's init phase allows 10 s).
INIT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Invocation:
    """One invocation's outcome: the handler's return value, or its error."""

    request_id: str
    result: Any = None
    error: dict[str, Any] | None = None
    duration_s: float = 0.0
    cold_start: bool = False


def bootstrap_path(project_dir: Path, python_path: str, site_dirs: list[str] | None = None) -> dict[str, str]:
    """What the function's interpreter needs to find :mod:`.bootstrap` under ``project_dir``: in a checkout,
    ``project_dir`` last on ``PYTHONPATH`` (the bootstrap takes it off again, so the function sees its code and
    layers, not this project's). Installed, ``project_dir`` is the interpreter's site-packages, found without
    help: taking it off would take boto3, which Lambda's runtime provides, from the function too.

    :param python_path: the function's ``PYTHONPATH`` (its code and layers).
    """
    if site_dirs is None:
        site_dirs = [*site.getsitepackages(), site.getusersitepackages()]
    if any(Path(entry).resolve() == project_dir.resolve() for entry in site_dirs):
        return {"PYTHONPATH": python_path}
    return {
        "PYTHONPATH": os.pathsep.join([python_path, str(project_dir)]),
        bootstrap.BOOTSTRAP_PATH_ENV: str(project_dir),
    }


class LocalRuntime:
    """One execution environment of the function: a subprocess reused across invocations (warm starts).

    :param stdout: where the function's stdout goes (its EMF lines): a file opened for appending.
    :param stderr: where its stderr goes (logging).
    :param extra_env: variables over the function's environment and Lambda's reserved ones (the demo's ledger
        path, ``jobqueues local up --env``).
    """

    def __init__(
        self,
        function: DeployedFunction,
        emulator: Emulator,
        stdout: IO[Any],
        stderr: IO[Any],
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.function = function
        self.emulator = emulator
        self.stdout = stdout
        self.stderr = stderr
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self._responses: int | None = None
        self._buffer = b""
        self._exited = False  # the process closed its answers' pipe (it exited, or is exiting)
        self.handler_file: str | None = None
        self.cold_starts = 0
        self._log_streams = itertools.count(1)

    def environment(self) -> dict[str, str]:
        """Lambda's reserved variables (pointed at the emulator) over the function's, then ``extra_env``."""
        f = self.function
        reserved = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PYTHONPATH": os.pathsep.join(f.python_path()),
            "PYTHONUNBUFFERED": "1",
            "LAMBDA_TASK_ROOT": str(f.code_dir),
            "LAMBDA_RUNTIME_DIR": str(f.opt_dir),
            "_HANDLER": f.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{f.runtime}",
            "AWS_LAMBDA_FUNCTION_NAME": f.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(f.memory_mb),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(f.timeout_s),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{f.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{next(self._log_streams)}",
            **self.emulator.env(),
        }
        # Function variables cannot override reserved ones in Lambda either; a local-only setting asked for can.
        return {**f.environment, **reserved, **self.extra_env}

    def start(self) -> None:
        """Start the interpreter and import the handler (Lambda's init phase)."""
        read_fd, write_fd = os.pipe()
        env = self.environment()
        env = {**env, **bootstrap_path(PROJECT_DIR, env["PYTHONPATH"]), bootstrap.RESPONSE_FD_ENV: str(write_fd)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", bootstrap.__name__],
                cwd=self.function.code_dir,  # Lambda's working directory is the code directory
                env=env,
                stdin=subprocess.PIPE,
                stdout=self.stdout,
                stderr=self.stderr,
                pass_fds=(write_fd,),
            )
        finally:
            os.close(write_fd)
        self._responses, self._buffer, self._exited = read_fd, b"", False
        self.cold_starts += 1
        message = self._read(INIT_TIMEOUT_S)
        if message is None or "ready" not in message:
            error = (message or {}).get("init_error", {"errorMessage": "no answer"})
            self.stop()
            raise DriverError(f"function {self.function.name} failed to initialise: {error.get('errorMessage')}")
        self.handler_file = message["ready"]["handler_file"]

    def invoke(self, event: dict[str, Any]) -> Invocation:
        """Run the handler on ``event`` with the function's timeout; kill the environment on a timeout. Code that
        fails to import fails the invocation, as in Lambda (its error is in the function's log)."""
        cold = self.process is None or self.process.poll() is not None
        if cold:
            try:
                self.start()
            except DriverError as error:
                failed = {"errorType": "Runtime.InitError", "errorMessage": str(error)}
                return Invocation(str(uuid.uuid4()), error=failed, cold_start=True)
        assert self.process is not None and self.process.stdin is not None
        request_id = str(uuid.uuid4())
        started = time.time()
        request = {
            "event": event,
            "aws_request_id": request_id,
            "invoked_function_arn": self.function.arn,
            "deadline_epoch_ms": (started + self.function.timeout_s) * 1000,
        }
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        answer = self._read(self.function.timeout_s + 1)
        duration = time.time() - started
        if answer is None:
            exited = self._exited  # it closed its end of the pipe: its process is ending, not late
            # a timed-out or exited environment is never reused: the next one starts afresh; a timed-out one is
            # killed at once, as Lambda does, not left to run its handler on
            status = self.stop(kill=not exited)
            ended = exit_error(status) if exited else timeout_error(self.function.timeout_s)
            return Invocation(request_id, error=ended, cold_start=cold)
        if "result" in answer:
            return Invocation(request_id, result=answer["result"], duration_s=duration, cold_start=cold)
        return Invocation(request_id, error=answer, duration_s=duration, cold_start=cold)

    def _read(self, timeout_s: float) -> dict[str, Any] | None:
        """The next response line, or None on timeout or end of file."""
        assert self._responses is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._responses], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._responses, 65536)
            if not chunk:
                self._exited = True
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self, kill: bool = False) -> int | None:
        """End the environment (closing its stdin ends the request loop; kill if it does not exit within 5 s, or at
        once with ``kill``). Returns its process's exit status (negative: the signal that ended it), ``None`` when
        none was running."""
        status = None
        if self.process is not None:
            if kill:
                self.process.kill()
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                status = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                status = self.process.wait()
            self.process = None
        if self._responses is not None:
            os.close(self._responses)
            self._responses = None
        return status


def exit_error(status: int | None) -> dict[str, Any]:
    """Lambda's error for an invocation whose runtime process exited (the environment is reset afterwards)."""
    if status is not None and status < 0:  # Lambda words it as Go does: "signal: killed"
        how = f"signal: {(signal.strsignal(-status) or str(-status)).lower()}"
    else:
        how = f"exit status {status}"
    return {"errorType": "Runtime.ExitError", "errorMessage": f"Runtime exited with error: {how}"}


def timeout_error(timeout_s: int) -> dict[str, Any]:
    """The driver's error for an invocation that ran past the function's timeout (the environment is killed)."""
    return {"errorType": "Runtime", "errorMessage": f"Task timed out after {timeout_s} s"}
