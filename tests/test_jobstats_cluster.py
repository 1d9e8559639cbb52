"""jobstats on a real Spark cluster: a standalone master and a worker on localhost, started from the pyspark
installation, and ``spark-submit --master spark://...`` running the shipped ``__main__.py`` with the zip.

The entry point is shipped alone and run outside the repository, so the zip must hold the rest. The cluster's
``profiles.json`` must equal the local run's (all but ``generated_at``): an executor in another JVM
parses the files, in splits (two tasks at once), and the driver merges their partials.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from support.tool_env import TEST_JVM_OPTIONS
from test_jobstats_cli import write_logs

from jobstats import bundle
from jobstats.__main__ import main

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(work),
        "SPARK_DAEMON_MEMORY": "384m",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }


def wait_for(log: Path, text: str, process: subprocess.Popen, timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"{log.name}: no {text!r} (exit {process.poll()}):\n{log.read_text(errors='replace')[-3000:]}")


@contextlib.contextmanager
def standalone_cluster(work: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[str]:
    """A Spark standalone master and ``workers`` workers on localhost, each on its own ports; yields the master
    URL. Every process is stopped by its pid on exit (``spark-class`` execs the JVM, so the pid is the JVM's)."""
    work.mkdir(parents=True, exist_ok=True)
    env = spark_env(work)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = work / f"{name}.log"
        with log.open("w") as out:
            process = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work)
        processes.append(process)
        return process, log

    try:
        port = free_port()
        url = f"spark://127.0.0.1:{port}"
        master, master_log = start(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())),
        )
        wait_for(master_log, "I have been elected leader", master)
        started = [
            start(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port())),
                *("--cores", str(cores), "--memory", memory, "--work-dir", str(work / f"worker-{i}"), url),
            )
            for i in range(workers)
        ]
        for process, log in started:
            wait_for(log, "Successfully registered with master", process)
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def spark_submit(master: str, zip_path: Path, args: list[str], work: Path, *conf: str) -> subprocess.CompletedProcess:
    """``spark-submit --master MASTER --py-files ZIP __main__.py ARGS``, with jobstats' ``__main__.py`` shipped
    alone, as to a cluster, and run outside the repository: the zip must hold everything else."""
    entry_point = work / "entry" / "__main__.py"
    entry_point.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "jobstats" / "__main__.py", entry_point)
    executors = f"spark.executor.extraJavaOptions={TEST_JVM_OPTIONS}"  # the driver's and daemons': tests/conftest.py
    settings = [f"--conf={c}" for c in ("spark.driver.host=127.0.0.1", "spark.ui.enabled=false", executors, *conf)]
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, *settings, "--py-files", str(zip_path)]
    return subprocess.run(
        [*submit, str(entry_point), *args],
        capture_output=True,
        text=True,
        cwd=work,
        env=spark_env(work),
        timeout=300,
    )


def comparable(path: Path) -> dict:
    document = json.loads(path.read_text())
    del document["generated_at"]
    return document


def test_a_standalone_cluster_run_equals_the_local_run(spark, tmp_path: Path) -> None:
    write_logs(tmp_path / "logs")
    with (tmp_path / "logs" / "consumer-a.log").open("a") as f:  # malformed lines: the sample pass runs too
        f.write('{"_aws":{"Timestamp":1},"JobType":"Email","ProcessingTime":NaN,"Outcome":"success"}\n\t\n')
    args = ["profile", str(tmp_path / "logs"), "--min-samples", "100"]
    assert main([*args, "--out", str(tmp_path / "local.json")]) == 0

    zip_path = bundle.build(tmp_path / "dist" / "jobstats.zip")  # what `make dist/jobstats.zip` builds
    assert {"jobstats/__main__.py", "sqslease/rules.py"} <= set(zipfile.ZipFile(zip_path).namelist())
    with standalone_cluster(tmp_path / "cluster", workers=1, cores=2) as master:
        result = spark_submit(
            master,
            zip_path,
            [*args, "--out", f"file://{tmp_path / 'cluster.json'}"],
            tmp_path / "cluster",
            "spark.executor.cores=2",
            "spark.executor.memory=512m",
            "spark.sql.files.maxPartitionBytes=65536",  # split the plain file: partials of one file merge
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Email: 1,500 messages" in result.stdout
    executors = {line for line in result.stderr.splitlines() if "Granted executor ID" in line}
    assert len(executors) == 1, result.stderr[-3000:]  # the worker's executor, in a JVM of its own, did the reading
    local, cluster = comparable(tmp_path / "local.json"), comparable(tmp_path / "cluster.json")
    assert cluster == local
    assert local["input_report"]["malformed_lines"] == 4 and local["deployments"]["Email"]["count"] == 1_500
    shutil.rmtree(tmp_path / "cluster", ignore_errors=True)
