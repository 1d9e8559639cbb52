"""SQS's JSON-protocol errors as the service sends them (for the fault proxy) and as botocore raises them."""

from __future__ import annotations

#: kind -> (HTTP status, ``__type``, ``x-amzn-query-error``, message).
SQS_ERRORS = {
    "throttle": (400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender", "Request is throttled."),
    "throttling": (
        400,
        "com.amazon.coral.availability#ThrottlingException",
        "ThrottlingException;Sender",
        "Rate exceeded",
    ),
    "error500": (500, "com.amazon.coral.service#InternalFailure", "InternalError;Receiver", "Internal error"),
    "access_denied": (
        403,
        "com.amazon.coral.service#AccessDeniedException",
        "AccessDenied;Sender",
        "User is not authorized to perform this action",
    ),
    "kms_denied": (
        400,
        "com.amazonaws.sqs#KmsAccessDenied",
        "KMS.AccessDeniedException;Sender",
        "The ciphertext refers to a customer master key that does not exist or that you do not have access to.",
    ),
}


def client_error(kind: str, operation: str) -> Exception:
    """The botocore ``ClientError`` a real client raises for one of ``SQS_ERRORS``' kinds."""
    from botocore.exceptions import ClientError

    status, error_type, query_error, message = SQS_ERRORS[kind]
    code, _, fault_type = query_error.partition(";")
    error = {"Code": code, "QueryErrorCode": error_type.rsplit("#", 1)[-1], "Message": message, "Type": fault_type}
    failure: Exception = ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": status}}, operation)
    return failure
