"""``python -m local_emulator.demo --endpoint URL``: the demo against a running emulator (see the package)."""

import sys

from local_emulator.demo.run import main

if __name__ == "__main__":
    sys.exit(main())
