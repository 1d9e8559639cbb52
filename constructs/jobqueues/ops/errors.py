"""What goes wrong in an operation, as one line and an exit status (docs/cli.md lists them), never a traceback."""

from __future__ import annotations

from typing import Any

from jobqueues.ops import timeouts

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


#: The error codes of a queue that does not exist (the JSON protocol's and the query protocol's).
NO_QUEUE = frozenset({"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"})


def error_code(error: Exception) -> str:
    """The AWS error code of ``error`` (``""`` when it has none)."""
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


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


class NotAws(AwsUnavailable):
    """The endpoint answered, but not as AWS (or the emulator) does: a web page, an empty error, a closed line."""


def aws_error(error: BaseException, endpoint: str | None = None) -> OpsError | None:
    """``error`` (botocore's) as one line, or ``None`` if it is not a failure of asking AWS (a bug, which the
    caller lets through). Every botocore failure kind maps here, whichever command met it (docs/cli.md).

    :param endpoint: where the request went, for the failures that do not say. Default: "AWS".
    """
    from botocore import exceptions as boto
    from botocore.parsers import ResponseParserError

    where = endpoint or "AWS"
    if isinstance(error, boto.ClientError):
        return _client_error(error)
    if isinstance(error, ResponseParserError):
        return NotAws(f"{where} is not AWS: its answer could not be read as an AWS response; check the endpoint")
    if not isinstance(error, boto.BotoCoreError):
        return None
    if isinstance(error, boto.ProfileNotFound):
        return _no_such_profile(str(error.kwargs.get("profile")))
    if isinstance(error, boto.ValidationError | boto.ParamValidationError):
        return BadInput(f"a value AWS would refuse: {_one_line(str(error))}")
    return _connection_error(error, where) or AwsUnavailable(_credentials_line(error) or _one_line(str(error)))


def _client_error(error: Any) -> OpsError:
    """An error AWS answered: access denied and refused credentials are status 3, the rest 1."""
    code = error_code(error)
    text = error.response.get("Error", {}).get("Message", "")
    operation = getattr(error, "operation_name", "")
    if "AccessDenied" in code or code in {"UnauthorizedOperation", "AuthorizationError"}:
        return AwsUnavailable(f"access denied to {operation}: {text or code}")
    if code in {"InvalidClientTokenId", "UnrecognizedClientException", "ExpiredToken", "ExpiredTokenException"}:
        return AwsUnavailable(f"the AWS credentials were refused ({code}): refresh them")
    if code in NO_QUEUE and text.startswith("queue "):  # named by jobqueues.ops.queues.name_missing_queues
        return OpsError(f"{operation} failed: {text}")
    return OpsError(f"{operation} failed: {code}: {text}")


def _connection_error(error: Any, where: str) -> OpsError | None:
    """No answer at all: refused, TLS failed, closed, timed out; ``None`` for another kind of failure."""
    from botocore import exceptions as boto

    url = error.kwargs.get("endpoint_url") or where
    if isinstance(error, boto.SSLError):
        reason = str(error.kwargs.get("error", ""))
        hint = (
            "is it a plain http:// endpoint? (the emulator is)"
            if "WRONG_VERSION_NUMBER" in reason or "record layer failure" in reason
            else "check its certificate (AWS_CA_BUNDLE)"
        )
        return AwsUnavailable(f"TLS failed with {url} ({reason}): {hint}")
    if isinstance(error, boto.ProxyConnectionError):
        return AwsUnavailable(f"cannot reach the proxy {error.kwargs.get('proxy_url')} (HTTPS_PROXY): is it running?")
    if isinstance(error, boto.EndpointConnectionError | boto.ConnectTimeoutError):
        return AwsUnavailable(f"cannot reach {url} (is it running?)")  # a blank after it: a double-click copies it
    if isinstance(error, boto.ReadTimeoutError):
        return AwsUnavailable(
            f"{url} did not answer within {timeouts.READ_TIMEOUT_S:g} s (each of botocore's attempts): is it AWS or "
            "the emulator, and is it overloaded?"
        )
    if isinstance(error, boto.ConnectionClosedError):
        return NotAws(f"{url} closed the connection without an answer: is it AWS or the emulator?")
    if isinstance(error, boto.HTTPClientError | boto.ConnectionError):
        return AwsUnavailable(f"no answer from {url}: {_one_line(str(error.kwargs.get('error', error)))}")
    return None


def _credentials_line(error: Any) -> str | None:
    """A credential or region that could not be found or loaded, with what to do; ``None`` for other kinds."""
    from botocore import exceptions as boto

    if isinstance(error, boto.NoCredentialsError | boto.PartialCredentialsError):
        return (
            "no AWS credentials: configure them (aws configure, AWS_PROFILE, or a role), or pass --endpoint-url "
            "for the local emulator"
        )
    if isinstance(error, boto.NoRegionError):
        return "no AWS region: pass --region, or set AWS_REGION"
    if isinstance(error, boto.CredentialRetrievalError | boto.TokenRetrievalError | boto.SSOError):
        return f"the AWS credentials could not be loaded ({_one_line(str(error))}): refresh them (aws sso login?)"
    return None


def _no_such_profile(profile: str) -> BadInput:
    """``--profile`` (or ``AWS_PROFILE``) names no profile of the AWS config: say which exist."""
    import botocore.session

    session = botocore.session.Session()
    known = ", ".join(sorted(session.available_profiles)) or "none"
    config = session.get_config_variable("config_file")
    return BadInput(f"no AWS profile {profile} in {config} or the credentials file; profiles: {known}")


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())
