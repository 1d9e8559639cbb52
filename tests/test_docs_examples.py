"""Every Python code block of README.md and docs/**/*.md runs, one test per block (id: file and line).

How a block runs is decided from its code, or named by a one-line HTML comment just before its fence
(``<!-- example: in-stack -->``, ``<!-- example: app -->``, ``<!-- example: run -->``):

- **in-stack**: the block uses ``self`` outside any def or class. It runs as the body of a Stack's
  ``__init__``: ``self`` is a fresh stack (account 123456789012, us-east-1) in a fresh ``cdk.App``, of the
  README's minimal app's class (its ``availability_zones`` are ``deploy_time_availability_zones()``);
  then cdk-nag's AwsSolutions checks are turned on and ``app.synth()`` must raise no finding.
- **app**: the block calls ``App(...)``. It runs as written, every ``cdk.App`` it creates has AwsSolutions
  turned on, and each is synthesized afterwards (a no-op for an App the block synthesized itself).

Every synthesized assembly (a Stage's nested ones included) must need no context lookup: in process a lookup
(a concrete account's zones, ``Vpc.from_lookup``) is only an entry in the manifest's ``missing`` list, but the
reader's ``cdk synth`` would need AWS credentials for it.
- **run**: anything else. The block is executed (a module of definitions runs its imports and defs).

A block is complete as printed: its imports are its own, nothing else is in scope.

The blocks run in two Python processes, each block in turn with a namespace of its own (starting the CDK's
kernel, cdk-nag and cfn-lint once a process, not once a block, halves the module's time), in a temporary
directory laid out as a reader's project, where the kernel resolves relative asset paths: the repo's top-level
entries (``Code.from_asset("lambda_src/handlers")``, and EcsJob's default image ``lambda_src``, are the repo's)
plus the files a reader brings that the repo has not, :data:`READER_FILES`. A traceback names the Markdown file
and line. Synthesis stages assets only: nothing is built or deployed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pytestmark = pytest.mark.heavy  # a minute-long end-to-end run: scheduled first (tests/conftest.py)

if TYPE_CHECKING:
    from aws_cdk.cx_api import CloudAssembly

ROOT = Path(__file__).resolve().parent.parent
MODES = ("in-stack", "app", "run")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_MODE_COMMENT = re.compile(r"^\s*<!--\s*example:\s*(?P<mode>[\w-]+)\s*-->\s*$")


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def _profiles(directory: Path) -> None:
    """``profiles.json`` as ``python -m jobstats profile`` writes it (the fields MeasuredProfiles reads)."""
    from test_measured_profiles import document, entry

    # the in-stack examples' stack is named Example: its consumers write Stack "Example" on their lines
    (directory / "profiles.json").write_text(json.dumps(document({"Example/EmailSend": entry(0.383)})))


def _worker_image(directory: Path) -> None:
    """``worker/``: the reader's image directory, sqslease + handlers (the repo's ``lambda_src`` is one)."""
    (directory / "worker").symlink_to(ROOT / "lambda_src", target_is_directory=True)


#: Files of a reader's project that the examples name and the repo has not, and how each is made.
READER_FILES: dict[str, Callable[[Path], None]] = {"profiles.json": _profiles, "worker": _worker_image}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # the opening fence's, 1-based
    code: str
    mode: str | None  # named by a comment before the fence; None: decided from the code

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def python_blocks(path: Path) -> Iterator[Block]:
    """The fenced ``python`` blocks of a Markdown file (an indented fence, as in a list item, is dedented)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, start = opening["indent"], opening["fence"], i
        i += 1
        while i < len(lines) and not re.fullmatch(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", lines[i]):
            i += 1
        if opening["lang"].lower() in ("python", "py", "python3"):
            body = [line.removeprefix(indent) for line in lines[start + 1 : i]]
            comment = _MODE_COMMENT.match(lines[start - 1]) if start > 0 else None
            yield Block(path, start + 1, "\n".join(body) + "\n", comment["mode"] if comment else None)
        i += 1


def block_mode(block: Block, tree: ast.Module) -> str:
    if block.mode is not None:
        if block.mode not in MODES:
            raise ValueError(f"{block.id}: <!-- example: {block.mode} --> is not one of {', '.join(MODES)}")
        return block.mode
    if _uses_self_outside_defs(tree):
        return "in-stack"
    if any(isinstance(node, ast.Call) and _called_name(node.func) == "App" for node in ast.walk(tree)):
        return "app"
    return "run"


def _uses_self_outside_defs(tree: ast.Module) -> bool:
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and node.id == "self":
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _called_name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


BLOCKS = [block for path in documents() for block in python_blocks(path)]


def test_the_blocks_are_found() -> None:
    """The fence parser sees the Python blocks of the README (the first app) and of docs/: finding none would pass
    vacuously."""
    assert len([b for b in BLOCKS if b.path == ROOT / "README.md"]) >= 2
    assert len([b for b in BLOCKS if b.path.is_relative_to(ROOT / "docs")]) >= 5


def test_blocks_are_found_in_every_document_and_run_as_their_code_says(tmp_path: Path) -> None:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "README.md").write_text(
        "```bash\nmake test\n```\n\n```python\nJobQueue(self, 'A')\n```\n\n"
        "- item\n\n  ```py\n  app = cdk.App()\n  ```\n"
    )
    (tmp_path / "docs" / "guide" / "more.md").write_text(
        "````python\ndef f(self): ...\n````\n\n<!-- example: in-stack -->\n```python\nx = 1\n```\n"
    )
    blocks = [b for path in documents(tmp_path) for b in python_blocks(path)]
    assert [(b.path.name, b.line, b.code) for b in blocks] == [
        ("README.md", 5, "JobQueue(self, 'A')\n"),
        ("README.md", 11, "app = cdk.App()\n"),
        ("more.md", 1, "def f(self): ...\n"),
        ("more.md", 6, "x = 1\n"),
    ]
    assert [block_mode(b, ast.parse(b.code)) for b in blocks] == ["in-stack", "app", "run", "in-stack"]


def test_a_lookup_in_any_assembly_is_found(tmp_path: Path) -> None:
    """In process, a context lookup (a concrete account's zones, ``Vpc.from_lookup``) is no error, only an entry
    in the manifest's ``missing`` list; ``cdk synth`` would stop there without credentials."""
    key = "availability-zones:account=123456789012:region=eu-west-1"
    (tmp_path / "assembly-Prod").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "1", "artifacts": {}}))
    assert missing_context(tmp_path) == []
    (tmp_path / "assembly-Prod" / "manifest.json").write_text(json.dumps({"missing": [{"key": key}]}))
    assert missing_context(tmp_path) == [key]


def _run(blocks: list[Block], directory: Path, without: tuple[str, ...] = ()) -> dict[str, str | None]:
    """Run ``blocks`` one after another in one process in ``directory``, laid out as a reader's project but for
    the repo's entries ``without``: block id -> ``None`` (it ran) or what went wrong. A block after one that
    killed the process did not run, and says so."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in without:
            (directory / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for make in READER_FILES.values():
        make(directory)
    jobs = [[b.id, b.line, block_mode(b, ast.parse(b.code)), b.code] for b in blocks]  # the code as collected
    process = subprocess.run(
        [sys.executable, __file__],
        input=json.dumps(jobs),
        cwd=directory,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=900,
    )
    results: dict[str, str | None] = {}
    for line in process.stdout.splitlines():
        if line.startswith(_RESULT):
            block_id, error = json.loads(line.removeprefix(_RESULT))
            results[block_id] = error
    for block in blocks:
        results.setdefault(block.id, f"the process ended (exit {process.returncode}) first:\n{process.stderr[-4000:]}")
    return results


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future]]:
    """The selected blocks' runs, in two processes (a synth keeps about one core busy)."""
    selected = [
        item.callspec.params["block"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.module is request.module and "block" in item.fixturenames
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        chunks = [selected[0::2], selected[1::2]]
        futures = [pool.submit(_run, chunk, tmp_path_factory.mktemp("examples")) for chunk in chunks if chunk]
        yield {block.id: future for chunk, future in zip(chunks, futures, strict=False) for block in chunk}


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in BLOCKS])
def test_example_runs(block: Block, runs: dict[str, Future]) -> None:
    error = runs[block.id].result()[block.id]
    assert error is None, f"{block.id} failed:\n{error}"


def run_block(name: str, line: int, mode: str, source: str) -> None:
    """Run ``source``, the block of document ``name`` whose fence is on ``line``, in this process, as ``mode``
    (see the module docstring)."""
    tree = ast.parse(source, filename=name)
    ast.increment_lineno(tree, line)  # tracebacks point into the Markdown file
    code = compile(tree, name.rpartition(":")[0], "exec")

    import aws_cdk as cdk
    from aws_cdk import Validations
    from cdk_helpers import ENV
    from cdk_nag import AwsSolutionsChecks

    if mode == "in-stack":
        from jobqueues import deploy_time_availability_zones

        class JobsStack(cdk.Stack):  # the README's minimal app's stack
            @property
            def availability_zones(self) -> list[str]:
                return deploy_time_availability_zones()

        app = cdk.App()
        stack = JobsStack(app, "Example", env=ENV)
        exec(code, {"__name__": "example", "self": stack})
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
        _check_assembly(name, app.synth())  # synth raises on any unacknowledged AwsSolutions finding
    elif mode == "app":
        apps: list[cdk.App] = []

        class NaggedApp(cdk.App):
            def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
                super().__init__(*args, **kwargs)
                Validations.of(self).add_plugins(AwsSolutionsChecks(self))
                apps.append(self)

        real_app, cdk.App = cdk.App, NaggedApp  # type: ignore[misc]
        try:
            exec(code, {"__name__": "__main__"})
        finally:
            cdk.App = real_app  # type: ignore[misc]  # the next block gets the real one
        if not apps:
            raise AssertionError(f"{name} runs as an app but created no cdk.App")
        for app in apps:
            _check_assembly(name, app.synth())  # synth raises on any unacknowledged AwsSolutions finding
    else:
        exec(code, {"__name__": "__main__"})


def missing_context(assembly_directory: Path) -> list[str]:
    """The context keys a cloud assembly is missing, its nested assemblies' (Stages) included: the values
    ``cdk synth`` would look up in the account, with credentials, before it could synthesize."""
    return sorted(
        {
            missing["key"]
            for manifest in sorted(assembly_directory.glob("**/manifest.json"))
            for missing in json.loads(manifest.read_text()).get("missing", [])
        }
    )


def _check_assembly(name: str, assembly: CloudAssembly) -> None:
    """No lookup, and cfn-lint (errors and warnings) clean on every template, nested assemblies' included."""
    directory = Path(assembly.directory)
    keys = missing_context(directory)
    if keys:
        raise AssertionError(
            f"{name}: synth needs context looked up in the account ({', '.join(keys)}): a reader's `cdk synth` "
            "would need AWS credentials. In process, a lookup only adds to the manifest's `missing` list."
        )
    from cdk_helpers import cfn_lint_findings

    findings = cfn_lint_findings(directory)
    if findings:
        raise AssertionError(f"{name}: cfn-lint findings:\n" + "\n".join(findings))


#: Prefix of the line the runner prints per block: ``[id, None]`` or ``[id, traceback]``.
_RESULT = "@@block-result "


def run_blocks(jobs: list[list]) -> None:
    """Each ``[id, line, mode, code]`` in turn in this process, each with its own namespace; one result line each.
    The blocks' own output goes to stderr, so that stdout holds only the results."""
    import contextlib
    import traceback

    for block_id, line, mode, code in jobs:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                run_block(block_id, line, mode, code)
            error = None
        except Exception:  # reported on the block's own test; the next block runs
            error = traceback.format_exc()
        print(_RESULT + json.dumps([block_id, error]), flush=True)


def test_the_ecs_deployment_options_example_runs_in_a_project_without_the_repo_s_lambda_src(tmp_path: Path) -> None:
    # GIVEN the EcsJob "Deployment options" example, in a reader's project that has no lambda_src/Dockerfile
    [block] = [b for b in python_blocks(ROOT / "docs" / "constructs.md") if '"Crawl"' in b.code]
    # WHEN it runs as the docs' other examples do
    error = _run([block], tmp_path, without=("lambda_src",))[block.id]
    # THEN it synthesizes: its jobs name their own image
    assert error is None, error


if __name__ == "__main__":
    run_blocks(json.loads(sys.stdin.read()))
