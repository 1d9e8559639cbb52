"""Regenerate the reference sections of the docs from the docstrings that already say it.

``.venv/bin/python docs/generate.py`` rewrites, in README.md and docs/**/*.md, every section between
``<!-- generated: TARGET -->`` and ``<!-- end generated -->``; ``--check`` only reports the stale ones (exit 1).
A TARGET is either:

- a dotted name (``jobqueues.props.LambdaJobProps``, ``jobqueues.JobQueue.from_queue_attributes``): a
  ``TypedDict`` (entries ``name:`` then indented text), a dataclass or a function (``:param name: text``),
  rendered as its summary and a table of its own props, fields or parameters with their defaults (``required``
  when the code has none). A prop, field or parameter without an entry, or an entry without one, is an error:
  the docstring and the code disagree. The defaults of ``jobqueues`` are rendered from their values (a
  ``TypedDict``'s from ``jobqueues.prop_defaults``, a field's or a parameter's from the code, with the notes of
  ``jobqueues.prop_defaults``), and an entry there that states one is an error; any other target's default is the
  ``Default ...`` sentence of its entry;
- ``modules DIR`` (a directory of the repository): one row per module, the first sentence of its docstring;
- ``settings NAME`` (``sqslease.config.SETTINGS``): one row per setting of the consumer's configuration, its
  field, option and variable, type, default and meaning, from the docstring of the dataclass that declares it.

Modules are imported to read their docstrings (``jobqueues`` starts the CDK's Node kernel: about 3 s).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ".venv/bin/python docs/generate.py"
SECTION = re.compile(r"(<!-- generated: (?P<target>[^>]+?) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL)
_PARAM = re.compile(r"^:param\s+(?P<name>\w+):\s*(?P<text>.*)$")
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_]\w*):\s*$")
_ROLE = re.compile(r":[\w:]+:`~?(?P<target>[^`]+)`")
_SENTENCE_END = re.compile(r"(?<=\.)(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z`(])")  # between two sentences


class DocsError(Exception):
    """A target that cannot be rendered: the docstring and the code disagree, or the name does not exist."""


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def markdown(text: str) -> str:
    """reStructuredText inline markup as Markdown: ``x`` and :role:`a.b` become `x` and `a.b`."""
    text = _ROLE.sub(lambda m: f"`{m['target']}`", text)
    return text.replace("``", "`")


def cell(text: str) -> str:
    return markdown(" ".join(text.split())).replace("|", r"\|")


@dataclasses.dataclass
class Docstring:
    paragraphs: list[str]  # before the entries: the summary first
    entries: dict[str, str]  # name -> text, in docstring order


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring into its leading paragraphs and its entries, ``:param name: text`` or ``name:`` on a
    line of its own with the text indented below; an entry's text runs until the next line indented no deeper
    than it (a ``:param`` entry: until the next line starting with ``:``)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    entries: dict[str, str] = {}
    head: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        param, field = _PARAM.match(line), _FIELD.match(line)
        if param is None and field is None:
            if not entries:
                head.append(line)
            i += 1
            continue
        name = (param or field)["name"]  # type: ignore[index]
        text = [param["text"]] if param else []
        indent = 0 if param else len(field["indent"])  # type: ignore[index]
        i += 1
        while i < len(lines):
            nxt = lines[i]
            if nxt.strip() and (len(nxt) - len(nxt.lstrip()) <= indent or nxt.lstrip().startswith(":")):
                break
            text.append(nxt.strip())
            i += 1
        if name in entries:
            raise DocsError(f"{name} is documented twice")
        entries[name] = " ".join(t for t in text if t)
    paragraphs = [" ".join(p.split()) for p in "\n".join(head).split("\n\n") if p.strip()]
    return Docstring(paragraphs, entries)


def split_default(text: str) -> tuple[str, str | None]:
    """An entry's text without its ``Default ...`` sentence, and that sentence's value (None: there is none)."""
    sentences = _SENTENCE_END.split(text.strip())
    for k, sentence in enumerate(sentences):
        match = re.match(r"Default(?::\s*|\s+)(?P<value>.*)", sentence, re.DOTALL)
        if match:
            return " ".join(sentences[:k] + sentences[k + 1 :]), match["value"].rstrip(".")
    return text, None


@dataclasses.dataclass
class Entry:
    name: str
    type: str
    required: bool  # by the code: no default value
    value: Any = None  # the code's default value (a dataclass field's, a parameter's)


def resolve(target: str) -> Any:
    """The object a dotted name names: the longest importable module prefix, then attributes."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        module = ".".join(parts[:k])
        try:
            obj: Any = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name and (module == error.name or module.startswith(error.name + ".")):
                continue  # not a module: an attribute of a shorter prefix
            raise  # the module exists and imports something missing
        try:
            for attribute in parts[k:]:
                obj = getattr(obj, attribute)
        except AttributeError as error:
            raise DocsError(f"{target}: {error}") from None
        return obj
    raise DocsError(f"{target}: no such module")


def _annotation(value: Any) -> str:
    if isinstance(value, str):
        return value
    return getattr(value, "__forward_arg__", None) or getattr(value, "__name__", None) or repr(value)


def _class_node(cls: type) -> ast.ClassDef:
    tree = ast.parse(inspect.getsource(sys.modules[cls.__module__]))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return node
    raise DocsError(f"{cls.__module__}.{cls.__qualname__}: class not found in its module's source")


def typed_dict_entries(cls: type) -> tuple[list[Entry], list[str]]:
    """A TypedDict's own props (declared in its body, in order) and the names of the TypedDicts it extends."""
    node = _class_node(cls)
    own = [
        Entry(n.target.id, ast.unparse(n.annotation), n.target.id in getattr(cls, "__required_keys__", ()))
        for n in node.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) != "TypedDict"]
    return own, bases


def object_entries(obj: Any) -> tuple[str, list[Entry], list[str]]:
    """What the table's first column is called, the rows the code has, and what else the props extend."""
    if isinstance(obj, type) and hasattr(obj, "__total__") and hasattr(obj, "__annotations__"):
        own, bases = typed_dict_entries(obj)
        return "prop", own, bases
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        missing = dataclasses.MISSING
        rows = [
            Entry(
                f.name,
                _annotation(f.type),
                f.default is missing and f.default_factory is missing,
                None if f.default is missing else f.default,
            )
            for f in dataclasses.fields(obj)
        ]
        return "field", rows, []
    if callable(obj):
        rows = [
            Entry(
                p.name,
                _annotation(p.annotation) if p.annotation is not p.empty else "",
                p.default is p.empty,
                None if p.default is p.empty else p.default,
            )
            for p in inspect.signature(obj).parameters.values()
            if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        return "parameter", rows, []
    raise DocsError(f"{obj!r} is neither a TypedDict, a dataclass nor a function")


def render_object(target: str) -> str:
    obj = resolve(target)
    column, rows, bases = object_entries(obj)
    try:
        doc = parse_docstring(obj.__doc__)
    except DocsError as error:
        raise DocsError(f"{target}: {error}") from None
    names = [row.name for row in rows]
    undocumented = [n for n in names if n not in doc.entries]
    unknown = [n for n in doc.entries if n not in names]
    if undocumented or unknown:
        problems = [f"{n} has no entry in the docstring" for n in undocumented]
        problems += [f"the docstring documents {n}, which the code does not have" for n in unknown]
        raise DocsError(f"{target}: " + "; ".join(problems))
    out = [markdown(p) for p in doc.paragraphs]
    table = [f"| {column} | type | default | |", "| --- | --- | --- | --- |"]
    for row in rows:
        text, default = split_default(doc.entries[row.name])
        if target.startswith("jobqueues."):
            if default is not None:
                raise DocsError(
                    f"{target}: the docstring of {row.name} states its default ({default}), which is rendered from "
                    "its value (jobqueues.prop_defaults): remove the Default sentence"
                )
            default = jobqueues_default(obj, row, text)
        if default is None and (row.required or "(required)" in text):
            text, default = text.replace(" (required)", "").replace("(required) ", ""), "required"
        type_cell = f"`{cell(row.type)}`" if row.type else ""
        table.append(f"| `{row.name}` | {type_cell} | {cell(default or '–')} | {cell(text)} |")
    out.append("\n".join(table))
    if bases:
        out.append("Plus every prop of " + " and ".join(f"`{b}`" for b in bases) + ".")
    return "\n\n".join(out) + "\n"


def jobqueues_default(obj: Any, row: Entry, text: str) -> str | None:
    """The default of a prop, field or parameter of ``jobqueues``, rendered from its value; ``None``: required."""
    from jobqueues.prop_defaults import DEFAULT_NOTES, PROP_DEFAULTS, Default

    name = getattr(obj, "__name__", "")
    if name in PROP_DEFAULTS:  # a TypedDict: props have no default in the code
        default = PROP_DEFAULTS[name].get(row.name)
        if default is None and "(required)" not in text:
            raise DocsError(f"{name}.{row.name} has no default in jobqueues.prop_defaults and is not (required)")
        return None if default is None else default.text()
    if row.required:
        return None
    return Default(row.value, note=DEFAULT_NOTES.get(name, {}).get(row.name, "")).text()


def first_sentence(doc: str) -> str:
    paragraph = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    return _SENTENCE_END.split(paragraph)[0]


def render_modules(directory: str) -> str:
    """One row per module of ``directory``: its first docstring sentence (read from the source, no import)."""
    base = ROOT / directory
    if not base.is_dir():
        raise DocsError(f"modules {directory}: no such directory")
    rows = ["| module | |", "| --- | --- |"]
    for path in sorted(base.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not doc:
            raise DocsError(f"modules {directory}: {path.name} has no docstring")
        rows.append(f"| `{path.name}` | {cell(first_sentence(doc))} |")
    return "\n".join(rows) + "\n"


def render_settings(target: str) -> str:
    """One row per setting of ``target`` (a mapping of name -> ``sqslease.config.Setting``), documented by the entry
    of its field in the docstring of the dataclass that declares it."""
    settings = resolve(target)
    rows = ["| field | option, variable | type | default | |", "| --- | --- | --- | --- | --- |"]
    for setting in settings.values():
        entries = parse_docstring(setting.owner.__doc__).entries
        if setting.field not in entries:
            raise DocsError(f"{target}: {setting.owner.__qualname__}.{setting.field} has no entry in its docstring")
        text, default = split_default(entries[setting.field])
        check_stated_default(setting.owner, setting.field, default)
        field = f"{setting.part}.{setting.field}" if setting.part else setting.field
        (annotation,) = [f.type for f in dataclasses.fields(setting.owner) if f.name == setting.field]
        rows.append(
            f"| `{field}` | `{setting.option}` `{setting.variable}` | `{cell(_annotation(annotation))}` "
            f"| {cell(default or '–')} | {cell(text)} |"
        )
    return "\n".join(rows) + "\n"


def check_stated_default(owner: type, name: str, stated: str | None) -> None:
    """Refuse a setting's ``Default ...`` sentence that does not start with the value its field holds, as the table
    shows it (a number with thousands separators, ``True``, a string or enum value in its quotes, ``None`` or
    none): the sentence may explain the value after it, never replace it."""
    (field,) = [f for f in dataclasses.fields(owner) if f.name == name]
    value = field.default if field.default is not dataclasses.MISSING else None
    if field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    from jobqueues.prop_defaults import Default  # how the props' tables show a value: numbers and booleans alike

    if value is None or value == ():
        shown: tuple[str, ...] = ("``None``", "none")
    elif isinstance(value, int | float):
        shown = (Default(value).text(),)
    else:
        shown = (f"``{getattr(value, 'value', value)}``", f'``"{getattr(value, "value", value)}"``')
    if stated is None or not stated.startswith(shown):
        raise DocsError(
            f"{owner.__qualname__}.{name} states the default {stated}, its field holds {value!r}: start its "
            f"Default sentence with {shown[0]} (an explanation may follow)"
        )


def render(target: str) -> str:
    kind, _, argument = target.partition(" ")
    renderers: dict[str, Callable[[str], str]] = {"modules": render_modules, "settings": render_settings}
    return renderers[kind](argument) if kind in renderers else render_object(target)


def regenerate(text: str) -> str:
    """``text`` with every generated section rendered anew."""
    return SECTION.sub(lambda m: f"{m.group(1)}\n{render(m['target'].strip())}\n{m.group(4)}", text)


def stale(paths: list[Path]) -> Iterator[tuple[Path, str]]:
    """The documents whose generated sections differ from what the docstrings say now, with the new text."""
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = regenerate(text)
        if new != text:
            yield path, new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="report stale documents, change nothing (exit 1)")
    args = parser.parse_args(argv)
    try:
        changed = list(stale(documents()))
    except DocsError as error:
        print(f"docs/generate.py: {error}", file=sys.stderr)
        return 2
    for path, new in changed:
        name = path.relative_to(ROOT)
        if args.check:
            print(f"{name} is out of date with the docstrings: run {COMMAND}", file=sys.stderr)
        else:
            path.write_text(new, encoding="utf-8")
            print(f"regenerated {name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # as the Makefile does
    sys.exit(main())
