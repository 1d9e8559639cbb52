"""The main program of a function's fresh interpreter: ``python -m jobqueues.emulator.lambda_driver.bootstrap``.

:class:`~jobqueues.emulator.lambda_driver.runtime.LocalRuntime` starts it with the function's environment. It
imports the handler named by ``_HANDLER`` (Lambda's init phase), then answers one JSON request per stdin line
(``{"event", "aws_request_id", "invoked_function_arn", "deadline_epoch_ms"}``) on the descriptor named by
``_LOCAL_LAMBDA_RESPONSE_FD``: ``{"result": ...}`` or the error; stdout and stderr belong to the function, as in
Lambda. It imports only the standard library, and first takes the directory it was found through
(``_LOCAL_LAMBDA_BOOTSTRAP_PATH``) off ``sys.path`` and ``PYTHONPATH``: the function sees its code and layers only.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from typing import IO, Any

#: The descriptor the answers go to (not stdout: that is the function's).
RESPONSE_FD_ENV = "_LOCAL_LAMBDA_RESPONSE_FD"
#: The directory that holds ``jobqueues.emulator``, on ``PYTHONPATH`` only for ``python -m`` to find this module.
BOOTSTRAP_PATH_ENV = "_LOCAL_LAMBDA_BOOTSTRAP_PATH"


class Context:
    """The context object Lambda passes the handler, from the reserved variables and the request."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ["AWS_LAMBDA_FUNCTION_VERSION"]
        self.invoked_function_arn = request["invoked_function_arn"]
        self.memory_limit_in_mb = os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]
        self.aws_request_id = request["aws_request_id"]
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self._deadline_ms = request["deadline_epoch_ms"]

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout, as Lambda's context reports them."""
        return max(0, int(self._deadline_ms - time.time() * 1000))


def _forget_bootstrap_path() -> None:
    """Take this project's directory off ``sys.path`` and ``PYTHONPATH``, as if ``-m`` had found us elsewhere."""
    path = os.environ.pop(BOOTSTRAP_PATH_ENV, None)
    if path is None:
        return
    sys.path[:] = [entry for entry in sys.path if entry != path]
    kept = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry and entry != path]
    os.environ["PYTHONPATH"] = os.pathsep.join(kept)


def _error(error: BaseException, error_type: str | None = None, message: str | None = None) -> dict[str, Any]:
    """The error as Lambda answers it, and logged on stderr as Lambda's Python runtime logs it (``[ERROR]
    Type: message`` and the traceback): a function's failure is in its log stream, not only in the answer."""
    answer = {
        "errorType": error_type or type(error).__name__,
        "errorMessage": str(error) if message is None else message,
        "stackTrace": traceback.format_exc().splitlines(),
    }
    print(f"[ERROR] {answer['errorType']}: {answer['errorMessage']}", file=sys.stderr)
    print("\n".join(answer["stackTrace"]), file=sys.stderr, flush=True)
    return answer


def main() -> int:
    """Import the handler, then serve requests until stdin closes; 1 if the handler cannot be imported."""
    _forget_bootstrap_path()
    out: IO[str] = os.fdopen(int(os.environ.pop(RESPONSE_FD_ENV)), "w")

    def send(answer: dict[str, Any]) -> None:
        out.write(json.dumps(answer) + "\n")
        out.flush()

    module_name, _, attribute = os.environ["_HANDLER"].rpartition(".")
    try:
        handler = getattr(importlib.import_module(module_name), attribute)
    except Exception as error:
        # Lambda's own words for it: the function fails every invocation until its code is fixed
        text = f"Unable to import module '{module_name}': {error}"
        send({"init_error": _error(error, "Runtime.ImportModuleError", text)})
        return 1
    send(
        {
            "ready": {
                "handler_file": getattr(sys.modules[module_name], "__file__", None),
                "python": sys.version.split()[0],
            }
        }
    )
    for line in sys.stdin:
        request = json.loads(line)
        try:
            send({"result": handler(request["event"], Context(request))})
        except Exception as error:
            send(_error(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
