"""The crawler's exception tree.

Foreign exceptions (requests, urllib3, OS errors) are translated into these at exactly
one boundary each: :mod:`crawler.web.fetch` for HTTP, :mod:`crawler.api` for the output folder.
The command line turns any :class:`CrawlerError` into a one-line message and exit code 2.
"""

from typing import Any


class CrawlerError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(CrawlerError, ValueError):
    """A setting is invalid: a bad seed URL, a bad regex, a non-positive worker count."""


class OutputError(CrawlerError, OSError):
    """The output folder cannot be created or written."""


class SeedFailed(CrawlerError):
    """Nothing was crawled: every seed failed (connection refused, timeout, HTTP 404...)."""


class FetcherDied(CrawlerError):
    """A fetcher process died (killed, out of memory); the crawl stops at once."""


class ManagerDied(CrawlerError):
    """The process hosting the visited table went away during the crawl."""


class FetchError(CrawlerError):
    """A fetch that produced no usable response.

    Attributes:
        reason: short machine-friendly reason: "timeout", "connection", "ssl",
            "invalid url", "incomplete body", "decoding", "http error".
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class StateError(CrawlerError):
    """The state file cannot be used: not a state store, corrupt, a newer schema,
    unreadable or unwritable (disk full, locked by another writer). The message is one
    line naming the file. After a StateError during a crawl, treat the crawl as crashed:
    resume from the last commit."""


class Aborted(CrawlerError):
    """A cold stop (second Ctrl-C or SIGTERM): raised to the caller as KeyboardInterrupt."""


class RecordWritten(Exception):
    """The visited table failed after the task's record was written; ``done`` is the
    task's result without the links it would have claimed."""

    # done: a crawler.engine.messages.TaskDone, as Any: the engine is a higher layer
    def __init__(self, done: Any) -> None:
        super().__init__(done.url)
        self.done = done
