"""The distributions as a user gets them: build both wheels, install them into a fresh virtualenv outside the
repository, and synthesize a small app there with cdk-nag on.

- `cdk-jobqueues` (import `jobqueues`, plus `jobstats`) depends on `sqslease`; `sqslease` is one
  distribution, built from lambda_src/, and free of aws_cdk.
- Fast path: wheels built with `pip wheel --no-deps --no-build-isolation` (setuptools comes from
  requirements-dev.txt), third-party versions taken from requirements.txt as constraints, and a venv without its
  own pip, installed into with --python by uv, the installer `make setup` uses: 2-9 s from its cache, where pip
  took 12-103 s (docs/testing.md).
"""

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent

# What the two builds read: the sdist contents, copied so that setuptools' build/ directories (which keep
# deleted modules) and egg-info never come from, or land in, the working tree.
BUILD_INPUTS = ["pyproject.toml", "README.md", "LICENSE", "constructs", "jobstats", "lambda_src"]

USER_APP = """
import json
import sys

import aws_cdk as cdk
from aws_cdk import Duration, Validations
from cdk_nag import AwsSolutionsChecks

import jobqueues
import sqslease
from jobqueues import JobQueue, JobQueueStacks

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "UserJobs", env=cdk.Environment(account="111111111111", region="us-east-1"))
JobQueue(stack, "EmailSend", processing_p99=Duration.seconds(3))
JobQueue(stack, "Thumbnails", lambda_timeout=Duration.seconds(30), max_batching_window=Duration.seconds(5))
JobQueueStacks(app, "Spread").add("VideoTranscode", processing_p99=Duration.minutes(4))
Validations.of(app).add_plugins(AwsSolutionsChecks(app))
assembly = app.synth()  # raises if cdk-nag reports a finding
print(json.dumps({
    "files": [jobqueues.__file__, sqslease.__file__],
    "templates": {s.stack_name: s.template for s in assembly.stacks},
}))
"""

DIST_FACTS = """
import json
from importlib import metadata

import jobqueues
import sqslease

def files(dist):
    return sorted(str(f) for f in metadata.distribution(dist).files)

print(json.dumps({
    "owners": {p: metadata.packages_distributions().get(p) for p in ("jobqueues", "sqslease", "jobstats")},
    "files": {d: files(d) for d in ("cdk-jobqueues", "sqslease")},
    "versions": {"cdk-jobqueues": [metadata.version("cdk-jobqueues"), jobqueues.__version__],
                 "sqslease": [metadata.version("sqslease"), sqslease.__version__]},
    "requires": {d: metadata.requires(d) or [] for d in ("cdk-jobqueues", "sqslease")},
}))
"""

# Every sqslease module imports where aws_cdk (and boto3: imported at run time only) is not installed, nor
# OpenTelemetry (the extra sqslease[otel]): then no built-in hook is made.
SQSLEASE_ALONE = """
import importlib, pkgutil, sys
import sqslease
for m in pkgutil.walk_packages(sqslease.__path__, "sqslease."):
    importlib.import_module(m.name)
assert not {"aws_cdk", "boto3", "opentelemetry"} & set(sys.modules), sorted(sys.modules)
from sqslease.hooks import builtin_hooks
assert builtin_hooks("jobs") == []
print(sqslease.__file__)
"""


# `jobqueues local up` runs a Lambda job's function in a fresh interpreter from the installed jobqueues.emulator: the
# function's code sees boto3 as Lambda's runtime provides it, though the emulator's own directory is then the
# venv's site-packages (a non-editable install), and an error the function raises is in its log output.
LOCAL_LAMBDA = """
import io, json, sys, tempfile
from pathlib import Path

from jobqueues.emulator.lambda_driver.function import DeployedFunction, Mapping
from jobqueues.emulator.lambda_driver.runtime import LocalRuntime
from jobqueues.emulator.server import Emulator

code = Path(tempfile.mkdtemp())
(code / "fn.py").write_text(
    "import boto3\\n"
    "def handler(event, context):\\n"
    "    if event.get('fail'):\\n"
    "        raise ValueError('bad record')\\n"
    "    return boto3.__name__\\n"
)
mapping = Mapping("u", "arn:aws:sqs:us-east-1:123456789012:q", 10, 0, True, "Enabled")
function = DeployedFunction("fn", "arn:aws:lambda:us-east-1:123456789012:function:fn", "fn.handler", "python3.11",
                            30, 128, {}, code, code / "opt", (), mapping)
log = open(code / "log.txt", "w+b")
runtime = LocalRuntime(function, Emulator("http://localhost:1"), stdout=log, stderr=log)
ok = runtime.invoke({})
failed = runtime.invoke({"fail": True})
runtime.stop()
log.seek(0)
print(json.dumps({"result": ok.result, "init": ok.error, "error": failed.error["errorType"],
                  "log": log.read().decode(), "handler": runtime.handler_file}))
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return out


def pip_into(target: Path, command: str, *args: str, cwd: Path) -> None:
    """``uv pip COMMAND ARGS`` into the venv of ``target`` (its python); uv comes with ``make setup``."""
    run([sys.executable, "-m", "uv", "pip", command, "--quiet", "--python", str(target), *args], cwd)


def new_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(path)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    src = tmp_path_factory.mktemp("src")
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True, ignore=junk)
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheels")
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out)]
    run([*build, str(src), str(src / "lambda_src")], src)
    built = {whl.name.split("-")[0]: whl for whl in out.glob("*.whl")}
    assert sorted(built) == ["cdk_jobqueues", "sqslease"], built
    return built


def test_wheels_install_and_synth_with_cdk_nag_outside_the_repository(wheels: dict[str, Path], tmp_path: Path) -> None:
    python = new_venv(tmp_path / "venv")
    # uv byte-compiles nothing (compiling all of aws-cdk-lib took pip 60 of 70 s); Python compiles what it imports.
    constraints = str(ROOT / "requirements.txt")
    pip_into(python, "install", *map(str, wheels.values()), "cdk-nag", "-c", constraints, cwd=tmp_path)
    app_py = tmp_path / "user_app.py"
    app_py.write_text(USER_APP)
    # cwd and PYTHONPATH keep the repository's sources out of reach: only the installed wheels can answer.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"
    }
    synth = json.loads(run([str(python), str(app_py), str(tmp_path / "cdk.out")], tmp_path, env=env).stdout)

    site = str(tmp_path / "venv")
    assert all(f.startswith(site) for f in synth["files"]), synth["files"]
    queues = {
        stack: sorted(r["Properties"]["QueueName"] for r in t["Resources"].values() if r["Type"] == "AWS::SQS::Queue")
        for stack, t in synth["templates"].items()
    }
    assert queues == {
        "UserJobs": [
            "UserJobs-EmailSend",
            "UserJobs-EmailSend-dlq",
            "UserJobs-Thumbnails",
            "UserJobs-Thumbnails-dlq",
        ],
        "Spread1": ["Spread1-VideoTranscode", "Spread1-VideoTranscode-dlq"],
    }
    vts = {
        props["QueueName"]: props["VisibilityTimeout"]
        for t in synth["templates"].values()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::SQS::Queue" and not (props := r["Properties"])["QueueName"].endswith("-dlq")
    }
    assert vts == {"UserJobs-EmailSend": 10, "UserJobs-Thumbnails": 185, "Spread1-VideoTranscode": 480}

    # One sqslease: its files belong to the sqslease distribution only, and the construct library requires it.
    facts = json.loads(run([str(python), "-c", DIST_FACTS], tmp_path, env=env).stdout)
    assert facts["owners"] == {"jobqueues": ["cdk-jobqueues"], "sqslease": ["sqslease"], "jobstats": ["cdk-jobqueues"]}
    assert not [f for f in facts["files"]["cdk-jobqueues"] if f.startswith("sqslease")]
    assert "sqslease/rules.py" in facts["files"]["sqslease"]
    assert "jobqueues/py.typed" in facts["files"]["cdk-jobqueues"]
    assert "sqslease/py.typed" in facts["files"]["sqslease"]
    for dist in ("cdk-jobqueues", "sqslease"):
        assert any("licenses/LICENSE" in f for f in facts["files"][dist]), dist
        metadata_version, module_version = facts["versions"][dist]
        assert metadata_version == module_version, dist
    assert any(r.startswith("sqslease") for r in facts["requires"]["cdk-jobqueues"])
    assert not [r for r in facts["requires"]["sqslease"] if "cdk" in r or "constructs" in r]
    assert 'opentelemetry-api>=1.20; extra == "otel"' in facts["requires"]["sqslease"]

    # The console script: `jobqueues` is installed, and names itself and the version.
    version = run([str(tmp_path / "venv" / "bin" / "jobqueues"), "--version"], tmp_path, env=env).stdout
    assert version.strip() == f"jobqueues, version {facts['versions']['cdk-jobqueues'][0]}"
    local_lambda = json.loads(run([str(python), "-c", LOCAL_LAMBDA], tmp_path, env=env).stdout)
    assert local_lambda["init"] is None and local_lambda["result"] == "boto3", local_lambda
    assert local_lambda["error"] == "ValueError"
    assert "[ERROR] ValueError: bad record" in local_lambda["log"], local_lambda["log"]

    # Every package of the checkout is in the wheel (setuptools' list is explicit): `jobqueues local` needs
    # jobqueues.emulator and its subpackages (moto comes with the extra [local]). And nothing else at the top: no
    # generic package name (an `emulator` or `local_emulator` beside the user's own) comes with the constructs.
    packages = {
        f"{root}/{init.parent.relative_to(ROOT / source).as_posix()}/__init__.py".replace("/./", "/")
        for root, source in (("jobqueues", "constructs/jobqueues"), ("jobstats", "jobstats"))
        for init in (ROOT / source).rglob("__init__.py")
    }
    assert packages - set(facts["files"]["cdk-jobqueues"]) == set()
    top = {name.split("/")[0] for name in facts["files"]["cdk-jobqueues"] if "/" in name}
    assert {t for t in top if not t.endswith(".dist-info") and t != ".."} == {"jobqueues", "jobstats"}, top

    # The bug this layout fixes: removing the construct library must leave the runtime whole.
    pip_into(python, "uninstall", "cdk-jobqueues", cwd=tmp_path)
    run([str(python), "-c", "import sqslease.rules, sqslease.worker, sqslease.lambda_adapter"], tmp_path, env=env)
    gone = subprocess.run([str(python), "-c", "import jobqueues"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named 'jobqueues'" in gone.stderr


def test_sqslease_wheel_alone_needs_neither_cdk_nor_boto3(wheels: dict[str, Path], tmp_path: Path) -> None:
    python = new_venv(tmp_path / "venv")
    pip_into(python, "install", "--no-deps", str(wheels["sqslease"]), cwd=tmp_path)
    out = run([str(python), "-c", SQSLEASE_ALONE], tmp_path).stdout
    assert out.startswith(str(tmp_path / "venv")), out
