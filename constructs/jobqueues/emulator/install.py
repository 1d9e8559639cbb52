"""Make moto deploy what jobqueues emits, strictly: apply every patch, then check the handlers are in use.

The server (:mod:`jobqueues.emulator.server`) calls :func:`install` in its own process before serving.
"""

from __future__ import annotations

from jobqueues.emulator.cfn.registry import check_handlers_in_use
from jobqueues.emulator.patches.cloudformation import (
    harden_change_set_execution,
    keep_retained_resources_except_on_create,
    make_unsupported_types_fatal,
    tell_change_sets_apart_by_stack,
)
from jobqueues.emulator.patches.dynamodb import keep_table_ttl_recovery_and_encryption, make_dynamodb_requests_atomic
from jobqueues.emulator.patches.iam import attach_managed_policies, load_aws_managed_policies_on_demand
from jobqueues.emulator.patches.lambda_ import keep_lambda_layers, make_sqs_event_source_mappings_inert
from jobqueues.emulator.patches.s3 import keep_bucket_lifecycle_and_public_access
from jobqueues.emulator.patches.sqs import (
    keep_one_queue_encryption,
    make_fifo_redelivery_ordered,
    make_retention_check_constant_time,
    make_sqs_receives_atomic,
    report_redrive_allow_policy,
)
from jobqueues.emulator.patches.sqs_move_tasks import add_message_move_tasks


def install() -> None:
    """Apply every patch, in this order, and check that moto will use the handlers of :mod:`jobqueues.emulator.cfn`."""
    make_unsupported_types_fatal()
    harden_change_set_execution()
    tell_change_sets_apart_by_stack()
    keep_retained_resources_except_on_create()
    report_redrive_allow_policy()
    keep_one_queue_encryption()
    keep_lambda_layers()
    load_aws_managed_policies_on_demand()
    attach_managed_policies()
    keep_table_ttl_recovery_and_encryption()
    keep_bucket_lifecycle_and_public_access()
    make_dynamodb_requests_atomic()
    make_sqs_event_source_mappings_inert()
    # The FIFO order first: the atomic receive's lock then covers it (make_fifo_redelivery_ordered's docstring).
    make_fifo_redelivery_ordered()
    make_sqs_receives_atomic()
    make_retention_check_constant_time()
    add_message_move_tasks()
    check_handlers_in_use()
