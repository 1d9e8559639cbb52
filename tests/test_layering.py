"""The arrows point one way, in every package: the table of docs/concepts.md says which package may import which,
and no module or package imports one that imports it back, directly or through others, at the top, inside a
function or under ``TYPE_CHECKING`` (as aws-cdk-lib's ``Queue`` never imports ``aws-lambda-event-sources``).
Consumers depend on the queue's interface, never the queue on its consumers."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Package -> its directory: every package of the repository's Python code (tests and bench aside).
SOURCES = {
    "jobqueues": ROOT / "constructs" / "jobqueues",
    "sqslease": ROOT / "lambda_src" / "sqslease",
    "jobstats": ROOT / "jobstats",
    "stacks": ROOT / "stacks",
}
CDK = {"aws_cdk", "constructs", "jsii", "cdk_nag"}


def module_files() -> dict[str, Path]:
    """Module name -> file; a package is its ``__init__``."""
    files = {}
    for top, directory in SOURCES.items():
        for path in directory.rglob("*.py"):
            parts = path.relative_to(directory).with_suffix("").parts
            files[".".join((top, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return files


def lazy_exports(path: Path) -> dict[str, str]:
    """A package's ``_EXPORTS`` table (name -> module), which its ``__getattr__`` imports on first use."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and "_EXPORTS" in ast.unparse(node):
            namespace: dict[str, object] = {}
            exec(compile(ast.Module(body=[node], type_ignores=[]), "exports", "exec"), namespace)
            exports = namespace["_EXPORTS"]
            assert isinstance(exports, dict)
            return exports
    return {}


def imports_of(path: Path, modules: set[str], exports: dict[str, dict[str, str]]) -> tuple[set[str], set[str]]:
    """The repository's modules ``path`` imports anywhere in the file, and the other top-level names it imports."""
    ours, others = set(), set()

    def add(name: str) -> None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            ours.add(name)

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                add(alias.name) if top in SOURCES else others.add(top)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import; write the module's full name"
            assert node.module is not None
            if node.module.split(".")[0] not in SOURCES:
                others.add(node.module.split(".")[0])
                continue
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                lazy = exports.get(node.module, {}).get(alias.name)
                add(name if name in modules else f"{node.module.split('.')[0]}.{lazy}" if lazy else node.module)
    return ours, others


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Module -> the repository's modules it imports; module -> the third-party top-level names it imports."""
    files = module_files()
    exports = {name: lazy_exports(path) for name, path in files.items() if path.name == "__init__.py"}
    graph, external = {}, {}
    for module, path in files.items():
        ours, others = imports_of(path, set(files), exports)
        graph[module], external[module] = ours - {module}, others
    return graph, external


def package_of(module: str, packages: set[str]) -> str:
    return module if module in packages else module.rpartition(".")[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = [stack.pop()]
                    while component[-1] != node:
                        component.append(stack.pop())
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return found


def arrows() -> dict[str, tuple[set[str], bool]]:
    """docs/concepts.md's table: package -> (the packages it may import, whether it may load aws_cdk)."""
    table = {}
    for line in (ROOT / "docs" / "concepts.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[\w.]+`", cells[0]):
            table[cells[0].strip("`")] = (set(re.findall(r"`([\w.]+)`", cells[1])), cells[2] == "yes")
    return table


def area_of(module: str, areas: Iterable[str]) -> str:
    return max((a for a in areas if module == a or module.startswith(a + ".")), key=len)


def test_no_module_and_no_package_imports_one_that_imports_it_back() -> None:
    graph, _ = import_graph()
    assert len(graph) >= 150
    assert cycles(graph) == [], "module import cycles (the arrow must point one way)"
    packages = {m for m in graph if module_files()[m].name == "__init__.py"}
    package_graph: dict[str, set[str]] = {p: set() for p in packages}
    for module, imported in graph.items():
        for other in imported:
            if package_of(module, packages) != package_of(other, packages):
                package_graph[package_of(module, packages)].add(package_of(other, packages))
    assert cycles(package_graph) == [], "package import cycles"


def test_every_import_follows_the_arrows_of_docs_concepts() -> None:
    graph, _ = import_graph()
    table = arrows()
    assert set(SOURCES) <= set(table) and len(table) >= 7
    wrong = []
    for module, imported in sorted(graph.items()):
        area = area_of(module, table)
        allowed = {area, *table[area][0]}
        wrong += [f"{module} -> {other}" for other in sorted(imported) if area_of(other, table) not in allowed]
    assert wrong == [], "imports against docs/concepts.md's arrows:\n" + "\n".join(wrong)


def test_the_packages_without_the_cdk_never_reach_it() -> None:
    # An operator's machine runs `jobqueues status`, and a consumer its runtime, without Node: nothing there
    # reaches a module that imports aws_cdk (`local` and drift's `--app` run the cdk CLI as a process).
    graph, external = import_graph()
    table = arrows()
    pure = sorted(m for m in graph if not table[area_of(m, table)][1])
    assert {"jobqueues.ops.discovery", "jobqueues.cli.context", "jobqueues.emulator.server", "sqslease.worker"} <= set(
        pure
    )
    for module in pure:
        reached, todo = {module}, [module]
        while todo:
            for nxt in graph[todo.pop()] - reached:
                reached.add(nxt)
                todo.append(nxt)
        loading = sorted(m for m in reached if external[m] & CDK)
        assert loading == [], f"{module} reaches {loading}, which import the CDK"
    # and at run time: importing the command, its operations and the emulator loads neither aws_cdk nor jsii
    probe = (
        "import sys, importlib\n"
        f"for m in {[m for m in pure if m.startswith('jobqueues.')]!r}: importlib.import_module(m)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'jsii', 'constructs'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_consumers_and_factories_depend_on_the_interface_not_the_queue() -> None:
    graph, _ = import_graph()
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


def test_the_checks_can_fail(tmp_path: Path) -> None:
    # A two-module loop, one through a function-level import, and an arrow against the table are all found.
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from jobqueues.lambda_job import LambdaJob\n    import boto3\n")
    assert imports_of(probe, {"jobqueues.lambda_job"}, {}) == ({"jobqueues.lambda_job"}, {"boto3"})
    probe.write_text("from jobqueues import JobQueue\n")
    assert imports_of(probe, {"jobqueues", "jobqueues.job_queue"}, {"jobqueues": {"JobQueue": "job_queue"}})[0] == {
        "jobqueues.job_queue"
    }
    table = arrows()
    assert area_of("jobqueues.emulator.demo.run", table) == "jobqueues.emulator"
    assert "jobqueues.cli" not in table["jobqueues.ops"][0] and not table["jobqueues.ops"][1]
