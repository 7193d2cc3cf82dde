"""Texts shared by the near-duplicate tests (tests/test_neardup.py measures their
distances, tests/test_neardup_crawl.py crawls pages made of them)."""

#: Flask's installation page as Markdown: 126 words.
PAGE = (
    "# Installation\n\nPython Version\n\nWe recommend using the latest version of Python. "
    "Flask supports Python 3.8 and newer.\n\nDependencies\n\nThese distributions will be installed "
    "automatically when installing Flask.\n\n* Werkzeug implements WSGI, the standard Python "
    "interface between applications and servers.\n* Jinja is a template language that renders "
    "the pages your application serves.\n* MarkupSafe comes with Jinja. It escapes untrusted "
    "input when rendering templates to avoid injection attacks.\n* ItsDangerous securely signs "
    "data to ensure its integrity. This is used to protect Flask's session cookie.\n* Click is a "
    "framework for writing command line applications. It provides the flask command and allows "
    "adding custom management commands.\n\nVirtual environments\n\nUse a virtual environment to "
    "manage the dependencies for your project, both in development and in production."
)
