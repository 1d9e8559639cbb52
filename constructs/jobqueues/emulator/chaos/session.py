"""One chaos run: the fault proxy with its message ledger, the killer, and the report at the end."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence

from jobqueues.emulator.chaos.killer import Killer, Process
from jobqueues.emulator.chaos.ledger import MessageLedger
from jobqueues.emulator.chaos.proxy import FaultProxy, chaos_rule
from jobqueues.emulator.chaos.report import ChaosReport, QueueState, build_report
from jobqueues.emulator.chaos.runs import EmfLine, parse_runs

#: Seconds a held answer is held: longer than sqslease's default lease request timeout (at most 2 s), so the
#: client gives up on a request the server applied, as when an answer is lost on the way.
HOLD_S = 2.5
KILL_INTERVAL_S = 15.0


class Chaos:
    """The fault proxy in front of ``upstream_endpoint`` and a killer of workers, seeded by ``seed``.

    :param rate: share (0..1) of SQS requests that get a fault (see :func:`~jobqueues.emulator.chaos.proxy.chaos_rule`).
    :param kill_interval_s: seconds between two signals to workers (kill -9 or SIGTERM, half each); None: no
        kills. Default 15.
    :param hold_s: seconds a held answer is held. Default :data:`HOLD_S`.

    :attr:`endpoint` is the proxy's URL, for the consumers' ``AWS_ENDPOINT_URL``; non-SQS requests pass untouched.
    """

    def __init__(
        self,
        upstream_endpoint: str,
        rate: float,
        seed: int = 0,
        kill_interval_s: float | None = KILL_INTERVAL_S,
        hold_s: float = HOLD_S,
        max_delay_s: float = 0.3,
    ) -> None:
        self.ledger = MessageLedger()
        rule = chaos_rule(rate, random.Random(seed), hold_s, max_delay_s)
        self.proxy = FaultProxy(upstream_endpoint, rule, observers=[self.ledger])
        self.endpoint = self.proxy.endpoint
        self.kill_interval_s = kill_interval_s
        self.seed = seed
        self.killer: Killer | None = None
        self._started = self._stopped = False

    def start(self, workers: Callable[[], Sequence[Process]] | None = None) -> Chaos:
        """Serve the proxy, and kill one of ``workers()`` (the live worker processes, asked at each kill) every
        ``kill_interval_s``. Call it before starting the consumers: they talk to :attr:`endpoint` at once."""
        self.proxy.start()
        self._started = True
        if workers is not None and self.kill_interval_s is not None:
            self.killer = Killer(workers, self.kill_interval_s, random.Random(self.seed + 1)).start()
        return self

    def stop(self) -> None:
        """Stop killing, then stop the proxy (stop the consumers first: they lose their endpoint)."""
        if self.killer is not None:
            self.killer.stop()
        if self._started and not self._stopped:
            self.proxy.stop()
            self._stopped = True

    def __enter__(self) -> Chaos:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def report(
        self,
        emf_lines_by_stream: Mapping[str, Iterable[EmfLine]],
        final_state: Sequence[QueueState],
        stopped_receiving: Mapping[str, str] | None = None,
    ) -> ChaosReport:
        """The report on the handlers (see :mod:`jobqueues.emulator.chaos.report` for the definitions).

        :param emf_lines_by_stream: log stream (one per worker process or Lambda environment) -> its lines (text,
            non-EMF lines skipped, or parsed objects).
        :param final_state: per job type, the message ids left in its queue and DLQ
            (:func:`~jobqueues.emulator.chaos.final_state.read_queue_state`).
        :param stopped_receiving: deployment (``STACK/JOB_TYPE``) -> why its consumer stopped receiving. Default: none.
        """
        killer = self.killer
        return build_report(
            parse_runs(emf_lines_by_stream),
            self.ledger.snapshot(),
            final_state,
            faults=self.proxy.fault_kinds(),
            sqs_requests=self.proxy.requests(),
            kills=killer.sigkills if killer else 0,
            sigterms=killer.sigterms if killer else 0,
            stopped_receiving=stopped_receiving,
        )
