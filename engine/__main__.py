"""``python -m engine``: the headless command line of :mod:`engine.cli`."""

import signal
import sys

from .cli import main

if __name__ == "__main__":
    # SIGTERM (kill, timeout, a scheduler) unwinds as an exit: the output's temporary file is removed
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.exit(main())
