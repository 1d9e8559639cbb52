"""``python -m jobqueues.emulator.demo --endpoint URL``: the demo against a running emulator (see the package)."""

import sys

from jobqueues.emulator.demo.run import main

if __name__ == "__main__":
    sys.exit(main())
