"""``python -m engine``: the headless command line of :mod:`engine.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
