"""SQS's JSON-protocol errors, moved to :mod:`local_emulator.chaos.sqs_errors`."""

from local_emulator.chaos.sqs_errors import SQS_ERRORS, client_error

__all__ = ["SQS_ERRORS", "client_error"]
