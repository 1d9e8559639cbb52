"""The post-deploy check of EC2 flow logs (no network exists in the emulator)."""

from __future__ import annotations

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::EC2::VPC": "no network exists: routes, NAT gateways and flow logs carry and deliver nothing",
    "AWS::EC2::FlowLog": "delivers nothing",
}


def _flow_log(server: Clients, physical_id: str, c: Comparison) -> None:
    logs = server.client("ec2").describe_flow_logs(FlowLogIds=[physical_id])["FlowLogs"]
    if not logs:
        c.mismatches.append("flow log not found")
        return
    c.expect("TrafficType", logs[0].get("TrafficType"))
    c.expect("LogDestinationType", logs[0].get("LogDestinationType"), default="cloud-watch-logs")


CHECKERS: dict[str, Checker] = {"AWS::EC2::FlowLog": _flow_log}
