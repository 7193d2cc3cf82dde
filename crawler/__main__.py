"""``python -m crawler``: the command line."""

import sys

from crawler.cli import main

if __name__ == "__main__":
    sys.exit(main())
