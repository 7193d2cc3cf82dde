"""Web protocols: URL normalization (RFC 3986, WHATWG URL), scope, robots.txt (RFC 9309),
sitemaps, retry policy, decoding, map-mode probes, trap guards and HTTP fetching (RFC 9110).
Imports nothing of the package but the base: :mod:`crawler.errors`,
:mod:`crawler.vocabulary` and ``crawler.__version__``."""
