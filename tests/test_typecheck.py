"""The typed API catches a user's mistake: the type checker of `make lint` (mypy) on a small CDK app.

The same app is checked twice, once with a deliberate mistake (an int where a `Duration` is expected, in
`JobQueue(...)` and in `JobQueueStacks.add(...)`) and once correct. Both files go through one mypy run from
the repository root with the project's configuration, so the aws_cdk analysis comes from `make lint`'s
cache (.mypy_cache; the first run without it takes a minute or more).
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The strict flags that apply to a module-level app (`strict` itself is not allowed inline): a user who
# type-checks strictly gets no complaint from the correct app either (say, an untyped call into jobqueues).
USER_APP = """# mypy: disallow-untyped-calls, disallow-untyped-defs, disallow-any-generics, strict-equality
import aws_cdk as cdk
from aws_cdk import Duration

from jobqueues import JobQueue, JobQueueStacks

app = cdk.App()
stack = cdk.Stack(app, "Users")
JobQueue(stack, "X", processing_p99={p99})  # line 9
JobQueueStacks(app, "Jobs").add("Y", processing_p99={p99})  # line 10
JobQueue(stack, "Z", lambda_timeout=Duration.seconds(30), max_receive_count=3)
app.synth()
"""
MISTAKE_LINES = {9, 10}


def run_mypy(tmp_path: Path) -> dict[str, list[tuple[int, str]]]:
    """Check the wrong and the right app in one run; return each file's error lines."""
    files = {"wrong": tmp_path / "user_app_int_p99.py", "right": tmp_path / "user_app_duration_p99.py"}
    files["wrong"].write_text(USER_APP.format(p99="5"))
    files["right"].write_text(USER_APP.format(p99="Duration.seconds(5)"))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--no-pretty", "--show-error-codes"]
        + [str(f) for f in files.values()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode in (0, 1), f"mypy crashed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    # Errors in the library's own modules (strict) are `make lint`'s business; keep the user apps' lines.
    errors: dict[str, list[tuple[int, str]]] = {}
    for name, path in files.items():
        # By file name: errors replayed from mypy's cache keep the path of the run that found them.
        pattern = re.compile(rf"^(?:.*/)?{re.escape(path.name)}:(\d+): error: (.*)$", re.MULTILINE)
        errors[name] = [(int(line), message) for line, message in pattern.findall(out.stdout)]
    return errors


def test_int_for_a_duration_is_reported_and_the_duration_app_is_clean(tmp_path: Path) -> None:
    errors = run_mypy(tmp_path)
    assert errors["right"] == [], errors["right"]
    assert {line for line, _ in errors["wrong"]} == MISTAKE_LINES, errors["wrong"]
    for _, message in errors["wrong"]:
        assert '"processing_p99"' in message and '"int"' in message and '"Duration"' in message, message


def test_mypy_reads_every_aws_cdk_module_the_checked_code_imports() -> None:
    # GIVEN the modules `make lint` reads (pyproject: aws_cdk's others are skipped, to keep a cold run short)
    import ast
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    followed = {
        module
        for override in config["overrides"]
        if override.get("follow_imports") == "normal"
        for module in override["module"]
    }
    # WHEN every aws_cdk module the checked files import is listed
    imported = set()
    for root in config["files"]:
        for path in [ROOT / root] if root.endswith(".py") else (ROOT / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                    imported.add(node.module)
                    if node.module == "aws_cdk":
                        imported |= {f"aws_cdk.{a.name}" for a in node.names if a.name.startswith("aws_")}
                elif isinstance(node, ast.Import):
                    imported |= {a.name for a in node.names if a.name.split(".")[0] == "aws_cdk"}
    # THEN none is left out (it would be Any: a wrong argument to it would pass `make lint`)
    assert imported and imported <= followed, sorted(imported - followed)
