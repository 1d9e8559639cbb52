"""The fault fleet's faults (:mod:`support.fleet`): DynamoDB faults, lost deletes, and each queue's request counts."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from typing import TYPE_CHECKING

from support.fault_proxy import Fault, Rule, random_faults
from support.moto_queues import Queues

if TYPE_CHECKING:
    from support.fleet import FleetConfig


def dynamodb_chaos_rule(rate: float, rng: random.Random, hold_s: float = 1.5, max_delay_s: float = 0.3) -> Rule:
    """``rate`` (0..1) of DynamoDB requests faulted: 30 % ProvisionedThroughputExceeded, 10 % ThrottlingException,
    25 % 500s, 15 % delays of up to ``max_delay_s``, 10 % answers held ``hold_s`` after the server applied the
    request (lost to the client's timeout), 10 % dropped before the server saw them (a timeout)."""
    lock = threading.Lock()
    kinds = [(0.30, "throttle"), (0.40, "throttling"), (0.65, "error500"), (0.80, "delay"), (0.90, "hold")]

    def rule(operation: str, body: bytes) -> Fault | None:
        with lock:
            roll = rng.random()
            if roll >= rate:
                return None
            kind = next((kind for bound, kind in kinds if roll / rate < bound), "drop")
            seconds = rng.uniform(0.02, max_delay_s) if kind == "delay" else hold_s
            return Fault(kind, seconds)

    return rule


class LaneRules:
    """The proxy's rules, counting each lane's requests (SQS by queue URL, DynamoDB by job-type prefix) and the
    deletes it lets come back (``redeliver_rate`` of delete requests, decided before the other faults; with a
    rate, each lane's first delete request always: every lane sees a message come back after its delete)."""

    def __init__(self, config: FleetConfig, queues: list[Queues]) -> None:
        self.lane_of = {q.url: lane for lane, q in enumerate(queues)}
        self.sqs = [Counter[tuple[str, str]]() for _ in queues]  # (operation, fault kind or "ok")
        self.dynamodb = [Counter[tuple[str, str]]() for _ in queues]
        self.redelivered = [0 for _ in queues]  # delete entries answered "deleted" without being applied
        self.faults = random_faults(config.fault_rate, config.random_state)
        self.dynamodb_faults = dynamodb_chaos_rule(config.dynamodb_fault_rate, random.Random(config.random_state + 1))
        self.redeliver_rate = config.redeliver_rate
        self.rng = random.Random(config.random_state + 2)
        self.lock = threading.Lock()

    def sqs_rule(self, operation: str, body: bytes) -> Fault | None:
        request = json.loads(body or b"{}")
        lane = self.lane_of.get(request.get("QueueUrl", ""))
        deleting = operation.startswith("DeleteMessage") and self.redeliver_rate > 0
        with self.lock:
            first = deleting and lane is not None and self.sqs[lane][(operation, "redeliver")] == 0
            lost = deleting and (first or self.rng.random() < self.redeliver_rate)
        fault = Fault("redeliver") if lost else self.faults(operation, body)
        if lane is not None:
            with self.lock:
                self.sqs[lane][(operation, fault.kind if fault else "ok")] += 1
                if lost:
                    self.redelivered[lane] += len(request.get("Entries", [None]))
        return fault

    def dynamodb_rule(self, operation: str, body: bytes) -> Fault | None:
        fault = self.dynamodb_faults(operation, body)
        lane = next((lane for lane in self.lane_of.values() if job_type(lane).encode() + b"#" in body), None)
        if lane is not None:
            with self.lock:
                self.dynamodb[lane][(operation, fault.kind if fault else "ok")] += 1
        return fault


def job_type(lane: int) -> str:
    return f"Fleet{lane}"
