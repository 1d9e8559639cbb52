"""Where the emulator finds what it runs: the source root of the `jobqueues` package, and this checkout."""

from __future__ import annotations

from pathlib import Path

#: The directory that holds the ``jobqueues`` package: a checkout's ``constructs/`` or, installed, site-packages.
#: A local function's interpreter gets it on its path to import the Lambda bootstrap.
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: This repository's checkout (the example app, its ``cdk.json`` and ``node_modules``): ``SOURCE_ROOT``'s parent
#: in a checkout. Installed, nothing uses it but this repository's own ``make local`` and tests.
CHECKOUT_DIR = SOURCE_ROOT.parent
