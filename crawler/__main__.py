"""``python -m crawler``: the command line."""

import signal
import sys

try:
    from crawler.cli import main
except KeyboardInterrupt:  # Ctrl-C before the command line could install its handlers
    sys.stderr.write("crawler: aborted\n")
    sys.exit(2)

if __name__ == "__main__":
    code = main()
    # Everything is written: a signal during interpreter teardown changes nothing, so it
    # must not turn a finished crawl's exit status into "killed by a signal".
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(code)
