"""`python -m jobstats` where the `jobstats` extra (pyspark, matplotlib, numpy) is not installed: one line naming
the extra to install, exit status 2, never a `ModuleNotFoundError` traceback. The README's "run your own app
locally" installs `[local]` only, and its jobstats step used to end so."""

from __future__ import annotations

import subprocess
import sys

#: Runs ``python -m jobstats profile ...`` with pyspark not found, as in a virtualenv without it: a finder first on
#: ``sys.meta_path`` answers for pyspark as the import system does for a module it cannot find.
WITHOUT_PYSPARK = """
import runpy, sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pyspark":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NotInstalled())
sys.argv = ["jobstats", "profile", "logs", "--out", "profiles.json"]
runpy.run_module("jobstats", run_name="__main__", alter_sys=True)
"""


def test_without_pyspark_one_line_names_the_extra() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_PYSPARK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    assert done.stderr == (
        "error: python -m jobstats needs pyspark, which the extra jobstats installs: "
        "pip install 'cdk-jobqueues[jobstats]'\n"
    )
