"""The post-deploy check of CloudWatch Logs log groups: their retention."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison

NOT_VERIFIABLE: dict[str, str] = {}


def _log_group(server: Clients, physical_id: str, c: Comparison) -> None:
    groups = server.client("logs").describe_log_groups(logGroupNamePrefix=physical_id)["logGroups"]
    group = next((g for g in groups if g["logGroupName"] == physical_id), None)
    if group is None:
        c.mismatches.append("log group not found")
        return
    c.expect("RetentionInDays", group.get("retentionInDays"))


CHECKERS: dict[str, Checker] = {"AWS::Logs::LogGroup": _log_group}
