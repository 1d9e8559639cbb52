"""jobstats per tenant: the lines sqslease writes name each message's group (the tenant of a fair queue);
``python -m jobstats tenants`` reports each tenant's messages, p50/p99 processing and queue time, and names the
noisy ones, on the session's local Spark."""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import random
from pathlib import Path

import pytest

from jobstats.__main__ import main as jobstats_main
from jobstats.histogram import MAX_RELATIVE_ERROR, Summary
from jobstats.tenants import deployment_entry, message_counts, report_lines, tenant_report
from sqslease.emf import EmfLogger

STARTED = int(dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp() * 1000)


def exact_p99(values: list[float]) -> float:
    return sorted(values)[math.ceil(0.99 * len(values)) - 1]


def write_lines(path: Path) -> dict[str, dict[str, list[float]]]:
    """A fair queue's day: ``flood`` sends 300 jobs and waits (SQS holds it back), tenants ``a``, ``b``, ``c`` send
    10 each and wait little; 5 jobs carry no group; ``flood`` has a released line (no run) and ``a`` a failure.
    Another job type has no groups at all. Returns each tenant's exact processing and queue times."""
    out, rng = io.StringIO(), random.Random(27)
    emf = EmfLogger(out)
    exact: dict[str, dict[str, list[float]]] = {}
    plan = [("flood", 300, (20_000, 90_000)), ("a", 10, (50, 400)), ("b", 10, (50, 400)), ("c", 10, (50, 400))]
    plan.append((None, 5, (50, 400)))  # type: ignore[arg-type]
    for group, count, (low, high) in plan:
        for i in range(count):
            ms, queued = rng.uniform(5, 80), rng.uniform(low, high)
            outcome = "failure" if (group, i) == ("a", 0) else "success"
            emf.record(
                job_type="Reports", stack="Dev", queue="Dev-Reports", message_id=f"{group}-{i}", processing_ms=ms,
                outcome=outcome, receive_count=1, extensions=0, lease_lost=False, timestamp_ms=STARTED + i,
                queue_ms=queued, group=group,
            )  # fmt: skip
            exact.setdefault(str(group), {"ms": [], "queued": []})
            exact[str(group)]["ms"].append(ms)
            exact[str(group)]["queued"].append(queued)
    emf.record(
        job_type="Reports", stack="Dev", queue="Dev-Reports", message_id="flood-released", processing_ms=0,
        outcome="released", receive_count=1, extensions=0, lease_lost=False, timestamp_ms=STARTED, group="flood",
    )  # fmt: skip
    for i in range(20):
        emf.record(
            job_type="Resize", stack="Dev", queue="Dev-Resize", message_id=f"r{i}", processing_ms=10.0,
            outcome="success", receive_count=1, extensions=0, lease_lost=False, timestamp_ms=STARTED + i,
        )  # fmt: skip
    path.mkdir()
    (path / "a.log").write_text(out.getvalue())
    return exact


def test_each_tenant_gets_its_p99_and_queue_time_and_the_flood_is_named_noisy(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    exact = write_lines(tmp_path / "logs")
    # WHEN jobstats reports the tenants
    report = tenant_report(spark, [str(tmp_path / "logs")])
    # THEN only the job type whose lines name groups is in it, with its four tenants, the flood noisy
    assert list(report["deployments"]) == ["Dev/Reports"]
    entry = report["deployments"]["Dev/Reports"]
    assert (entry["stack"], entry["job_type"], entry["tenants"]) == ("Dev", "Reports", 4)
    assert entry["messages"] == 330 and entry["without_group"] == 5  # the released line is no run
    assert entry["noisy"] == ["flood"]
    assert list(entry["groups"]) == ["flood", "a", "b", "c"]  # the busiest first
    flood, a = entry["groups"]["flood"], entry["groups"]["a"]
    assert flood["messages"] == 300 and flood["share"] == pytest.approx(300 / 330) and flood["noisy"] is True
    assert a["messages"] == 10 and a["failure_rate"] == pytest.approx(0.1) and a["noisy"] is False
    # and each tenant's p99s are the exact ones, within the histogram's bound
    for group, tenant in entry["groups"].items():
        for field, values in (("p99_ms", exact[group]["ms"]), ("queue_time_p99_ms", exact[group]["queued"])):
            assert tenant[field] == pytest.approx(exact_p99(values), rel=MAX_RELATIVE_ERROR + 1e-6), (group, field)
    assert report["noisy_rule"] == {"factor": 5.0, "min_queue_time_ms": 1000.0}
    # and the text names the noisy tenant on the deployment's line and on its row
    text = report_lines(report, top=2)
    assert text[0] == "Dev/Reports: 4 tenants, 330 messages (5 without a group); noisy: flood"
    assert text[2].split()[0] == "flood" and text[2].endswith("noisy") and text[-1] == "  ... 2 more"


def test_the_command_prints_the_tenants_and_writes_json(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    write_lines(tmp_path / "logs")
    # WHEN the command runs
    code = jobstats_main(
        ["tenants", str(tmp_path / "logs"), "--out", str(tmp_path / "tenants.json"), "--since", "2026-11-20"]
    )
    # THEN it prints the report and writes the same as JSON
    assert code == 0
    printed = capsys.readouterr().out
    assert "Dev/Reports: 4 tenants, 330 messages (5 without a group); noisy: flood" in printed
    written = json.loads((tmp_path / "tenants.json").read_text())
    assert written["deployments"]["Dev/Reports"]["noisy"] == ["flood"]
    # and --since past the lines leaves no tenant
    assert jobstats_main(["tenants", str(tmp_path / "logs"), "--since", "2026-11-21"]) == 0
    assert capsys.readouterr().out.startswith("no line names a message group")


def test_the_command_refuses_what_is_not_there(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert jobstats_main(["tenants", str(tmp_path / "nothing-here")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert jobstats_main(["tenants", str(tmp_path), "--since", "yesterday"]) == 2
    assert "is not a date" in capsys.readouterr().err


def write_poison_and_redelivery(path: Path) -> None:
    """Tenant ``poison``: one message its handler fails, run 5 times (dead-lettered on the 5th); tenants ``q1``,
    ``q2``, ``q3``: one message each, run once, but ``q1``'s was redelivered to a second consumer whose lines are
    in another file (its runs: one failure in ``a.log``, one success in ``b.log``)."""
    first, second = io.StringIO(), io.StringIO()
    common = {"job_type": "Jobs", "stack": "Dev", "queue": "Dev-Jobs", "extensions": 0, "lease_lost": False}
    runs = [(first, "poison", "p-1", receive, "failure" if receive < 5 else "dead_lettered") for receive in range(1, 6)]
    runs += [(first, "q1", "m-1", 1, "failure"), (second, "q1", "m-1", 2, "success")]
    runs += [(first, group, f"{group}-1", 1, "success") for group in ("q2", "q3")]
    for i, (out, group, message_id, receive, outcome) in enumerate(runs):
        EmfLogger(out).record(
            **common, message_id=message_id, processing_ms=20.0 + i, outcome=outcome, receive_count=receive,
            timestamp_ms=STARTED + i, queue_ms=100.0, group=group,
        )  # fmt: skip
    path.mkdir()
    (path / "a.log").write_text(first.getvalue())
    (path / "b.log").write_text(second.getvalue())


def test_messages_are_distinct_messages_and_a_poison_message_is_not_a_flood(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_poison_and_redelivery(tmp_path / "logs")
    # WHEN jobstats reports the tenants
    entry = tenant_report(spark, [str(tmp_path / "logs")])["deployments"]["Dev/Jobs"]
    # THEN each tenant sent one message; the poison one ran 5 times, and no tenant is noisy for its retries
    assert {group: (t["messages"], t["runs"]) for group, t in entry["groups"].items()} == {
        "poison": (1, 5), "q1": (1, 2), "q2": (1, 1), "q3": (1, 1),
    }  # fmt: skip
    assert (entry["messages"], entry["runs"], entry["noisy"]) == (4, 9, [])
    # and q1's message counts once although its runs are in two files; failures stay per run
    assert entry["groups"]["poison"]["failure_rate"] == 1.0 and entry["groups"]["q1"]["failure_rate"] == 0.5
    assert entry["groups"]["poison"]["share"] == pytest.approx(0.25)
    # and the text shows both
    text = report_lines(tenant_report(spark, [str(tmp_path / "logs")]), top=10)
    assert text[0] == "Dev/Jobs: 4 tenants, 4 messages (0 without a group); noisy: none"
    assert text[1].split()[:3] == ["tenant", "messages", "runs"]
    assert text[2].split()[:3] == ["poison", "1", "5"]


def test_since_counts_the_messages_that_ran_on_or_after_the_day(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # GIVEN one message that ran the day before and again on the day, and one that ran only the day before
    out = io.StringIO()
    for message_id, offset_days in (("m-1", -1), ("m-1", 0), ("m-2", -1)):
        EmfLogger(out).record(
            job_type="Jobs", stack="Dev", queue="Dev-Jobs", message_id=message_id, processing_ms=10.0,
            outcome="success", receive_count=1, extensions=0, lease_lost=False,
            timestamp_ms=STARTED + offset_days * 86_400_000, group="t",
        )  # fmt: skip
    (tmp_path / "a.log").write_text(out.getvalue())
    # WHEN the report starts on the day
    entry = tenant_report(spark, [str(tmp_path / "a.log")], since_day=STARTED // 86_400_000)["deployments"]["Dev/Jobs"]
    # THEN only the message that ran on the day counts, with its run of that day
    assert (entry["messages"], entry["runs"]) == (1, 1)


def runs(count: int, failures: int = 0) -> Summary:
    """A tenant's runs, ``count`` of them at about 50 ms."""
    return Summary(count=count, failures=failures, histogram={850: count})


def test_the_noisy_rule_and_the_order_read_messages_not_runs() -> None:
    # GIVEN (pure, no Spark) a tenant whose one message ran 25 times and a tenant that sent 10 messages once each
    entry = deployment_entry(
        {"poison": (1, runs(25, failures=25)), "flood": (10, runs(10)), "a": (2, runs(2)), "b": (2, runs(2)),
         None: (3, runs(4))}
    )  # fmt: skip
    # THEN the flood is noisy (10 >= 5 x 2), not the poison message's tenant, and the flood comes first
    assert entry["noisy"] == ["flood"] and list(entry["groups"]) == ["flood", "a", "b", "poison"]
    assert (entry["messages"], entry["runs"], entry["without_group"]) == (15, 39, 3)
    poison = entry["groups"]["poison"]
    assert (poison["messages"], poison["runs"], poison["failure_rate"]) == (1, 25, 1.0)
    assert poison["share"] == pytest.approx(1 / 15)


def test_message_counts_add_the_days_and_leave_out_those_before_since() -> None:
    rows = [
        {"stack": "Dev", "job_type": "Jobs", "group": "t", "day": 10, "messages": 4},
        {"stack": "Dev", "job_type": "Jobs", "group": "t", "day": 11, "messages": 3},
        {"stack": None, "job_type": "Jobs", "group": None, "day": 11, "messages": 2},
    ]
    assert message_counts(rows) == {("Dev", "Jobs", "t"): 7, (None, "Jobs", None): 2}
    assert message_counts(rows, since_day=11) == {("Dev", "Jobs", "t"): 3, (None, "Jobs", None): 2}
    assert message_counts(rows, since_day=12) == {}
