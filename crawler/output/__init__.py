"""The files of a crawl: record shards and manifest, WARC, mirror, link graph and tree,
sites report, map report. Imports :mod:`crawler.web` and :mod:`crawler.content`, never the engine."""
