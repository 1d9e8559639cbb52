"""``python -m jobstats.bundle dist/jobstats.zip``: the ``--py-files`` archive for ``spark-submit``.

It holds the ``jobstats`` and ``sqslease`` packages (``sqslease.rules`` gives the visibility-timeout rule);
pyspark comes with the cluster, and matplotlib is needed only for ``--plots``. ``make dist/jobstats.zip``
and the tests build it here, so what a cluster runs is what the tests ran.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: (source root, package) pairs packed into the archive.
PACKAGES = ((ROOT, "jobstats"), (ROOT / "lambda_src", "sqslease"))


def build(target: Path) -> Path:
    """Write the archive to ``target`` (its directory is created) and return ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, package in PACKAGES:
            for source in sorted((root / package).glob("*.py")):
                archive.write(source, source.relative_to(root).as_posix())
    return target


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "dist/jobstats.zip")))
