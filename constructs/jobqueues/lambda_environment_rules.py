"""Rules for a Lambda function's own environment variables (a ``LambdaJob``'s ``environment``), in plain values
(no aws_cdk): names Lambda takes, none it sets itself. Each error names the variable, the problem and the fix."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Lambda's pattern for an environment variable's name (the Lambda API's ``Environment`` type).
LAMBDA_VARIABLE_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]+")
#: The variables Lambda sets and refuses in a function's configuration ("Defined runtime environment variables").
LAMBDA_RESERVED_VARIABLES = frozenset(
    {
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_EXECUTION_ENV",
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "AWS_LAMBDA_FUNCTION_VERSION",
        "AWS_LAMBDA_INITIALIZATION_TYPE",
        "AWS_LAMBDA_LOG_GROUP_NAME",
        "AWS_LAMBDA_LOG_STREAM_NAME",
        "AWS_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_LAMBDA_RUNTIME_API",
        "LAMBDA_TASK_ROOT",
        "LAMBDA_RUNTIME_DIR",
    }
)


def check_lambda_environment(names: Sequence[str]) -> list[str]:
    """``environment``: names Lambda takes (a letter, then letters, digits or ``_``; two characters at least),
    none of those Lambda sets itself."""
    errors = []
    for name in names:
        if not LAMBDA_VARIABLE_NAME.fullmatch(name):
            errors.append(
                f"environment[{name!r}] is not a name Lambda takes: a letter, then letters, digits or '_' (two "
                f"characters at least, [a-zA-Z][a-zA-Z0-9_]+); rename it, e.g. {_variable_name(name)!r}"
            )
        elif name in LAMBDA_RESERVED_VARIABLES:
            errors.append(
                f"environment[{name!r}]: Lambda sets {name} itself and refuses it in a function's environment; "
                f"read os.environ[{name!r}] in the handler, or give your own setting another name"
            )
    return errors


def _variable_name(name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    return cleaned if re.match(r"[a-zA-Z]", cleaned) and len(cleaned) > 1 else f"V_{cleaned}"
