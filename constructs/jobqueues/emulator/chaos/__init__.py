"""Chaos for ``jobqueues local up --chaos RATE``: SQS faults between the consumers and the emulator, kills of
the local workers, and a report on the user's own handlers at the end.

The runner's API::

    from jobqueues.emulator.chaos import Chaos, read_queue_state

    chaos = Chaos(upstream_endpoint, rate=0.2, seed=1, kill_interval_s=15.0)  # rate: 0..1 of SQS requests
    chaos.start(workers)          # workers: () -> list[subprocess.Popen] (the live ECS worker processes, asked at
                                  # each kill); serves chaos.endpoint; call before starting the consumers
    ...                           # consumers use AWS_ENDPOINT_URL=chaos.endpoint (non-SQS requests pass untouched):
                                  # ECS workers, Lambda functions, and the Lambda driver's own SQS client (its
                                  # receives and deletes are what the report's "received" sees)
    # stop the consumers, then:
    chaos.stop()
    final = [read_queue_state(sqs, job.name, job.queue_url, job.dead_letter_queue_url, timeout_s=vt)
             for job in job_types]   # sqs: a boto3 client on the emulator itself, not the proxy; job.name: a row
    report = chaos.report(emf_lines_by_stream, final)  # {log stream: [EMF line text or object]} -> ChaosReport
    print(report.format())        # or json.dumps(report.as_dict())
    report.lost, report.ran_twice, report.two_live_handlers, report.never_received  # totals
    report.job_types              # per deployment (STACK/JOB_TYPE): a Dev and a Prod Stage's job type apart

- :mod:`~jobqueues.emulator.chaos.proxy`: :class:`FaultProxy` and :func:`chaos_rule` (throttling, 500s, delays,
  held answers at ``rate`` of the SQS requests);
- :mod:`~jobqueues.emulator.chaos.ledger`: :class:`MessageLedger`, the proxy's observer: ids handed out and deleted;
- :mod:`~jobqueues.emulator.chaos.killer`: :class:`Killer`, kill -9 or SIGTERM of one live worker every interval;
- :mod:`~jobqueues.emulator.chaos.report`: the report's pure functions and their definitions;
- :mod:`~jobqueues.emulator.chaos.final_state`: the ids left in a deployment's queue and DLQ at the end;
- :mod:`~jobqueues.emulator.chaos.session`: :class:`Chaos`, the four together.
"""

from jobqueues.emulator.chaos.final_state import queue_ids, read_queue_state
from jobqueues.emulator.chaos.killer import Kill, Killer, Process
from jobqueues.emulator.chaos.ledger import MessageLedger, Observations
from jobqueues.emulator.chaos.proxy import Fault, FaultProxy, Rule, chaos_rule, random_faults
from jobqueues.emulator.chaos.report import ChaosReport, JobTypeReport, QueueState, build_report
from jobqueues.emulator.chaos.runs import Run, parse_runs
from jobqueues.emulator.chaos.session import Chaos

__all__ = [
    "Chaos",
    "ChaosReport",
    "Fault",
    "FaultProxy",
    "JobTypeReport",
    "Kill",
    "Killer",
    "MessageLedger",
    "Observations",
    "Process",
    "QueueState",
    "Rule",
    "Run",
    "build_report",
    "chaos_rule",
    "parse_runs",
    "queue_ids",
    "random_faults",
    "read_queue_state",
]
