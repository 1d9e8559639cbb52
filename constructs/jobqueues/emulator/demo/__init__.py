"""The end-to-end demo ``make local`` runs after the deploy: the deployed consumers at work, measured.

    python -m jobqueues.emulator.demo --endpoint http://localhost:PORT [--stack JobQueuesExample] [--logs DIR]

Against a running emulator holding the deployed example app, and everything read from what was deployed:

1. sends jobs to every job type of the stack;
2. runs each ECS job's worker as local processes with the deployed task definition's command (the
   template's container command, its ``Ref`` s resolved to the deployed queue URLs);
3. runs each Lambda job's handler through :mod:`jobqueues.emulator.lambda_driver` (the deployed code and layer,
   environment, batch size and batching window);
4. shows a job outliving its visibility timeout finishing once thanks to lease extensions, a poison message
   reaching the DLQ after ``maxReceiveCount``, a worker killed with kill -9 and its message processed again
   within one lease, a SIGTERM drain, and (with the ECS job's idempotency on) a job whose delete was lost
   delivered again and deleted unrun, a duplicate;
5. writes the consumers' EMF lines under ``--logs`` and runs ``python -m jobstats profile`` on them: measured
   p99 next to the declared timeouts and the deployed visibility timeout;
6. ends with a summary table. Exit status 0 when nothing was lost, nothing ran twice at once, the poison
   message is in the DLQ, and the duplicate delivery did not run.

:func:`run_demo` is the same as a function (the deploy CLI and the end-to-end test call it). The modules:
:mod:`.discovery` (what the stack deployed), :mod:`.harness` (sending, workers, waiting, the logs),
:mod:`.scenarios` (the Lambda job and the ECS job's scenarios), :mod:`.duplicate` (the lost delete's
redelivery), :mod:`.ledger` (the runs the handlers record), :mod:`.report` (the results and their tables),
:mod:`.run` (the whole demo, and its command line).
"""

from __future__ import annotations

from jobqueues.emulator.demo.harness import DemoError
from jobqueues.emulator.demo.report import DemoResult
from jobqueues.emulator.demo.run import DEFAULT_STACK, main, run_demo

__all__ = ["DEFAULT_STACK", "DemoError", "DemoResult", "main", "run_demo"]
