"""Guards for the source layout: `constructs/` must never shadow the CDK's `constructs` library."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_constructs_dir_is_not_a_package() -> None:
    assert not (ROOT / "constructs" / "__init__.py").exists(), (
        "constructs/__init__.py would shadow the `constructs` library that aws-cdk-lib imports; "
        "keep the construct library in constructs/jobqueues/"
    )


def test_import_constructs_resolves_to_the_library_from_the_app_directory() -> None:
    # Run as `cdk` runs app.py: with the project root first on sys.path.
    code = "import constructs, jobqueues; print(constructs.__file__); print(constructs.Construct.__module__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    constructs_file, module = out.stdout.split()
    assert "site-packages" in constructs_file, constructs_file
    assert module == "constructs"


def test_no_module_imports_constructs_jobqueues() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if ".venv" not in path.parts
        and "node_modules" not in path.parts
        and re.search(r"^\s*(from|import)\s+constructs\.jobqueues", path.read_text(), re.MULTILINE)
    ]
    assert offenders == [], "import `jobqueues`, never `constructs.jobqueues`"


def test_rules_module_imports_nothing_from_aws() -> None:
    source = (ROOT / "lambda_src" / "sqslease" / "rules.py").read_text()
    for forbidden in ("aws_cdk", "boto3", "botocore"):
        assert f"import {forbidden}" not in source and f"from {forbidden}" not in source


def test_declaration_checks_import_without_the_cdk() -> None:
    code = (
        "import sys; from jobqueues.declaration import QueueDeclaration, check_declaration; "
        "r = check_declaration(QueueDeclaration(job_type='x', processing_p99=0.383)); "
        "assert r.visibility_timeout_s == 10, r; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
