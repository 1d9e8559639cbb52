"""``python -m sqslease.worker``: the worker's command line (:func:`sqslease.worker.cli.main`)."""

import sys

from sqslease.worker.cli import main

sys.exit(main())
