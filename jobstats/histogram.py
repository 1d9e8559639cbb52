"""Log-bucket duration histograms and the statistics derived from them. Pure Python.

A duration of ``ms`` milliseconds falls in bucket ``floor(log10(ms) x BUCKETS_PER_DECADE)``. With 500
buckets per decade a bucket spans a factor of 10^(1/500) = 1.0046, so reporting its geometric midpoint
is within 10^(0.5/500) - 1 = 0.2305 % of any value in it: every percentile is within 0.2305 % of the exact
one (clamped to the exact minimum and maximum), a bound that holds for any distribution and any sample size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

BUCKETS_PER_DECADE = 500
MIN_MS = 0.001  # durations below 1 microsecond share the lowest bucket
#: Receive counts of successful messages at or above this are counted together (retry recommendation).
RECEIVE_COUNT_CAP = 50
#: A partial's ``cells`` map ``bucket x RECEIVES_PER_CELL + receives`` -> messages, where ``receives`` is the
#: receive count of a success (capped) or 0 for other outcomes: one map carries the histogram and the
#: receive counts of successes, and merges by adding.
RECEIVES_PER_CELL = 64

#: Worst-case relative error of a reported percentile (half a bucket, in log space).
MAX_RELATIVE_ERROR = 10 ** (0.5 / BUCKETS_PER_DECADE) - 1


def bucket_of(ms: float) -> int:
    """The bucket of a duration of ``ms`` milliseconds."""
    return math.floor(math.log10(max(ms, MIN_MS)) * BUCKETS_PER_DECADE)


def bucket_midpoint(bucket: int) -> float:
    return 10 ** ((bucket + 0.5) / BUCKETS_PER_DECADE)


@dataclass
class Summary:
    """Everything jobstats reports for one job type (or queue), accumulated from partial rows (exact merges)."""

    count: int = 0
    failures: int = 0
    redeliveries: int = 0
    extensions: int = 0
    lease_lost: int = 0
    sum_us: int = 0  # whole microseconds: integer sums do not depend on the order partials merge in
    min_ms: float = math.inf
    max_ms: float = -math.inf
    first_ms: int | None = None
    last_ms: int | None = None
    histogram: dict[int, int] = field(default_factory=dict)  # bucket -> messages
    success_receives: dict[int, int] = field(default_factory=dict)  # receive count -> successful messages
    queues: set[str] = field(default_factory=set)
    queue_histogram: dict[int, int] = field(default_factory=dict)  # queue-time bucket -> messages with a QueueTime
    queue_min_ms: float = math.inf
    queue_max_ms: float = -math.inf

    def add(self, row: Mapping) -> None:
        """Fold in one well-formed row of :func:`jobstats.stats.partial_aggregate`."""
        self.count += row["count"]
        self.failures += row["failures"]
        self.redeliveries += row["redeliveries"]
        self.extensions += row["extensions"]
        self.lease_lost += row["lease_lost"]
        self.sum_us += row["sum_us"]
        self.min_ms = min(self.min_ms, row["min_ms"])
        self.max_ms = max(self.max_ms, row["max_ms"])
        self.first_ms = row["first_ms"] if self.first_ms is None else min(self.first_ms, row["first_ms"])
        self.last_ms = row["last_ms"] if self.last_ms is None else max(self.last_ms, row["last_ms"])
        for cell, n in row["cells"].items():
            bucket, receives = divmod(cell, RECEIVES_PER_CELL)
            self.histogram[bucket] = self.histogram.get(bucket, 0) + n
            if receives:
                self.success_receives[receives] = self.success_receives.get(receives, 0) + n
        if row.get("queue") is not None:
            self.queues.add(row["queue"])
        for bucket, n in (row.get("queue_cells") or {}).items():
            self.queue_histogram[bucket] = self.queue_histogram.get(bucket, 0) + n
        if row.get("queue_min_ms") is not None:
            self.queue_min_ms = min(self.queue_min_ms, row["queue_min_ms"])
            self.queue_max_ms = max(self.queue_max_ms, row["queue_max_ms"])

    @property
    def queue_count(self) -> int:
        """Messages whose line had a ``QueueTime`` (sqslease wrote one on every run since it measured it)."""
        return sum(self.queue_histogram.values())

    def queue_percentile(self, p: float) -> float | None:
        """Smallest queue time with at least ``p`` of the messages that have one at or below it (within
        0.2305 %); ``None`` when no line had a ``QueueTime``."""
        count = self.queue_count
        if not count:
            return None
        return percentile(self.queue_histogram, p, count, self.queue_min_ms, self.queue_max_ms)

    @property
    def mean_ms(self) -> float:
        """Mean processing time (ms, to the microsecond); 0 without messages."""
        return self.sum_us / self.count / 1000 if self.count else 0.0

    def percentile(self, p: float) -> float:
        """Smallest duration with at least ``p`` of the messages at or below it (within 0.2305 %)."""
        return percentile(self.histogram, p, self.count, self.min_ms, self.max_ms)

    def overrun_count(self, visibility_timeout_s: float) -> int:
        """Messages that ran longer than ``visibility_timeout_s`` (to bucket resolution)."""
        limit = visibility_timeout_s * 1000
        return sum(n for b, n in self.histogram.items() if bucket_midpoint(b) > limit)

    def success_receive_count_percentile(self, p: float) -> int | None:
        total = sum(self.success_receives.values())
        if not total:
            return None
        return int(_rank_value(sorted(self.success_receives.items()), math.ceil(p * total)))


def percentile(histogram: Mapping[int, int], p: float, count: int, min_ms: float, max_ms: float) -> float:
    if count <= 0:
        raise ValueError("no data")
    rank = max(1, math.ceil(p * count))
    bucket = _rank_value(sorted(histogram.items()), rank)
    return min(max(bucket_midpoint(int(bucket)), min_ms), max_ms)


def _rank_value(items: Iterable[tuple[float, int]], rank: int) -> float:
    seen = 0
    last = None
    for value, n in items:
        seen += n
        last = value
        if seen >= rank:
            return value
    assert last is not None
    return last


def coarse_histogram(histogram: Mapping[int, int], bins_per_decade: int) -> list[tuple[int, int]]:
    """Re-bin to ``bins_per_decade`` (for plots): ``[(bin, count)]`` sorted."""
    factor = BUCKETS_PER_DECADE // bins_per_decade
    out: dict[int, int] = {}
    for bucket, n in histogram.items():
        out[bucket // factor] = out.get(bucket // factor, 0) + n
    return sorted(out.items())
