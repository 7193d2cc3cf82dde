"""crawler: turn a website into one clean Markdown record per page, a link graph and a site tree.

The public API is :func:`crawler.api.crawl` with a :class:`crawler.config.CrawlConfig`;
``python -m crawler URL`` is the command line.
"""

__version__ = "0.1.0"
