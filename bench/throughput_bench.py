"""A worker's throughput on short jobs: what one poll at a time and the prefetch bound allow.

Run: `.venv/bin/python bench/throughput_bench.py [--quick] [--job-ms 5] [--receive-ms 15] [--concurrency 1 4 8 10 16]`.

Each round, at each concurrency, the same messages run twice on a ``FakeSQS`` whose ``ReceiveMessage`` takes
``--receive-ms`` (an SQS round trip in the region, where a receive finds messages), with a handler that sleeps
``--job-ms`` (a job that waits on I/O):

- ``Worker``: sqslease, at most its handlers plus one batch ahead outstanding, one poll at a time;
- the baseline, hand-written in the same run: one thread polls 10 at a time, back to back, into a
  ``queue.Queue(maxsize=10)`` that as many threads take from (no lease kept; each message deleted alone).

Printed per concurrency: messages a second for each and the worker's share of the baseline's (the median of the
rounds), the worker's wall time over the ideal (the jobs' time split across its handlers), and its messages a
receive. With jobs shorter than the receive, one poll at a time allows about ``min(concurrency, 10)`` messages a
round trip (2 at concurrency 1): a worker runs below its handlers' capacity, and a higher concurrency (up to 10 a
receive) or more tasks is the remedy (docs/sqslease.md, "Jobs shorter than a receive"). Wall-clock figures: run it
on a quiet machine.
"""

from __future__ import annotations

import argparse
import io
import queue
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests"), str(ROOT / "bench")]

from runtime_bench import WORKER_QUEUE_URL, CountingFakeSQS  # noqa: E402

from sqslease.emf import EmfLogger  # noqa: E402
from sqslease.message import Message  # noqa: E402
from sqslease.settings import LeaseSettings  # noqa: E402
from sqslease.worker import Worker  # noqa: E402


class SlowReceives(CountingFakeSQS):
    """``CountingFakeSQS`` whose every ``ReceiveMessage`` takes ``receive_s`` before it answers."""

    def __init__(self, expected: int, receive_s: float) -> None:
        super().__init__(expected, record=False)
        self.receive_s = receive_s
        self.receives = 0

    def receive_message(self, **params: Any) -> dict[str, Any]:
        time.sleep(self.receive_s)
        self.receives += 1
        return super().receive_message(**params)


def loaded(n: int, receive_s: float) -> SlowReceives:
    sqs = SlowReceives(n, receive_s)
    sqs.add(*(f"b{i}" for i in range(n)))
    return sqs


def run_worker(n: int, concurrency: int, job_s: float, receive_s: float) -> tuple[float, float]:
    """Wall seconds for ``n`` messages, and messages a receive."""
    sqs = loaded(n, receive_s)

    def handler(body: str, message: Message) -> None:
        time.sleep(job_s)

    worker = Worker(
        sqs, WORKER_QUEUE_URL, handler, LeaseSettings(job_type="Bench"), concurrency, EmfLogger(io.StringIO())
    )
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False})
    started = time.monotonic()
    thread.start()
    assert sqs.all_deleted.wait(600), f"{sqs.deleted} of {n} deleted"
    wall = time.monotonic() - started
    worker.shutdown()
    thread.join()
    return wall, n / sqs.receives


def run_baseline(n: int, concurrency: int, job_s: float, receive_s: float) -> float:
    """Wall seconds for ``n`` messages through the hand-written receiver thread and ``concurrency`` handler threads."""
    sqs = loaded(n, receive_s)
    ready: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=10)
    lock = threading.Lock()

    def receive() -> None:
        while not sqs.all_deleted.is_set():
            answer = sqs.receive_message(QueueUrl=WORKER_QUEUE_URL, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in answer.get("Messages", []):
                ready.put(message)
        for _ in range(concurrency):
            ready.put(None)

    def handle() -> None:
        while (message := ready.get()) is not None:
            time.sleep(job_s)
            with lock:  # the fake counts deletes from one thread at a time
                sqs.delete_message_batch(
                    QueueUrl=WORKER_QUEUE_URL, Entries=[{"Id": "0", "ReceiptHandle": message["ReceiptHandle"]}]
                )

    threads = [threading.Thread(target=receive)] + [threading.Thread(target=handle) for _ in range(concurrency)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    assert sqs.all_deleted.wait(600), f"{sqs.deleted} of {n} deleted"
    wall = time.monotonic() - started
    for thread in threads:
        thread.join()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer messages and rounds")
    parser.add_argument("--job-ms", type=float, default=5.0, help="each job's length (a sleep), ms. Default: 5")
    parser.add_argument("--receive-ms", type=float, default=15.0, help="each receive's round trip, ms. Default: 15")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 10, 16], help="Default: 1 4 8 10 16")
    args = parser.parse_args()
    job_s, receive_s = args.job_ms / 1000, args.receive_ms / 1000
    rounds = 1 if args.quick else 3
    print(
        f"Throughput on short jobs: {args.job_ms:g} ms jobs, {args.receive_ms:g} ms receives, FakeSQS; "
        f"median of {rounds} round(s)"
    )
    print("concurrency | worker msg/s | baseline msg/s | worker/baseline | worker over ideal | worker msgs a receive")
    for concurrency in args.concurrency:
        # enough messages for about 2 s of the ideal, at least 400
        n = max(400, int(2.0 * concurrency / job_s)) // (4 if args.quick else 1)
        ratios, overs, per_receive, rates, base_rates = [], [], [], [], []
        for _ in range(rounds):
            wall, a_receive = run_worker(n, concurrency, job_s, receive_s)
            base = run_baseline(n, concurrency, job_s, receive_s)
            rates.append(n / wall)
            base_rates.append(n / base)
            ratios.append(base / wall)
            overs.append(wall / (n * job_s / concurrency))
            per_receive.append(a_receive)
        print(
            f"{concurrency:>11} | {statistics.median(rates):>12.0f} | {statistics.median(base_rates):>14.0f} | "
            f"{statistics.median(ratios):>14.2f}x | {statistics.median(overs):>16.2f}x | "
            f"{statistics.median(per_receive):>21.1f}"
        )


if __name__ == "__main__":
    main()
