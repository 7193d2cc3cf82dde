"""Page to text, pure functions: links and title, main content, Markdown, near duplicates.
Imports :mod:`crawler.web` (URL normalization) and the base, nothing else."""
