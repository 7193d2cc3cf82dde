"""``python -m crawler``: the command line."""

import sys

try:
    from crawler.cli import main
except KeyboardInterrupt:  # Ctrl-C before the command line could install its handlers
    sys.stderr.write("crawler: aborted\n")
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main())
