"""Every default of a job type declaration, in one place (plain numbers: no aws_cdk import).

The constructs document these in their props (``Default:``); :mod:`jobqueues.declaration` applies them.
"""

from __future__ import annotations

from sqslease.rules import SQS_IN_FLIGHT_QUOTA

#: Source queue retention: 4 days, SQS's own default.
RETENTION_S = 4 * 86_400
#: Dead-letter queue retention: 14 days, the SQS maximum, so a dead-lettered message lives as long as it can.
DLQ_RETENTION_S = 14 * 86_400
#: Deliveries before a message moves to the DLQ.
MAX_RECEIVE_COUNT = 5
#: In-flight alarm: this share of the quota.
IN_FLIGHT_FRACTION = 0.8
IN_FLIGHT_QUOTA = SQS_IN_FLIGHT_QUOTA
#: DLQ alarm: this many visible messages.
DLQ_DEPTH = 1
#: Context key: a registry image for every EcsJob without an ``image`` (the local emulator has no Docker).
IMAGE_CONTEXT = "jobqueues:image"
#: Bounds of the default oldest-message-age alarm threshold.
OLDEST_MESSAGE_AGE_MIN_S = 300


def oldest_message_age_s(visibility_timeout_s: float, retention_s: float, max_receive_count: int) -> int:
    """Default threshold of the oldest-message-age alarm, in seconds.

    ``max_receive_count x VT`` is how long a message may legitimately stay on the source queue while it is
    retried; older than that means consumers are not keeping up. At least 5 min (metric noise) and at most
    half the retention period (time to act before messages expire).
    """
    return int(min(max(max_receive_count * visibility_timeout_s, OLDEST_MESSAGE_AGE_MIN_S), retention_s // 2))
