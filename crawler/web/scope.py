"""Scope: which normalized URLs the crawl may fetch. Pure; built once per process.

A URL is in scope when its site is a seed's site or its host an allowed domain, it
matches one of the ``include`` regexes (if any are given) and none of the ``exclude``
regexes. A seed's site is its host plus any non-default port (``example.org`` covers
http and https on the default ports; ``127.0.0.1:8000`` is not ``127.0.0.1:5000``).
An allowed domain matches the host on any port; subdomains are other hosts unless
allowed with a leading dot (``.example.org`` admits ``docs.example.org`` and
``example.org``). Out-of-scope links
stay in the link graph as external edges and are never fetched.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Protocol


def host_of(url: str) -> str:
    """Return the lowercase host of an absolute URL, without port or userinfo ('' if none)."""
    return (urllib.parse.urlsplit(url).hostname or "").lower()


def domain_key(domain: str) -> str | None:
    """An ``--allow-domain`` value as the scope compares it with hosts: lowercase, IDNA
    A-labels (UTS #46, as in normalized URLs), a leading ``.`` kept; ``None`` when it is
    not a host name (RFC 3986 §3.2.2 ``host``: no port, path, userinfo or spaces; an IPv6
    literal in brackets is a host, kept without them as :func:`host_of` gives it)."""
    from crawler.web.urlnorm import request_url

    name = domain[1:] if domain.startswith(".") else domain
    if not name or any(c in name for c in "/?#@ \t") or ".." in name or name.startswith("."):
        return None
    if ":" in name and not (name.startswith("[") and name.endswith("]")):  # a port
        return None
    url = request_url(f"http://{name}/")
    host = host_of(url) if url is not None else ""
    if not host:
        return None
    return ("." if domain.startswith(".") else "") + host


def site_of(url: str) -> str:
    """Return ``host`` or ``host:port`` of a normalized URL (userinfo dropped).

    Normalized URLs carry no default port, so http and https of one host on their
    default ports share a site.
    """
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("http", "https"):  # normalized: no need to parse it all
        netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        return netloc.rpartition("@")[2].lower()
    netloc = urllib.parse.urlsplit(url).netloc
    return netloc.rpartition("@")[2].lower()


class _ScopeSettings(Protocol):
    """What :meth:`Scope.from_config` reads of a :class:`crawler.config.CrawlConfig`
    (not imported: the config is a higher layer, see tests/test_layers.py)."""

    @property
    def seeds(self) -> tuple[str, ...]: ...
    @property
    def allow_domains(self) -> tuple[str, ...]: ...
    @property
    def include(self) -> tuple[str, ...]: ...
    @property
    def exclude(self) -> tuple[str, ...]: ...


class Scope:
    """Scope test for normalized absolute URLs.

    Args:
        seeds: the crawl's seed URLs; their hosts are in scope.
        allow_domains: extra hosts; a leading ``.`` admits the domain and its subdomains.
        include, exclude: regex sources matched with ``re.search`` against the whole URL.

    Raises:
        re.error: a regex does not compile (the config validates them first).
    """

    def __init__(
        self,
        seeds: Iterable[str],
        allow_domains: Iterable[str] = (),
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
    ) -> None:
        self.sites = frozenset(site_of(s) for s in seeds)
        keys = [k for k in map(domain_key, allow_domains) if k is not None]
        self.hosts = frozenset(k for k in keys if not k.startswith("."))
        self.suffixes = tuple(k for k in keys if k.startswith("."))
        self.include = tuple(re.compile(p) for p in include)
        self.exclude = tuple(re.compile(p) for p in exclude)

    @classmethod
    def from_config(cls, config: _ScopeSettings) -> Scope:
        """Build the scope of a :class:`crawler.config.CrawlConfig`."""
        return cls(config.seeds, config.allow_domains, config.include, config.exclude)

    def host_allowed(self, host: str) -> bool:
        """True if ``host`` (lowercase, no port) is an allowed domain."""
        if host in self.hosts:
            return True
        return any(host.endswith(s) or host == s[1:] for s in self.suffixes)

    def __contains__(self, url: str) -> bool:
        """True if the normalized absolute ``url`` may be fetched."""
        if site_of(url) not in self.sites and not self.host_allowed(host_of(url)):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)
