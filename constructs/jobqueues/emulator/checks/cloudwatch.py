"""The post-deploy check of CloudWatch alarms and dashboards."""

from __future__ import annotations

import json

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::CloudWatch::Alarm": "never evaluated (state stays OK)",
    "AWS::CloudWatch::Dashboard": "the body is read back and parsed as JSON, not compared (it is built from tokens) "
    "or rendered: its metric math is never evaluated",
}


def _alarm(server: Clients, physical_id: str, c: Comparison) -> None:
    alarms = server.client("cloudwatch").describe_alarms(AlarmNames=[physical_id])["MetricAlarms"]
    if not alarms:
        c.mismatches.append("alarm not found")
        return
    a = alarms[0]
    for name in ("ComparisonOperator", "EvaluationPeriods", "Threshold", "DatapointsToAlarm", "TreatMissingData"):
        c.expect(name, a.get(name))
    for name in ("MetricName", "Namespace", "Statistic", "Period"):
        c.expect(name, a.get(name))
    if "Metrics" in c.properties:
        expected = [(q["Id"], q.get("Expression"), q.get("ReturnData", True)) for q in c.properties["Metrics"]]
        actual = [(q["Id"], q.get("Expression"), q.get("ReturnData", True)) for q in a.get("Metrics", [])]
        c.compared += 1
        if expected != actual:
            c.mismatches.append(f"Metrics (id, expression, return data): template {expected}, emulator {actual}")


def _dashboard(server: Clients, physical_id: str, c: Comparison) -> None:
    # The body is built from tokens (Fn::Join of Refs and GetAtts): it is read back and parsed, not compared.
    json.loads(server.client("cloudwatch").get_dashboard(DashboardName=physical_id)["DashboardBody"])


CHECKERS: dict[str, Checker] = {
    "AWS::CloudWatch::Alarm": _alarm,
    "AWS::CloudWatch::Dashboard": _dashboard,
}
