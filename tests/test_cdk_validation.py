"""aws-cdk-lib's built-in CloudFormation validation finds nothing in the example app or in a new team's app.

The rest of the suite synthesizes with it off (``CDK_VALIDATION=false``, ``tests/support/tool_env.py``: its engine
costs each synthesizing process about 2.5 s of CPU) and checks every template with cfn-lint and cdk-nag instead.
Here it runs as a user's ``cdk synth`` runs it: on, in ``python app.py`` in the app's own directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from emulator_fixtures import OPS_APP_DIR

ROOT = Path(__file__).resolve().parent.parent
#: What the CDK prints when its validation finds something (a warning unless a feature flag makes it an error).
FOUND = "Template validation found issues"


def synth_validated(app_dir: Path, out: Path, app: str = "app.py") -> subprocess.CompletedProcess[str]:
    """``python APP`` in ``app_dir`` with the built-in validation on, as ``cdk synth`` runs it with credentials."""
    env = {name: value for name, value in os.environ.items() if name != "CDK_VALIDATION"}
    env |= {"CDK_OUTDIR": str(out), "CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "us-east-1"}
    return subprocess.run(
        [sys.executable, app], cwd=app_dir, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("app_dir", [ROOT, OPS_APP_DIR], ids=["example app", "a new team's app"])
def test_the_built_in_validation_finds_nothing(app_dir: Path, tmp_path: Path) -> None:
    # GIVEN an app of job types (the example; a new team's: a Stage, FIFO + KMS, a 3 s Lambda, a queue named by it)
    # WHEN it synthesizes with aws-cdk-lib's CloudFormation validation on
    run = synth_validated(app_dir, tmp_path)
    # THEN it synthesizes and the validation reports nothing
    assert run.returncode == 0, run.stderr[-3000:]
    assert FOUND not in run.stderr, run.stderr[-3000:]


def test_the_validation_is_on_in_these_runs(tmp_path: Path) -> None:
    # GIVEN an app whose only stack has no resource (the validation's F0001)
    (tmp_path / "empty.py").write_text("import aws_cdk as cdk\napp = cdk.App()\ncdk.Stack(app, 'Empty')\napp.synth()\n")
    # WHEN it synthesizes as the apps above do THEN the validation reports it: the test above can fail
    run = synth_validated(tmp_path, tmp_path / "cdk.out", app="empty.py")
    assert FOUND in run.stderr and "CloudFormation-Validate::F0001" in run.stderr, run.stderr[-3000:]
