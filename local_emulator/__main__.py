"""``python -m local_emulator deploy [--port N] [--no-demo] [--logs DIR] [--keep-running]``: the README's first
command. Deploys the example app to the embedded emulator, then runs the demo against what was deployed."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from local_emulator.demo import DemoError, run_demo
from local_emulator.deploy import DeployError, deploy, format_report
from local_emulator.deployed import DeployedError
from local_emulator.server import running_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    deploy_parser = sub.add_parser("deploy", help="deploy the example app to a local AWS emulator")
    deploy_parser.add_argument("--port", type=int, default=None, help="emulator port (default: a free one)")
    deploy_parser.add_argument(
        "--keep-running", action="store_true", help="leave the emulator up (Ctrl-C stops it) to inspect it"
    )
    deploy_parser.add_argument("--no-demo", action="store_true", help="deploy only; skip the demo")
    deploy_parser.add_argument(
        "--logs", type=Path, default=Path("demo-logs"), help="where the demo writes the consumers' EMF lines"
    )
    args = parser.parse_args(argv)

    with running_server(args.port) as server:
        print(f"local AWS emulator (moto_server) at {server.endpoint}", flush=True)
        print("cdk bootstrap + cdk deploy '**' ...", flush=True)
        started = time.monotonic()
        try:
            report = deploy(server)
        except DeployError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"deployed in {time.monotonic() - started:.0f} s", flush=True)
        print(format_report(report), flush=True)
        if not args.no_demo:
            print("\ndemo: the deployed consumers at work", flush=True)
            try:
                demo = run_demo(server, logs_dir=args.logs.resolve(), out=lambda line: print(line, flush=True))
            except (DemoError, DeployedError) as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
            if not demo.ok:
                return 1
        if args.keep_running:
            print(f"emulator running: export AWS_ENDPOINT_URL={server.endpoint} (Ctrl-C to stop)", flush=True)
            try:
                while server.process.poll() is None:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
