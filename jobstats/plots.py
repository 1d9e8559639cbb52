"""One PNG per deployment (stack and job type): duration distribution (log axis) with p50, p99 and the recommended
VT, and the what-if curves (share of messages overrunning each candidate VT, and the crash-retry delay it implies)."""

from __future__ import annotations

import hashlib
import logging
import re
import warnings
from functools import cache
from pathlib import Path
from typing import Any

logger = logging.getLogger("jobstats")


def _pyplot() -> Any:
    """matplotlib's pyplot, on its file-only backend: imported when a plot is drawn, not with this module (about a
    second, which a run without ``--plots`` and every importer of :func:`plot_file_name` would pay)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


#: Fonts tried, in order, for characters DejaVu Sans lacks (job type names in any script), where installed.
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans", "Droid Sans Fallback", "Arial Unicode MS")


def plot_job_type(
    job_type: str, entry: dict[str, Any], histogram: list[tuple[int, int]], bins_per_decade: int, out_dir: Path
) -> Path:
    """Write ``<out_dir>/<plot_file_name(job_type)>`` and return its path.

    Titles use DejaVu Sans, then any installed :data:`FALLBACK_FONTS`. Characters no installed font can draw
    show as boxes, and one warning names the job type (instead of matplotlib's warning per glyph).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    with plt.rc_context({"font.family": font_families()}), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = _draw(job_type, entry, histogram, bins_per_decade, out_dir)
    missing: set[str] = set()
    for caught_warning in caught:
        text = str(caught_warning.message)
        if "missing from font" in text:
            missing.add(text.split()[1])  # "Glyph 26085 (...) missing from font(s) DejaVu Sans."
        else:
            warnings.warn_explicit(
                caught_warning.message, caught_warning.category, caught_warning.filename, caught_warning.lineno
            )
    if missing:
        logger.warning(
            "plot of %r: no installed font draws %d of its characters, shown as boxes; install one that does "
            "(e.g. Noto Sans CJK for Chinese, Japanese or Korean names). The file name is unaffected: %s",
            job_type,
            len(missing),
            path.name,
        )
    return path


@cache
def font_families() -> list[str]:
    """DejaVu Sans (matplotlib's own), then the installed :data:`FALLBACK_FONTS`."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *(name for name in FALLBACK_FONTS if name in installed)]


def _draw(
    job_type: str, entry: dict[str, Any], histogram: list[tuple[int, int]], bins_per_decade: int, out_dir: Path
) -> Path:
    from matplotlib.ticker import NullFormatter

    plt = _pyplot()
    fig, (dist, curve) = plt.subplots(1, 2, figsize=(13, 4.8))
    window = entry["window"]
    fig.suptitle(f"{job_type}: {entry['count']:,} messages, {_short(window['from'])} to {_short(window['to'])}")

    histogram = sorted(histogram)
    edges_ms = [10 ** (b / bins_per_decade) for b, _ in histogram]
    widths = [10 ** ((b + 1) / bins_per_decade) - 10 ** (b / bins_per_decade) for b, _ in histogram]
    dist.bar(edges_ms, [c for _, c in histogram], width=widths, align="edge", color="#7a9cc6")
    dist.set_xscale("log")
    dist.xaxis.set_minor_formatter(NullFormatter())  # minor labels overlap on a log axis
    dist.set_xlabel("processing time (ms, log scale)")
    dist.set_ylabel("messages")
    marks = [("p50", entry["p50_ms"], "#2b8a3e"), ("p99", entry["p99_ms"], "#e8590c")]
    if entry.get("recommended_visibility_timeout_s"):
        marks.append(("recommended VT", entry["recommended_visibility_timeout_s"] * 1000, "#c92a2a"))
    for label, value, color in marks:
        dist.axvline(value, color=color, linestyle="--", label=f"{label} {_fmt_ms(value)}")
    dist.legend(loc="upper right")
    dist.set_title("duration distribution")

    rows = entry["what_if"]
    vts = [r["visibility_timeout_s"] for r in rows]
    curve.plot(vts, [r["overrun_share"] * 100 for r in rows], marker="o", color="#364fc7", label="overrun share")
    curve.set_xscale("log")
    curve.set_xlabel("visibility timeout (s, log scale)")
    curve.set_ylabel("overrunning the VT without heartbeat (%)", color="#364fc7")
    delay = curve.twinx()
    delay.plot(vts, [r["expected_crash_retry_delay_s"] for r in rows], marker="s", color="#868e96", label="retry delay")
    delay.set_yscale("symlog", linthresh=10)
    delay.set_ylabel("crash-retry delay (s)", color="#495057")
    if entry.get("recommended_visibility_timeout_s"):
        recommended = entry["recommended_visibility_timeout_s"]
        curve.axvline(recommended, color="#c92a2a", linestyle="--", label="recommended VT")
    curve.legend(loc="upper right")
    curve.set_title("what if: duplicates vs crash-retry delay by VT")
    curve.grid(True, which="major", alpha=0.3)

    path = out_dir / plot_file_name(job_type)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_file_name(job_type: str) -> str:
    """``<readable part>-<8 hex digits of the name's SHA-256>.png``: the same name every run, and a different
    one for every job type, even where the readable parts coincide ("A B" and "A/B", or names that differ only
    in case on a case-insensitive file system). The readable part keeps letters (any script), digits, ``_``,
    ``-`` and ``.``, at most 60 characters.
    """
    readable = re.sub(r"[^\w.-]+", "_", job_type).strip("_.")[:60] or "job"
    return f"{readable}-{hashlib.sha256(job_type.encode()).hexdigest()[:8]}.png"


def _fmt_ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 10_000 else _fmt_s(ms / 1000)


def _fmt_s(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    return f"{s:.3g} s"


def _short(timestamp: str | None) -> str:
    return (timestamp or "?")[:19].replace("T", " ")
