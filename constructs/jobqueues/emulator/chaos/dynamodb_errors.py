"""DynamoDB's JSON-protocol errors as the service sends them (for the fault proxy and botocore-level injection)."""

from __future__ import annotations

#: kind -> (HTTP status, ``__type``, message).
DYNAMODB_ERRORS = {
    "throttle": (
        400,
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded.",
    ),
    "throttling": (400, "com.amazon.coral.availability#ThrottlingException", "Rate exceeded"),
    "error500": (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"),
}
