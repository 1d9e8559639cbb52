"""An in-process stand-in for an SQS event source mapping, running a deployed function's code locally.

moto stores Lambda functions and event source mappings but cannot run the code without Docker, and the
emulator keeps SQS mappings inert (nothing polls the queue). The driver does the mapping's job for one
deployed function:

- :func:`.function.load_function` downloads the function's code zip and each layer's content from the
  emulator's S3 (the objects the deploy uploaded, checked against the ``CodeSha256`` the Lambda API reports)
  into a temporary directory laid out like ``/var/task`` and ``/opt``, and reads the function's handler,
  timeout, environment and its mapping (queue, batch size, batching window, ``ReportBatchItemFailures``).
- :class:`.runtime.LocalRuntime` runs the handler in a fresh interpreter (a subprocess running
  :mod:`.bootstrap`), so the downloaded code is what gets imported: the code directory, then the layers'
  ``python`` directories, on ``sys.path`` as in Lambda; the function's environment plus Lambda's reserved
  variables; its stdout and stderr go to log files as they would go to CloudWatch Logs. A context with
  ``get_remaining_time_in_millis``, ``function_name`` and ``aws_request_id`` is passed; an invocation past the
  timeout is killed. An environment that exits during an invocation fails it (``Runtime.ExitError``, with its exit
  status, as Lambda reports it); either way the next invocation starts a new environment (a cold start), as
  Lambda resets an environment after a crash or a timeout.
- :class:`.event_source.LambdaDriver` receives from the queue like the mapping: up to ``BatchSize`` records,
  waiting up to ``MaximumBatchingWindowInSeconds`` to fill the batch, with the queue's visibility timeout;
  builds the SQS event Lambda sends; invokes; then deletes exactly the records that ``batchItemFailures`` does
  not name. A function error, a timeout, or an invalid ``itemIdentifier`` fails the whole batch (nothing is
  deleted), as in Lambda. With ``FilterCriteria``, a record that matches no filter is deleted unprocessed
  (:mod:`.filters`, the pattern subset it applies).

Not emulated: concurrent invocations (one poller, one runtime), scaling of pollers, the 6 MB payload limit.
This package's ``__init__`` imports nothing: the function's interpreter imports :mod:`.bootstrap` through it.
"""
