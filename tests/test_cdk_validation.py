"""aws-cdk-lib's built-in CloudFormation validation finds nothing in the example app or in a new team's app.

The rest of the suite synthesizes with it off (``CDK_VALIDATION=false``, ``tests/support/tool_env.py``: its engine
costs each synthesizing process about 2.5 s of CPU) and checks every template with cfn-lint and cdk-nag instead.
Here it runs on, as a user's ``cdk synth`` runs it: each app's script run as ``__main__`` in the app's own
directory. An app whose only stack is empty, which the validation must report, runs after the example app in the
example's process, so that the CDK's kernel and the validation's engine start once for both (about 5 s of CPU less);
a new team's app runs in a process of its own (the kernel resolves asset paths from the directory it started in).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from emulator_fixtures import OPS_APP_DIR

ROOT = Path(__file__).resolve().parent.parent
#: What the CDK prints when its validation finds something (a warning unless a feature flag makes it an error).
FOUND = "Template validation found issues"
#: Written to stderr before each app's synth, with the app's name: each app's part of the output is told apart.
MARK = "=== jobqueues-test-app: "

#: Runs each ``[name, directory, script]`` of ``argv[1]`` (JSON) as ``__main__`` in its directory, in one process.
RUNNER = f"""
import json, os, runpy, sys
for name, directory, script in json.loads(sys.argv[1]):
    print({MARK!r} + name, file=sys.stderr, flush=True)
    os.chdir(directory)
    sys.path.insert(0, directory)
    runpy.run_path(script, run_name="__main__")
    sys.stderr.flush()
"""

EMPTY_APP = "import aws_cdk as cdk\napp = cdk.App()\ncdk.Stack(app, 'Empty')\napp.synth()\n"


def synth_validated(apps: list[list[str]], out: Path) -> dict[str, str]:
    """Synthesize ``apps`` (``[name, directory, script]``) in one process, with the validation on, as ``cdk synth``
    runs an app with credentials: each app's name -> what its synth wrote to stderr; the process must succeed."""
    env = {name: value for name, value in os.environ.items() if name != "CDK_VALIDATION"}
    # The kernel reads CDK_OUTDIR once: a process's apps share one output directory (their stderr is what counts).
    env |= {"CDK_OUTDIR": str(out), "CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "us-east-1"}
    run = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(apps)],
        cwd=apps[0][1],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    parts = run.stderr.split(MARK)[1:]
    outputs = {part.partition("\n")[0]: part.partition("\n")[2] for part in parts}
    assert list(outputs) == [name for name, _, _ in apps], run.stderr[-3000:]
    return outputs


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each app's name -> what its synth wrote to stderr, with the validation on."""
    empty_dir = tmp_path_factory.mktemp("empty")
    (empty_dir / "empty.py").write_text(EMPTY_APP)
    example = [["example app", str(ROOT), "app.py"], ["an empty stack", str(empty_dir), "empty.py"]]
    new_team = [["a new team's app", str(OPS_APP_DIR), "app.py"]]
    return {
        **synth_validated(example, tmp_path_factory.mktemp("cdk.out")),
        **synth_validated(new_team, tmp_path_factory.mktemp("cdk.out")),
    }


@pytest.mark.parametrize("app", ["example app", "a new team's app"])
def test_the_built_in_validation_finds_nothing(app: str, validated: dict[str, str]) -> None:
    # GIVEN an app of job types (the example; a new team's: a Stage, FIFO + KMS, a 3 s Lambda, a queue named by it)
    # WHEN it synthesizes with aws-cdk-lib's CloudFormation validation on
    # THEN it synthesizes (the fixture's process succeeded) and the validation reports nothing
    assert FOUND not in validated[app], validated[app][-3000:]


def test_the_validation_is_on_in_these_runs(validated: dict[str, str]) -> None:
    # GIVEN an app whose only stack has no resource (the validation's F0001), synthesized after the example app
    # WHEN it synthesizes in the example's process, as the apps above do THEN the validation reports it: the test
    # above can fail
    output = validated["an empty stack"]
    assert FOUND in output and "CloudFormation-Validate::F0001" in output, output[-3000:]
