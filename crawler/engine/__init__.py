"""The processes of a crawl and their state: dispatcher and its parts (pool, scheduler,
discovery), fetcher worker, frontier, visited table, state store, messages, politeness,
signals, resume, progress. Imports every layer below it and :mod:`crawler.config`."""
