"""``jobqueues``: run your own app locally, and operate your job types after ``cdk deploy`` (:mod:`.app`).

The console script's entry point is here, apart from the commands' modules, so that a Ctrl-C while those load (the
command's first half second, before it can say anything) is the same one line and exit status as later (130),
not a traceback.
"""

from __future__ import annotations

from typing import Any

from jobqueues.ops.errors import EXIT_INTERRUPTED  # a light module: the commands' are loaded in main


def main(argv: list[str] | None = None) -> Any:
    """The console script: :func:`jobqueues.cli.app.main` (operation errors as one line and an exit status)."""
    try:
        from jobqueues.cli.app import main as run
    except KeyboardInterrupt:
        import sys

        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    return run(argv)
