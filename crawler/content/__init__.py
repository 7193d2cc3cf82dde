"""Page to text, pure functions: links and title, main content, Markdown, near duplicates.
Imports nothing of the package but :mod:`crawler.errors` and :mod:`crawler.version`."""
