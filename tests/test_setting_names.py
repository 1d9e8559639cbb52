"""Every setting a consumer is told is named in one module, ``sqslease.config``: no other module of the product
(constructs/, lambda_src/, jobstats/) spells a setting's variable (``SQSLEASE_...``) or option
(``--visibility-timeout``) in its code, nor builds one from the prefix (``ENV_PREFIX + "HOOKS"``). They go through
``sqslease.config.SETTINGS`` instead, so that renaming a setting cannot leave a reader of the old name behind.

Docstrings and comments may name them (they document, and docs/sqslease.md's table is generated from the config);
string literals in code, f-strings included, may not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqslease.config import ENV_PREFIX, SETTINGS

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("constructs", "lambda_src", "jobstats")
#: The one module that spells them.
CONFIG = Path("lambda_src/sqslease/config.py")
#: (file, or directory ending in "/", literal): why that literal there is no setting's name.
NOT_A_SETTING = {
    ("constructs/jobqueues/emulator/user_app.py", "--concurrency"): "cdk deploy's own option",
    ("constructs/jobqueues/cli/", "--stack"): "the jobqueues command's own option: the stack to read",
    ("constructs/jobqueues/ops/discovery.py", "--stack"): "the jobqueues command's own option, in its error",
    ("constructs/jobqueues/ops/unknown_names.py", "--stack"): "the jobqueues command's own option, in its errors",
    ("constructs/jobqueues/ops/name_hints.py", "--stack"): "the jobqueues command's own option, in its hints",
    ("constructs/jobqueues/emulator/demo/run.py", "--stack"): "the demo command's own option: the stack to run on",
}
_OPTIONS = re.compile("|".join(rf"(?<![\w-]){re.escape(s.option)}(?![\w-])" for s in SETTINGS.values()))


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _prefix(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id.endswith("ENV_PREFIX")) or (
        isinstance(node, ast.Attribute) and node.attr.endswith("ENV_PREFIX")
    )


def spellings(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each setting name ``source`` spells in its code: a literal holding a variable or an option,
    or a name built from ``ENV_PREFIX`` and a literal."""
    tree = ast.parse(source)
    skipped = docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if ENV_PREFIX in node.value:
                yield node.lineno, f"a variable in {node.value!r}"
            for option in _OPTIONS.findall(node.value):
                yield node.lineno, option
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _prefix(node.left):
            if isinstance(node.right, ast.Constant):
                yield node.lineno, f"a variable built from the prefix: {ast.unparse(node)}"
        elif isinstance(node, ast.JoinedStr):
            for value, after in zip(node.values, node.values[1:], strict=False):
                if isinstance(value, ast.FormattedValue) and _prefix(value.value) and isinstance(after, ast.Constant):
                    if str(after.value)[:1].isupper():
                        yield node.lineno, f"a variable built from the prefix: {ast.unparse(node)[:60]}"


def excepted(path: Path, what: str) -> bool:
    return any(
        literal == what and (str(path) == where or (where.endswith("/") and str(path).startswith(where)))
        for where, literal in NOT_A_SETTING
    )


def product_files() -> list[Path]:
    return sorted(p.relative_to(ROOT) for top in SCANNED for p in (ROOT / top).rglob("*.py") if ".venv" not in p.parts)


def test_no_product_module_but_the_config_spells_a_setting_name() -> None:
    found = []
    for path in product_files():
        if path == CONFIG:
            continue
        for line, what in spellings((ROOT / path).read_text(encoding="utf-8")):
            if not excepted(path, what):
                found.append(f"{path}:{line}: {what}")
    assert found == [], "setting names spelled outside sqslease.config (use sqslease.config.SETTINGS):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    ("code", "caught"),
    [
        ('os.environ.get("SQSLEASE_QUEUE_URL")', True),
        ('command = ["--handler", handler, "--visibility-timeout", "30"]', True),
        ('error = f"--idempotency-key ({name}): bad"', True),
        ("name = ENV_PREFIX + 'HOOKS'", True),
        ("name = f'{config.ENV_PREFIX}IDEMPOTENCY_KEY'", True),
        ('"""A docstring may name SQSLEASE_HOOKS and --hooks."""', False),
        ("x = 1  # a comment may name --queue-url", False),
        ('args = ["--port", "8080", "--visibility-timeouts"]', False),
        ("name = SETTINGS['hooks'].variable", False),
    ],
)
def test_the_scan_finds_a_spelled_name_and_nothing_else(code: str, caught: bool) -> None:
    assert bool(list(spellings(code))) is caught


def test_every_exception_is_still_needed() -> None:
    # An exception that no longer matches anything would let a later spelling of that literal pass unseen.
    spelled = {(path, what) for path in product_files() for _, what in spellings((ROOT / path).read_text("utf-8"))}
    for where, literal in NOT_A_SETTING:
        assert any(excepted(path, literal) and what == literal for path, what in spelled), (where, literal)
