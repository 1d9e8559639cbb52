"""What goes wrong in an operation, as one line and an exit status (docs/cli.md lists them), never a traceback."""

from __future__ import annotations

#: Exit statuses of the ``jobqueues`` command.
EXIT_OK = 0
#: ``drift`` found a difference; an operation ran and failed (a redrive entry the queue refused, say).
EXIT_FAILED = 1
#: Bad input: an unknown job type or stack, a wrong option (click's own usage errors are 2 as well).
EXIT_USAGE = 2
#: AWS could not be asked: no credentials, an unreachable endpoint, access denied.
EXIT_AWS = 3
#: Interrupted (Ctrl-C); what was done is reported, nothing is lost.
EXIT_INTERRUPTED = 130


class OpsError(Exception):
    """An operation failed; the message says what to do."""

    exit_status = EXIT_FAILED


class BadInput(OpsError):
    """Options that cannot go together, or that do not fit the job type (``--group`` on a standard queue)."""

    exit_status = EXIT_USAGE


class NotFound(OpsError):
    """An unknown job type or stack; the message names those that exist."""

    exit_status = EXIT_USAGE


class AwsUnavailable(OpsError):
    """No credentials, an unreachable endpoint, access denied."""

    exit_status = EXIT_AWS


def aws_error(error: Exception, endpoint: str | None = None) -> OpsError | None:
    """``error`` (botocore's) as one line, or ``None`` if it is not one of the AWS failures above."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    where = endpoint or "AWS"
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return AwsUnavailable(
            "no AWS credentials: configure them (aws configure, AWS_PROFILE, or a role), or pass --endpoint-url "
            "for the local emulator"
        )
    if isinstance(error, NoRegionError):
        return AwsUnavailable("no AWS region: pass --region, or set AWS_REGION")
    if isinstance(error, EndpointConnectionError):
        return AwsUnavailable(f"cannot reach {error.kwargs.get('endpoint_url') or where}: is it running?")
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        text = error.response.get("Error", {}).get("Message", "")
        operation = getattr(error, "operation_name", "")
        if "AccessDenied" in code or code in {"UnauthorizedOperation", "AuthorizationError"}:
            return AwsUnavailable(f"access denied to {operation}: {text or code}")
        if code in {"InvalidClientTokenId", "UnrecognizedClientException", "ExpiredToken", "ExpiredTokenException"}:
            return AwsUnavailable(f"the AWS credentials were refused ({code}): refresh them")
        return OpsError(f"{operation} failed: {code}: {text}")
    return None
