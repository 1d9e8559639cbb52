"""The faults of :class:`support.sqs_model.SqsModel`'s requests: scripted per request, outages, held requests.

:meth:`FaultedRequests.script` queues what the next requests of an operation (``ChangeMessageVisibilityBatch``,
``DeleteMessageBatch``, ``ReceiveMessage``, ``SendMessage``) do: ``"throttle"``, ``"error500"``, ``"timeout"``
(not applied); ``"landed_timeout"`` (applied, the answer lost); ``"lost"`` (a delete answered "deleted" without
being applied); a :class:`Hold` (the request waits until :meth:`Hold.answer`). :meth:`FaultedRequests.outage`
makes every request of an operation fail until it ends.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from support.fakes import FakeClock
from support.sqs_errors import client_error

CMV, DELETE, RECEIVE, SEND = "ChangeMessageVisibilityBatch", "DeleteMessageBatch", "ReceiveMessage", "SendMessage"
#: Real seconds a held request waits for its answer at most (a test that forgets one does not hang).
HOLD_LIMIT_S = 60


@dataclass(eq=False)
class Hold:
    """A request held until :meth:`answer`: ``landed`` ones were applied on arrival (only their answer waits)."""

    landed: bool
    sent_at: float | None = None  # set when a request arrives and is held
    handles: list[str] = field(default_factory=list)
    _reply: str | None = None
    _event: threading.Event = field(default_factory=threading.Event)

    @property
    def waiting(self) -> bool:
        return self.sent_at is not None and self._reply is None

    def answer(self, reply: str) -> None:
        """``"ok"`` (a landed request's answer arrives late) or ``"timeout"`` (the client gives up)."""
        assert reply == "timeout" or self.landed, "only a landed request can be answered"
        self._reply = reply
        self._event.set()


class FaultedRequests:
    """The requests' side of the model: what each request does, applied under the model's lock.

    :param clock: the injected clock, seconds. As each request comes it asks ``clock.moved_since_read()``: a
        request decided before the clock moved is applied ``late`` (it crossed the move, as if delayed in the
        network that long).
    """

    observer: Callable[..., None]

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.holds: list[Hold] = []
        self._script: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self._outage: dict[str, str] = {}
        self._lock = threading.RLock()

    def script(self, operation: str, *actions: Any) -> None:
        with self._lock:
            self._script[operation].extend(actions)

    def outage(self, operation: str, kind: str | None) -> None:
        """Every request of ``operation`` fails with ``kind`` from now on (``None``: the outage ends)."""
        with self._lock:
            if kind is None:
                self._outage.pop(operation, None)
            else:
                self._outage[operation] = kind

    def clear_faults(self) -> None:
        """Drop every scripted fault and hold not yet met, and end every outage (held requests still wait)."""
        with self._lock:
            self._script.clear()
            self._outage.clear()
            self.holds = [hold for hold in self.holds if hold.sent_at is not None]

    def waiting_holds(self) -> list[Hold]:
        with self._lock:
            return [hold for hold in self.holds if hold.waiting]

    def _request(self, operation: str, entries: list[dict[str, Any]], apply: Callable[[bool], Any]) -> Any:
        """Answer a request of ``operation``: ``apply(late)`` under the lock unless its fault says otherwise."""
        late = self.clock.moved_since_read()  # before the model reads the clock itself
        action = self._fault(operation, entries)
        if action == "lost":  # answered as done, nothing applied
            return {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []}
        with self._lock:
            answer = apply(late) if action in ("ok", "landed_timeout") or getattr(action, "landed", False) else None
        if isinstance(action, Hold):
            action._event.wait(HOLD_LIMIT_S)
            if action._reply != "ok":
                action = "timeout"
        if action in ("timeout", "landed_timeout"):
            from botocore.exceptions import ReadTimeoutError

            raise ReadTimeoutError(endpoint_url="http://sqs-model")
        return answer

    def _fault(self, operation: str, entries: Any) -> Any:
        """The action of this request: ``"ok"``, a fault kind (raised here if it is an error) or a :class:`Hold`."""
        with self._lock:
            script = self._script[operation]
            action = script.popleft() if script else self._outage.get(operation, "ok")
            if isinstance(action, Hold):
                action.sent_at = self.clock.now
                action.handles = [e["ReceiptHandle"] for e in entries if "ReceiptHandle" in e]
                self.holds.append(action)
            elif operation == SEND and action != "ok":  # the consumer sees its DLQ send fail (it may have landed)
                self.observer("send_failed", request=entries[0])
        if action in ("throttle", "error500"):
            raise client_error(action, operation)
        return action
