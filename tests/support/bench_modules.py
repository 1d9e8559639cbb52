"""The benchmark scripts of ``bench/``, loaded as modules: tests hold what they measure (counts, sizes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/NAME.py`` as a module, registered under ``name`` unless one is (a script importing another, as
    ``consumer_synth_bench`` imports ``synth_bench``, finds it: load that one first)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module
