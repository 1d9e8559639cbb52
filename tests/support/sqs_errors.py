"""SQS's JSON-protocol errors, moved to :mod:`jobqueues.emulator.chaos.sqs_errors`."""

from jobqueues.emulator.chaos.sqs_errors import SQS_ERRORS, client_error

__all__ = ["SQS_ERRORS", "client_error"]
