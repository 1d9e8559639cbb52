"""``python -m sqslease.worker``: the worker's command line (:func:`sqslease.worker.cli.main`)."""

import sys

from sqslease.worker.cli import main

if __name__ == "__main__":  # not when a tool walks the package's modules
    sys.exit(main())
