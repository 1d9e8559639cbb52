"""sqslease benchmarks. Run: `.venv/bin/python bench/lease_bench.py [--quick]`.

1. Requests per extension round for N due leases: exact counts through the real Heartbeat with a counting
   SQS client (every entry succeeds), against the per-message-timer baseline of N requests.
2. Scheduler tick CPU at 120,000 leases with 1 % due vs an O(N) scan of the same leases, in one run.
3. Memory per lease at 120,000 leases (tracemalloc; receipt handle strings excluded: the message owns them).
4. Recovery delay after kill -9 of a worker mid-job, against moto_server: a short lease + heartbeat vs a
   static visibility timeout of 2 x p99 (scaled down: 3 s lease vs p99 15 s -> VT 30 s).
5. Duplicate deliveries for jobs that overrun the visibility timeout, heartbeat on vs off, against
   moto_server.
"""

from __future__ import annotations

import argparse
import gc
import io
import math
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "lambda_src"), str(ROOT / "tests")]

from support.worker_processes import start_worker_process  # noqa: E402

from jobqueues.emulator.server import LocalServer, running_server  # noqa: E402
from sqslease.emf import EmfLogger  # noqa: E402
from sqslease.heartbeat import Heartbeat  # noqa: E402
from sqslease.lease import LeaseState  # noqa: E402
from sqslease.lease_table import LeaseScheduler  # noqa: E402
from sqslease.message import Message  # noqa: E402
from sqslease.settings import LeaseSettings  # noqa: E402
from sqslease.worker import Worker  # noqa: E402

N_LEASES = 120_000


class CountingSQS:
    """Answers ChangeMessageVisibilityBatch with every entry successful, and counts requests."""

    def __init__(self) -> None:
        self.requests = 0
        self.entries = 0

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        self.requests += 1
        self.entries += len(Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def handles(n: int) -> list[str]:
    return [f"AQEB{i:0>200}" for i in range(n)]  # receipt handles are a few hundred characters


def bench_requests_per_round() -> None:
    print("1. ChangeMessageVisibilityBatch requests per extension round")
    print(f"   {'due leases':>10} {'requests':>9} {'ceil(N/10)':>10} {'per-message timers':>18}")
    for n in (10, 1_000, 120_000):
        clock = [0.0]
        settings = LeaseSettings(visibility_timeout=30, extension_threshold=5, pull_forward=0)
        scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
        for handle in handles(n):
            scheduler.add(handle, 0.0, 30)
        sqs = CountingSQS()
        heartbeat = Heartbeat(sqs, "q", scheduler, settings, clock=lambda c=clock: c[0])
        clock[0] = 26.0  # every lease is within 5 s of expiry
        stats = heartbeat.tick().wait()
        heartbeat.stop()
        assert stats.extended == n and sqs.entries == n
        print(f"   {n:>10,} {sqs.requests:>9,} {math.ceil(n / 10):>10,} {n:>18,}")


def naive_scan(leases: list, now: float, threshold: float) -> list:
    return [lease for lease in leases if lease.state == LeaseState.ACTIVE and lease.deadline - now <= threshold]


def bench_tick_cpu() -> None:
    print("2. Scheduler tick CPU at 120,000 leases, 1 % due (median of 25 ticks)")
    settings = LeaseSettings(visibility_timeout=30, extension_threshold=5, pull_forward=0)
    scheduler = LeaseScheduler(settings.extension_threshold, settings.pull_forward)
    # Deadlines spread evenly over 500 s: each tick 5 s later finds 1 % of the leases newly due.
    leases = [scheduler.add(h, 0.0, 5 + 500 * i / N_LEASES) for i, h in enumerate(handles(N_LEASES))]
    sqs = CountingSQS()
    now = [0.0]
    heartbeat = Heartbeat(sqs, "q", scheduler, settings, clock=lambda: now[0])
    take, full, scan = [], [], []
    for tick in range(1, 26):
        now[0] = tick * 5.0
        started = time.process_time()
        due = scheduler.take_due(now[0])
        # put them back as a successful extension does (per response), keeping the table at 120,000
        for start in range(0, len(due), 10):
            scheduler.extended_all([(lease, 1_000) for lease in due[start : start + 10]], now[0])
        take.append(time.process_time() - started)
        assert abs(len(due) - N_LEASES // 100) <= 10, len(due)
        started = time.process_time()
        scanned = naive_scan(leases, now[0] + 5, settings.extension_threshold)
        scan.append(time.process_time() - started)
        del scanned
    for tick in range(26, 51):  # the whole heartbeat round, requests included (to the counting client)
        now[0] = tick * 5.0
        started = time.process_time()
        heartbeat.tick().wait()  # rounds run on pool threads: process_time counts them too
        full.append(time.process_time() - started)
    heartbeat.stop()
    take_ms, scan_ms, full_ms = (statistics.median(x) * 1000 for x in (take, scan, full))
    print(f"   scheduler (select due + reschedule): {take_ms:.2f} ms per tick")
    print(f"   O(N) scan of the same leases:         {scan_ms:.2f} ms per tick -> {scan_ms / take_ms:.0f}x slower")
    print(f"   whole heartbeat round incl. 120 batch requests to a no-op client: {full_ms:.2f} ms")


def bench_memory() -> None:
    print("3. Memory per lease at 120,000 leases")
    hs = handles(N_LEASES)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    scheduler = LeaseScheduler()
    for i, handle in enumerate(hs):  # received over the last 30 s, as a busy consumer's leases are
        scheduler.add(handle, 30.0 * i / N_LEASES, 30.0)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    used = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    print(f"   {used / N_LEASES:.0f} bytes per lease (lease object, its floats, wheel entry, table entry)")
    assert len(scheduler) == N_LEASES


# -- against moto_server ---------------------------------------------------------------------------
def recovery_after_kill(server: LocalServer, name: str, env: dict[str, str]) -> float:
    sqs = server.client("sqs")
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="long-job")
    with tempfile.TemporaryDirectory() as tmp:
        events = Path(tmp) / "events"
        process = start_worker_process(server, url, events, quiet=True, SLOW_JOB_SECONDS="120", **env)
        while not (events.exists() and events.read_text()):
            time.sleep(0.05)
        time.sleep(2)  # two seconds into the job
        process.kill()
        process.wait()
        killed = time.monotonic()
    while not sqs.receive_message(QueueUrl=url, VisibilityTimeout=60).get("Messages"):
        time.sleep(0.05)
    return time.monotonic() - killed


def bench_recovery(server: LocalServer) -> None:
    print("4. Recovery delay after kill -9 two seconds into a long job (moto_server)")
    lease = recovery_after_kill(
        server, "recovery-lease", {"SQSLEASE_VISIBILITY_TIMEOUT": "3", "SQSLEASE_EXTENSION_THRESHOLD": "1"}
    )
    static = recovery_after_kill(
        server, "recovery-static", {"SQSLEASE_VISIBILITY_TIMEOUT": "30", "SQSLEASE_HEARTBEAT": "false"}
    )
    print(f"   3 s lease + heartbeat:           {lease:5.1f} s")
    print(f"   static VT 2 x p99 (p99 15 s = 30 s): {static:5.1f} s  -> {static / lease:.0f}x longer")
    print("   (a 30 s lease recovers within 30 s; a static VT of 2 x p99 holds a crashed job for up to 2 x p99)")


def duplicates(server: LocalServer, heartbeat: bool, messages: int = 20) -> tuple[int, int]:
    sqs = server.client("sqs")
    url = sqs.create_queue(QueueName=f"overrun-{heartbeat}", Attributes={"VisibilityTimeout": "2"})["QueueUrl"]
    for start in range(0, messages, 10):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)]
        )
    deliveries: list[str] = []
    lock = threading.Lock()

    def overrun(body: str, message: Message) -> None:
        with lock:
            deliveries.append(body)
        time.sleep(3)  # 1.5 x the visibility timeout

    settings = LeaseSettings(
        visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.2, wait_time=1, heartbeat=heartbeat
    )
    workers = [Worker(server.client("sqs"), url, overrun, settings, 5, EmfLogger(io.StringIO())) for _ in range(2)]
    threads = [threading.Thread(target=w.run, kwargs={"install_signal_handlers": False}) for w in workers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        if (
            attributes["ApproximateNumberOfMessages"] == "0"
            and attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
        ):
            break
        time.sleep(0.2)
    for w in workers:
        w.shutdown()
    for thread in threads:
        thread.join()
    return len(deliveries) - len(set(deliveries)), len(set(deliveries))


def bench_duplicates(server: LocalServer) -> None:
    print("5. Duplicate deliveries, 20 jobs of 3 s on a 2 s visibility timeout, 2 workers x 5 (moto_server)")
    on = duplicates(server, heartbeat=True)
    off = duplicates(server, heartbeat=False)
    print(f"   heartbeat on:  {on[0]} duplicate deliveries for {on[1]} messages")
    print(f"   heartbeat off: {off[0]} duplicate deliveries for {off[1]} messages")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the moto_server benchmarks (4, 5)")
    args = parser.parse_args()
    bench_requests_per_round()
    bench_tick_cpu()
    bench_memory()
    if not args.quick:
        with running_server() as server:
            bench_recovery(server)
            bench_duplicates(server)


if __name__ == "__main__":
    main()
