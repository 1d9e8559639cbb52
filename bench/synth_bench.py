"""Synth time: N job types through `jobqueues` vs the same resources hand-written in aws-cdk-lib.

Run: `.venv/bin/python bench/synth_bench.py [--repeat 3]` (or `make bench`).

Both variants build the same resources per job type (queue + DLQ, SSE, TLS-only policies, redrive
and redrive-allow, three alarms) and per stack (the fleet dashboard, a line per job type), spread over stacks of
at most 60 job types, in one process. Each size starts with a warm-up round of both apps at that size (the kernel's
JIT and heap grow with it: after a warm-up at 5 job types, the first runs at 50 cost more, and the app run first in
each pair paid it), then its pairs alternate which app runs first. Prints the median construct + synth time of each
and the ratio, jobqueues over hand-written (goal <= 1.0x), then the median of the pairs' ratios of CPU seconds
(this process's and the Node kernel's), which load moves much less than the wall time, and their spread. The
kernel round trips per job type are counted, not timed, by ``tests/test_synth_cost.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from jobqueues import JobQueueStacks
from jobqueues.stack_spreading import DEFAULT_JOB_TYPES_PER_STACK

ENV = cdk.Environment(account="123456789012", region="us-east-1")


def p99_for(i: int) -> Duration:
    return Duration.seconds(3 + i % 120)


def with_jobqueues(n: int) -> cdk.App:
    app = cdk.App()
    stacks = JobQueueStacks(app, "Jobs", env=ENV)
    for i in range(n):
        stacks.add(f"Job{i}", processing_p99=p99_for(i))
    return app


def hand_written_queues(
    scope: Construct, stack: cdk.Stack, name: str, vt: int, receives: int = 5
) -> tuple[sqs.Queue, sqs.Queue]:
    """What one JobQueue builds, written out in aws-cdk-lib: the queue pair and its three alarms."""
    dlq = sqs.Queue(
        scope,
        "DeadLetterQueue",
        queue_name=f"{name}-dlq",
        retention_period=Duration.days(14),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
    )
    queue = sqs.Queue(
        scope,
        "Queue",
        queue_name=name,
        visibility_timeout=Duration.seconds(vt),
        retention_period=Duration.days(4),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=receives, queue=dlq),
    )
    dlq.node.default_child.redrive_allow_policy = {  # type: ignore[union-attr]
        "redrivePermission": "byQueue",
        "sourceQueueArns": [stack.format_arn(service="sqs", resource=name)],
    }
    minute = Duration.minutes(1)
    ge = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
    missing = cloudwatch.TreatMissingData.NOT_BREACHING
    job = name.rsplit("-", 1)[-1]
    queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", period=minute).create_alarm(
        scope,
        "InFlightAlarm",
        threshold=96_000,
        evaluation_periods=3,
        comparison_operator=ge,
        treat_missing_data=missing,
        alarm_description=f"{job}: 96,000 in-flight messages, 80% of the 120,000 SQS quota.",
    )
    dlq.metric_approximate_number_of_messages_visible(statistic="Maximum", period=minute).create_alarm(
        scope,
        "DeadLetterQueueAlarm",
        threshold=1,
        evaluation_periods=1,
        comparison_operator=ge,
        treat_missing_data=missing,
        alarm_description=f"{job}: messages in the dead-letter queue after {receives} receives.",
    )
    queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=minute).create_alarm(
        scope,
        "OldestMessageAgeAlarm",
        threshold=max(receives * vt, 300),
        evaluation_periods=5,
        comparison_operator=ge,
        treat_missing_data=missing,
        alarm_description=f"{job}: the oldest message has waited too long.",
    )
    return queue, dlq


def hand_written_fleet(stack: cdk.Stack, jobs: list[tuple[str, sqs.Queue, sqs.Queue, int, int]]) -> None:
    """What each stack's fleet view holds, written out: a worst-first table (oldest age / its alarm threshold) and a
    graph per concern with a line per job type (backlog, oldest age, in flight, DLQ depth, p99 / declared)."""
    period = Duration.minutes(5)
    graphs: dict[str, list[cloudwatch.IMetric]] = {"backlog": [], "oldest": [], "in flight": [], "dlq": [], "p99": []}
    ratios: dict[str, cloudwatch.IMetric] = {}
    for i, (job, queue, dlq, threshold, p99_ms) in enumerate(jobs):
        in_flight = queue.metric_approximate_number_of_messages_not_visible(
            statistic="Maximum", period=period, label=job
        )
        oldest = queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=period, label=job)
        visible = queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period)
        graphs["backlog"].append(
            cloudwatch.MathExpression(
                expression=f"v{i} + f{i}",
                using_metrics={f"v{i}": visible, f"f{i}": in_flight},
                label=job,
                period=period,
            )
        )
        graphs["oldest"].append(oldest)
        graphs["in flight"].append(in_flight)
        graphs["dlq"].append(
            dlq.metric_approximate_number_of_messages_visible(statistic="Maximum", period=period, label=job)
        )
        p99 = cloudwatch.Metric(
            namespace="jobqueues",
            metric_name="ProcessingTime",
            dimensions_map={"JobType": job},
            statistic="p99",
            period=period,
        )
        graphs["p99"].append(
            cloudwatch.MathExpression(
                expression=f"p{i} / {p99_ms}", using_metrics={f"p{i}": p99}, label=job, period=period
            )
        )
        ratios[f"worst{i}"] = cloudwatch.MathExpression(
            expression=f"FILL(a{i}, 0) / {threshold}", using_metrics={f"a{i}": oldest}, label=job, period=period
        )
    dashboard = cloudwatch.Dashboard(stack, "Fleet", dashboard_name=f"{stack.stack_name}_fleet")
    sort = cloudwatch.MathExpression(  # METRICS() leaves math expressions out: the ratios by id
        expression=f"SORT([{', '.join(ratios)}], MAX, DESC, 10)", using_metrics=ratios, period=period, label=""
    )
    dashboard.add_widgets(cloudwatch.TableWidget(title="Open first", metrics=[sort], width=24))
    widgets = [cloudwatch.GraphWidget(title=title, left=lines, width=12) for title, lines in graphs.items()]
    for start in range(0, len(widgets), 2):
        dashboard.add_widgets(*widgets[start : start + 2])


def hand_written(n: int) -> cdk.App:
    app = cdk.App()
    stack: cdk.Stack | None = None
    jobs: list[tuple[str, sqs.Queue, sqs.Queue, int, int]] = []
    for i in range(n):
        if i % DEFAULT_JOB_TYPES_PER_STACK == 0:
            if stack is not None:
                hand_written_fleet(stack, jobs)
            stack, jobs = cdk.Stack(app, f"Jobs{i // DEFAULT_JOB_TYPES_PER_STACK + 1}", env=ENV), []
        assert stack is not None
        vt = max(2 * (3 + i % 120), 10)
        queue, dlq = hand_written_queues(cdk.Resource(stack, f"Job{i}"), stack, f"{stack.stack_name}-Job{i}", vt)
        jobs.append((f"Job{i}", queue, dlq, max(5 * vt, 300), (3 + i % 120) * 1000))
    if stack is not None:
        hand_written_fleet(stack, jobs)
    return app


def kernel_cpu_s() -> float:
    """CPU seconds the jsii kernel has used so far: the Node process jsii starts and its children (the kernel that
    runs aws-cdk-lib is a child of that wrapper), read from Linux's /proc."""
    from jsii import _runtime

    pids, total_ticks = [_runtime.kernel.provider._process._process.pid], 0
    while pids:
        pid = pids.pop()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total_ticks += int(fields[11]) + int(fields[12])  # utime + stime
        for task in Path(f"/proc/{pid}/task").iterdir():
            pids += [int(child) for child in (task / "children").read_text().split()]
    return total_ticks / os.sysconf("SC_CLK_TCK")


def cpu_s() -> float:
    """CPU seconds of this process and the jsii kernel so far."""
    return time.process_time() + kernel_cpu_s()


def timed_synth(build, n: int) -> tuple[float, Counter, float]:
    """Wall seconds of construct + synth, the resource types, and the CPU seconds (:func:`cpu_s`)."""
    cpu = cpu_s()
    started = time.perf_counter()
    app = build(n)
    assembly = app.synth()
    elapsed = time.perf_counter() - started
    cpu = cpu_s() - cpu
    types: Counter = Counter()
    for stack in assembly.stacks:
        types.update(r["Type"] for r in stack.template["Resources"].values())
    return elapsed, types, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument(
        "--warm-up",
        type=int,
        default=1,
        help="unmeasured rounds of both apps at each size before its pairs (default 1)",
    )
    args = parser.parse_args()

    print(
        f"{'job types':>9} {'stacks':>6} {'resources':>9} {'jobqueues s':>11} {'hand-written s':>14} {'ratio':>6}"
        f"  CPU ratio (pairs); ratios are jobqueues over hand-written (goal <= 1.0x)"
    )
    for n in args.sizes:
        ours, theirs, cpu_ratios = [], [], []
        for _ in range(args.warm_up):
            timed_synth(with_jobqueues, n)
            timed_synth(hand_written, n)
        for pair in range(args.repeat):
            our_first = pair % 2 == 0
            if not our_first:
                t, their_types, their_cpu = timed_synth(hand_written, n)
                theirs.append(t)
            t, our_types, our_cpu = timed_synth(with_jobqueues, n)
            ours.append(t)
            if our_first:
                t, their_types, their_cpu = timed_synth(hand_written, n)
                theirs.append(t)
            cpu_ratios.append(our_cpu / their_cpu)
        assert our_types == their_types, (our_types, their_types)
        stacks = -(-n // DEFAULT_JOB_TYPES_PER_STACK)
        ratio = statistics.median(ours) / statistics.median(theirs)
        cpu_ratios.sort()
        print(
            f"{n:>9} {stacks:>6} {sum(our_types.values()):>9} {statistics.median(ours):>11.2f} "
            f"{statistics.median(theirs):>14.2f} {ratio:>5.2f}x  {statistics.median(cpu_ratios):.2f}x "
            f"({cpu_ratios[0]:.2f}-{cpu_ratios[-1]:.2f}x)"
        )


if __name__ == "__main__":
    main()
