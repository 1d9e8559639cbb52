"""The docs' generated tables say what the docstrings say now, and every link between the documents resolves.

``docs/generate.py`` writes the sections between ``<!-- generated: TARGET -->`` and ``<!-- end generated -->``
from the docstrings (the props of ``jobqueues``, the consumer's settings, the module lists); when a docstring changes,
:func:`test_generated_sections_are_up_to_date` fails and names the command that fixes it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


generate = _generator()

#: What the pages must keep generating (a deleted marker would otherwise pass).
REQUIRED_TARGETS = {
    "jobqueues.props.JobQueueProps",
    "jobqueues.props.QueueOptions",
    "jobqueues.props.LeaseOptions",
    "jobqueues.props.LambdaJobProps",
    "jobqueues.props.EcsJobProps",
    "jobqueues.alarms.JobQueueAlarmProps",
    "settings sqslease.config.SETTINGS",
}


def test_generated_sections_are_up_to_date() -> None:
    stale = [str(path.relative_to(ROOT)) for path, _ in generate.stale(generate.documents())]
    assert stale == [], f"{', '.join(stale)} out of date with the docstrings: run `{generate.COMMAND}` (make docs)"


def test_the_reference_tables_are_generated() -> None:
    targets = {
        m["target"].strip() for path in generate.documents() for m in generate.SECTION.finditer(path.read_text())
    }
    assert REQUIRED_TARGETS <= targets, f"missing <!-- generated: ... --> sections: {REQUIRED_TARGETS - targets}"


def test_a_page_out_of_date_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("intro\n\n<!-- generated: sqslease.settings.LeaseSettings -->\nold table\n<!-- end generated -->\n")
    [(path, new)] = generate.stale([page])
    assert path == page and "old table" not in new and "| `visibility_timeout` | `float` | 30 |" in new
    page.write_text(new)
    assert list(generate.stale([page])) == []


def test_both_docstring_styles_are_parsed() -> None:
    typed_dict = generate.parse_docstring(
        """Props of a job.

        More about them.

        batch_size:
            Records per invocation, e.g. ``10``. Default: 10.
        code:
            The handler's code (required).
        """
    )
    assert typed_dict.paragraphs == ["Props of a job.", "More about them."]
    assert typed_dict.entries == {
        "batch_size": "Records per invocation, e.g. ``10``. Default: 10.",
        "code": "The handler's code (required).",
    }
    params = generate.parse_docstring(
        """Settings.

        :param wait_time: long-poll wait,
            at most. Default 20.
        :param job_type: name in log lines. Default ``"default"``.
        """
    )
    assert params.entries == {
        "wait_time": "long-poll wait, at most. Default 20.",
        "job_type": 'name in log lines. Default ``"default"``.',
    }
    assert generate.split_default("A quota. Default: 120,000, the SQS quota. Alarms warn.") == (
        "A quota. Alarms warn.",
        "120,000, the SQS quota",
    )
    assert generate.split_default("The code, e.g. ``Code.from_asset``. No default here.") == (
        "The code, e.g. ``Code.from_asset``. No default here.",
        None,
    )


def test_a_docstring_that_disagrees_with_the_code_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import dataclass

    @dataclass
    class Undocumented:
        """Settings.

        :param a: the first. Default 1.
        :param gone: a field that was removed. Default 2.
        """

        a: int = 1
        b: int = 2

    monkeypatch.setattr(generate, "Undocumented", Undocumented, raising=False)  # resolvable by name
    with pytest.raises(generate.DocsError, match=r"b has no entry in the docstring; .* documents gone"):
        generate.render("docs_generate.Undocumented")


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fence = [], None
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if opening and (fence is None or opening.group(1)[0] == fence):
            fence = None if fence else opening.group(1)[0]
            continue
        if fence is None:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped but ``-`` and ``_``, spaces as ``-``, repeats numbered."""
    seen: dict[str, int] = {}
    for line in _prose(path.read_text(encoding="utf-8")):
        heading = _HEADING.match(line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading["title"].lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_anchors_are_githubs() -> None:
    assert anchors(ROOT / "docs" / "sqslease.md") >= {
        "settings-consumerconfig",
        "the-log-line-emf-one-per-processed-message-on-stdout",
        "long-running-workers-ecsfargate",
    }


@pytest.mark.parametrize("document", generate.documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_between_documents_resolve(document: Path) -> None:
    broken = []
    for line in _prose(document.read_text(encoding="utf-8")):
        for link in _LINK.finditer(line):
            target = link["target"]
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            path = (document.parent / file).resolve() if file else document
            if not path.exists():
                broken.append(f"{target}: no such file")
            elif anchor and anchor not in anchors(path):
                broken.append(f"{target}: no heading with that anchor in {path.relative_to(ROOT)}")
    assert broken == [], f"{document.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_settings_table_has_a_row_per_setting_of_the_consumer_configuration() -> None:
    from sqslease.config import SETTINGS

    rows = generate.render("settings sqslease.config.SETTINGS").splitlines()[2:]
    assert len(rows) == len(SETTINGS)
    assert rows[0].startswith(r"| `queue_url` | `--queue-url` `SQSLEASE_QUEUE_URL` | `str \| None` | `None` |")
    row = next(r for r in rows if r.startswith("| `lease.visibility_timeout` |"))
    assert "| `--visibility-timeout` `SQSLEASE_VISIBILITY_TIMEOUT` | `float` | 30 |" in row
    table = "| `idempotency.table` | `--idempotency-table` `SQSLEASE_IDEMPOTENCY_TABLE` |"
    assert any(r.startswith(table) for r in rows)


def test_a_setting_s_stated_default_is_the_value_its_field_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the settings' docstrings, whose "Default ..." sentences the settings table shows
    from sqslease.settings import LeaseSettings

    rows = generate.render("settings sqslease.config.SETTINGS")
    assert "| 43,140 (12 h minus 60 s) |" in rows and "| 108,000 (90 % of the 120,000 quota) |" in rows
    # WHEN one states another value than its field holds THEN the table is refused, naming both and the fix
    doc = LeaseSettings.__doc__ or ""
    monkeypatch.setattr(LeaseSettings, "__doc__", doc.replace("expiry. Default 5.", "expiry. Default 6."))
    wrong = r"LeaseSettings.extension_threshold states the default 6, its field holds 5"
    with pytest.raises(generate.DocsError, match=wrong):
        generate.render("settings sqslease.config.SETTINGS")
