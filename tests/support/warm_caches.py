"""Compile once what every test process imports, before ``make test`` starts its test processes.

On a fresh clone nothing is compiled yet: no byte code for the installed packages (the installer writes none) and
none of pytest's rewritten test modules. Six test processes starting at once would each compile all of it (about
7 s of CPU each to collect, and about 3 s more for the CDK's modules), and so would each emulator started in their
first minute. Here one process collects the tests and one starts an emulator and asks each service it serves once,
side by side; every later process reads what they wrote. Run by ``make test`` (docs/testing.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The services a deploy to the emulator reaches, and a request each takes (with its required arguments): asking
#: each once imports its backend in the emulator.
SERVICES: dict[str, tuple[str, dict[str, str]]] = {
    "application-autoscaling": ("describe_scalable_targets", {"ServiceNamespace": "ecs"}),
    "cloudformation": ("list_stacks", {}),
    "cloudwatch": ("list_metrics", {}),
    "dynamodb": ("list_tables", {}),
    "ec2": ("describe_vpcs", {}),
    "ecs": ("list_clusters", {}),
    "iam": ("list_roles", {}),
    "kms": ("list_keys", {}),
    "lambda": ("list_functions", {}),
    "logs": ("describe_log_groups", {}),
    "s3": ("list_buckets", {}),
    "sqs": ("list_queues", {}),
    "ssm": ("describe_parameters", {}),
}


def ask_an_emulator() -> None:
    """Start an emulator and call each of :data:`SERVICES` once."""
    from jobqueues.emulator.server import running_server

    with running_server() as server:
        for service, (operation, arguments) in SERVICES.items():
            getattr(server.client(service), operation)(**arguments)


def main() -> int:
    if sys.argv[1:] == ["--emulator"]:
        ask_an_emulator()
        return 0
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider"]
    warming = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)
        for command in (collect, [sys.executable, __file__, "--emulator"])
    ]
    for process in warming:
        process.wait()
    # Only a warm-up: what failed here (its error is on stderr) fails again, with its cause, in the run that follows.
    return 0


if __name__ == "__main__":
    sys.exit(main())
