"""The heartbeat against a real SQS endpoint (moto_server over HTTP)."""

from __future__ import annotations

import time

from sqs_helpers import CallRecorder, inject_errors, make_queue, receive_all, send

from local_emulator.server import LocalServer
from sqslease.heartbeat import Heartbeat
from sqslease.scheduler import LeaseScheduler
from sqslease.settings import LeaseSettings

SETTINGS = LeaseSettings(visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.2, pull_forward=0)


def received_leases(local_aws: LocalServer, count: int, vt: int = 2) -> tuple[str, LeaseScheduler, list]:
    queues = make_queue(local_aws, vt=vt)
    send(local_aws, queues.url, [f"m{i}" for i in range(count)])
    scheduler = LeaseScheduler(SETTINGS.extension_threshold, SETTINGS.pull_forward)
    sent_at = time.monotonic()
    messages = receive_all(local_aws, queues.url, vt=vt)
    assert len(messages) == count
    leases = [scheduler.add(m["ReceiptHandle"], sent_at, vt) for m in messages]
    return queues.url, scheduler, leases


def test_eleven_plus_due_leases_go_out_in_correctly_sized_batches(local_aws: LocalServer) -> None:
    url, scheduler, leases = received_leases(local_aws, 25)
    recorder = CallRecorder()
    sqs = recorder.attach(local_aws.client("sqs"))
    heartbeat = Heartbeat(sqs, url, scheduler, SETTINGS)
    time.sleep(1.1)  # all 25 are now within the 1 s threshold
    stats = heartbeat.tick()
    heartbeat.stop()
    calls = recorder.of("ChangeMessageVisibilityBatch")
    assert stats.due == 25 and stats.requests == 3 and stats.extended == 25
    assert sorted(len(c.params["Entries"]) for c in calls) == [5, 10, 10]
    for call in calls:  # positional ids, never message ids
        assert [e["Id"] for e in call.params["Entries"]] == [str(i) for i in range(len(call.params["Entries"]))]
    time.sleep(1.5)  # past the original 2 s visibility timeout: still invisible thanks to the extension
    assert receive_all(local_aws, url) == []
    assert all(lease.extensions == 1 for lease in leases)


def test_invalid_receipt_handle_marks_only_that_lease_lost(local_aws: LocalServer) -> None:
    url, scheduler, leases = received_leases(local_aws, 3)
    bogus = scheduler.add("not-a-receipt-handle", time.monotonic(), 2)
    heartbeat = Heartbeat(local_aws.client("sqs"), url, scheduler, SETTINGS)
    time.sleep(1.1)
    stats = heartbeat.tick()
    heartbeat.stop()
    assert stats.requests == 1 and stats.extended == 3 and stats.lost == 1
    assert bogus.lost and not any(lease.lost for lease in leases)


def test_injected_throttling_is_retried_within_the_slack_and_loses_nothing(local_aws: LocalServer) -> None:
    url, scheduler, leases = received_leases(local_aws, 12)
    sqs = local_aws.client("sqs")
    remaining = inject_errors(sqs, "ChangeMessageVisibilityBatch", "RequestThrottled", times=2)
    heartbeat = Heartbeat(sqs, url, scheduler, SETTINGS)
    time.sleep(1.1)
    first = heartbeat.tick()  # both requests throttled
    assert first.retried == 12 and first.extended == 0 and remaining == [0]
    second = heartbeat.tick()  # next tick, still within the slack
    heartbeat.stop()
    assert second.extended == 12 and second.lost == 0
    time.sleep(1.2)
    assert receive_all(local_aws, url) == []
    assert not any(lease.lost for lease in leases)


def test_whole_request_failure_past_the_slack_marks_leases_lost(local_aws: LocalServer) -> None:
    url, scheduler, leases = received_leases(local_aws, 2)
    sqs = local_aws.client("sqs")
    inject_errors(sqs, "ChangeMessageVisibilityBatch", "InternalError", times=100)
    heartbeat = Heartbeat(sqs, url, scheduler, SETTINGS)
    time.sleep(1.1)
    assert heartbeat.tick().retried == 2
    time.sleep(1.0)  # the lease has now run out
    stats = heartbeat.tick()
    heartbeat.stop()
    assert stats.lost == 2 and all(lease.lost for lease in leases)


def test_extensions_stop_at_the_maximum_total_lease(local_aws: LocalServer) -> None:
    settings = LeaseSettings(
        visibility_timeout=2, extension_threshold=1, heartbeat_interval=0.2, pull_forward=0, max_total_lease=2.5
    )
    url, scheduler, (lease,) = received_leases(local_aws, 1)
    recorder = CallRecorder()
    heartbeat = Heartbeat(recorder.attach(local_aws.client("sqs")), url, scheduler, settings)
    time.sleep(1.1)
    heartbeat.tick()  # 1.1 s in: only 1 s may be added (2.5 s total)
    (call,) = recorder.of("ChangeMessageVisibilityBatch")
    assert call.params["Entries"][0]["VisibilityTimeout"] == 1
    time.sleep(1.0)
    stats = heartbeat.tick()  # at the limit: no more extensions, the lease is kept
    heartbeat.stop()
    assert stats.limit_reached == 1 and len(recorder.of("ChangeMessageVisibilityBatch")) == 1
    assert not lease.lost


def test_heartbeat_thread_keeps_a_message_invisible_until_stopped(local_aws: LocalServer) -> None:
    url, scheduler, (lease,) = received_leases(local_aws, 1)
    heartbeat = Heartbeat(local_aws.client("sqs"), url, scheduler, SETTINGS).start()
    time.sleep(4.5)  # more than twice the 2 s visibility timeout
    assert receive_all(local_aws, url) == []
    heartbeat.stop()
    assert lease.extensions >= 3
    assert len(receive_all(local_aws, url, wait_s=3)) == 1  # it lapses once extensions stop
