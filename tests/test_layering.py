"""The arrows point one way: no module of ``jobqueues`` imports a module of its own package that imports it back,
directly or through others, at the top or inside a function (as aws-cdk-lib's ``Queue`` never imports
``aws-lambda-event-sources``). Consumers depend on the queue's interface, never the queue on its consumers."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "constructs" / "jobqueues"


def imports_of(path: Path, modules: set[str], exports: dict[str, str]) -> set[str]:
    """Every ``jobqueues`` module ``path`` imports, anywhere in the file (functions and TYPE_CHECKING included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("jobqueues.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "jobqueues":
            if node.module == "jobqueues":  # `from jobqueues import defaults` or an export of the package
                for alias in node.names:
                    name = f"jobqueues.{alias.name}"
                    found.add(name if name in modules else f"jobqueues.{exports[alias.name]}")
            else:
                found.add(node.module)
    return found


def module_files() -> dict[str, Path]:
    """Module name -> file, subpackages (``jobqueues.ops``, ``jobqueues.cli``) included; a package is its
    ``__init__`` (the top package's is the lazy export table, read below)."""
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts == ("__init__",):
            continue
        name = ".".join(("jobqueues", *(parts[:-1] if parts[-1] == "__init__" else parts)))
        files[name] = path
    return files


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    modules = set(files)
    namespace: dict[str, object] = {}
    init = ast.parse((PACKAGE / "__init__.py").read_text())
    exports_node = next(
        n for n in init.body if isinstance(n, ast.AnnAssign | ast.Assign) and "_EXPORTS" in ast.unparse(n)
    )
    exec(compile(ast.Module(body=[exports_node], type_ignores=[]), "exports", "exec"), namespace)
    exports = namespace["_EXPORTS"]
    assert isinstance(exports, dict)
    return {module: imports_of(files[module], modules, exports) - {module} for module in sorted(modules)}


def cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path ``start -> ... -> start``, or ``None``."""
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_no_module_of_jobqueues_imports_one_that_imports_it_back() -> None:
    graph = import_graph()
    assert len(graph) >= 25
    cycles = [cycle for module in graph if (cycle := cycle_through(graph, module)) is not None]
    assert cycles == [], "import cycles (the arrow must point one way):\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_consumers_and_factories_depend_on_the_interface_not_the_queue() -> None:
    graph = import_graph()
    for module in (
        "jobqueues.lambda_consumer",
        "jobqueues.ecs_consumer",
        "jobqueues.consumer_binding",
        "jobqueues.metrics",
        "jobqueues.consumer_alarms",
        "jobqueues.dashboard",
        "jobqueues.job_queue_base",
    ):
        assert "jobqueues.job_queue" not in graph[module], f"{module} imports the concrete JobQueue"
    for queue_module in ("jobqueues.job_queue", "jobqueues.job_queue_base"):
        assert not graph[queue_module] & {"jobqueues.lambda_job", "jobqueues.ecs_job"}


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The checker itself can fail: a two-module loop, and one inside a function, are found.
    assert cycle_through({"a": {"b"}, "b": {"a"}}, "a") == ["a", "b", "a"]
    assert cycle_through({"a": {"b"}, "b": {"c"}, "c": set()}, "a") is None
    source = "def f():\n    from jobqueues.lambda_job import LambdaJob\n"
    tmp = PACKAGE.parent.parent / ".pytest_cache" / "layering_probe.py"
    tmp.parent.mkdir(exist_ok=True)
    tmp.write_text(source)
    assert imports_of(tmp, {"jobqueues.lambda_job"}, {}) == {"jobqueues.lambda_job"}


def test_the_command_and_its_operations_never_import_the_cdk() -> None:
    # An operator's machine runs `jobqueues status` without Node: nothing under jobqueues.ops or jobqueues.cli
    # reaches a construct module (which imports aws_cdk), except through `local` and drift's `--app`, which run
    # the cdk CLI as a process.
    graph = import_graph()
    pure = {m for m in graph if m.startswith(("jobqueues.ops", "jobqueues.cli"))}
    assert {"jobqueues.ops.discovery", "jobqueues.cli", "jobqueues.cli.context"} <= pure
    allowed = pure | {"jobqueues.defaults", "jobqueues.declaration", "jobqueues.errors", "jobqueues.profiles_document"}
    for module in sorted(pure):
        reached, todo = set(), [module]
        while todo:
            for nxt in graph.get(todo.pop(), set()) - reached:
                reached.add(nxt)
                todo.append(nxt)
        assert reached <= allowed, f"{module} reaches {sorted(reached - allowed)}"
    # and at run time: importing the command and every operation loads neither aws_cdk nor jsii
    import subprocess
    import sys

    probe = (
        "import sys, importlib\n"
        f"for m in {sorted(pure)!r}: importlib.import_module(m)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'jsii', 'constructs'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
