"""The crawler's exception tree.

Foreign exceptions (requests, urllib3, OS errors) are translated into these at exactly
one boundary each: :mod:`crawler.web.fetch` for HTTP, :mod:`crawler.api` for the output folder.
The command line turns any :class:`CrawlerError` into a one-line message and exit code 2.
"""


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
