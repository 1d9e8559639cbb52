"""`jobqueues dlq redrive` on the emulator: 1,000 messages back from a DLQ, by SQS's move task and by the
receive/send/delete loop, in one run. Run: `.venv/bin/python bench/redrive_bench.py [--messages N] [--fifo]`.

Prints each method's wall time and its exact SQS requests (counted on the client), and checks that every
message arrived once. The move task's own work happens inside the emulator (as inside SQS): its requests are
the start and the progress polls.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "constructs"), str(ROOT / "lambda_src"), str(ROOT)]

from jobqueues.emulator.server import running_server  # noqa: E402
from jobqueues.ops.redrive import redrive  # noqa: E402


def counting(client: Any) -> collections.Counter[str]:
    """Count ``client``'s requests by operation."""
    calls: collections.Counter[str] = collections.Counter()
    client.meta.events.register("before-call.sqs.*", lambda model, **_: calls.update([model.name]))
    return calls


def queue_pair(sqs: Any, fifo: bool) -> tuple[str, str]:
    suffix, name = (".fifo" if fifo else ""), f"bench-{uuid.uuid4().hex[:6]}"
    attributes = {"FifoQueue": "true"} if fifo else {}
    dlq = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive_policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})
    source = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes={**attributes, "RedrivePolicy": redrive_policy})
    return source["QueueUrl"], dlq


def fill(sqs: Any, url: str, count: int, fifo: bool) -> None:
    for first in range(0, count, 10):
        entries = []
        for i in range(first, min(first + 10, count)):
            entry: dict[str, Any] = {"Id": str(i), "MessageBody": json.dumps({"id": i})}
            if fifo:
                entry.update(MessageGroupId=f"g{i % 20}", MessageDeduplicationId=f"d{i}")
            entries.append(entry)
        assert not sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")


def arrived(sqs: Any, url: str) -> int:
    names = ["ApproximateNumberOfMessages"]
    return int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"][names[0]])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--fifo", action="store_true", help="FIFO queues (20 groups)")
    args = parser.parse_args()
    with running_server() as server:
        print(f"redrive of {args.messages} {'FIFO' if args.fifo else 'standard'} messages on the emulator")
        print(f"{'method':<10} {'wall s':>7} {'msg/s':>7}  requests")
        for method in ("move-task", "loop"):
            sqs = server.client("sqs")
            source, dlq = queue_pair(sqs, args.fifo)
            fill(sqs, dlq, args.messages, args.fifo)
            calls = counting(sqs)
            started = time.perf_counter()
            result = redrive(sqs, dlq, source, args.fifo, method, stop=threading.Event())
            wall = time.perf_counter() - started
            assert result.moved == args.messages and not result.failed, result
            assert arrived(sqs, source) == args.messages and arrived(sqs, dlq) == 0
            detail = ", ".join(f"{name} {n}" for name, n in sorted(calls.items()))
            print(f"{method:<10} {wall:7.2f} {args.messages / wall:7.0f}  {sum(calls.values())} ({detail})")


if __name__ == "__main__":
    main()
