"""Scope: seed sites (host plus non-default port), allowed domains, include/exclude."""

import re

import pytest

from crawler.config import CrawlConfig
from crawler.web.scope import Scope, domain_key, host_of, site_of


@pytest.mark.parametrize(
    "url, host, site",
    [
        ("http://example.org/", "example.org", "example.org"),
        ("https://example.org/a?b=1", "example.org", "example.org"),
        ("http://127.0.0.1:8000/x", "127.0.0.1", "127.0.0.1:8000"),
        ("http://user:pw@Example.ORG:8080/", "example.org", "example.org:8080"),
        ("http://[::1]:5000/", "::1", "[::1]:5000"),
    ],
)
def test_host_of_and_site_of(url, host, site):
    assert host_of(url) == host
    assert site_of(url) == site


def test_host_of_without_host_is_empty():
    assert host_of("/relative/path") == ""


def test_seed_site_includes_non_default_port():
    scope = Scope(["http://127.0.0.1:8000/"])
    assert scope.sites == frozenset({"127.0.0.1:8000"})
    assert "http://127.0.0.1:8000/page" in scope
    assert "https://127.0.0.1:8000/page" in scope  # same host:port, other scheme
    assert "http://127.0.0.1:5000/page" not in scope
    assert "http://127.0.0.1/page" not in scope


def test_http_and_https_on_default_ports_share_a_site():
    scope = Scope(["http://example.org/"])
    assert "https://example.org/secure" in scope
    assert "http://example.org/plain" in scope
    assert "http://example.org:8080/other-port" not in scope


def test_subdomains_are_not_in_scope_by_default():
    scope = Scope(["https://example.org/"])
    assert "https://docs.example.org/" not in scope
    assert "https://www.example.org/" not in scope
    assert "https://example.org.evil.net/" not in scope
    assert "https://other.net/" not in scope


def test_several_seeds_each_add_their_site():
    scope = Scope(["http://a.test/", "http://b.test:81/x"])
    assert scope.sites == frozenset({"a.test", "b.test:81"})
    assert "http://a.test/1" in scope
    assert "http://b.test:81/2" in scope
    assert "http://b.test/2" not in scope


def test_allow_domain_exact_form_matches_host_on_any_port_but_not_subdomains():
    scope = Scope(["http://seed.test/"], allow_domains=["Example.org"])
    assert scope.hosts == frozenset({"example.org"})
    assert "http://example.org/" in scope
    assert "https://example.org:8443/" in scope
    assert "http://docs.example.org/" not in scope
    assert "http://notexample.org/" not in scope


def test_allow_domain_leading_dot_admits_domain_and_subdomains():
    scope = Scope(["http://seed.test/"], allow_domains=[".example.org"])
    assert scope.suffixes == (".example.org",)
    assert "http://example.org/" in scope
    assert "http://docs.example.org/" in scope
    assert "http://a.b.example.org:9000/" in scope
    assert "http://badexample.org/" not in scope
    assert "http://example.org.evil.net/" not in scope


@pytest.mark.parametrize(
    "host, allowed",
    [
        ("example.org", True),
        ("api.example.org", True),
        ("exact.test", True),
        ("sub.exact.test", False),
        ("xexample.org", False),
        ("org", False),
        ("", False),
    ],
)
def test_host_allowed(host, allowed):
    scope = Scope([], allow_domains=["exact.test", ".example.org"])
    assert scope.host_allowed(host) is allowed


def test_include_requires_a_match():
    scope = Scope(["http://example.org/"], include=[r"/docs/", r"\?page=\d+$"])
    assert "http://example.org/docs/intro" in scope
    assert "http://example.org/list?page=2" in scope
    assert "http://example.org/blog/post" not in scope
    assert "http://example.org/list?page=x" not in scope


def test_exclude_rejects_a_match():
    scope = Scope(["http://example.org/"], exclude=[r"\.pdf$", r"/private/"])
    assert "http://example.org/docs/a.html" in scope
    assert "http://example.org/docs/a.pdf" not in scope
    assert "http://example.org/private/x" not in scope


def test_exclude_wins_over_include():
    scope = Scope(["http://example.org/"], include=[r"/docs/"], exclude=[r"/docs/old/"])
    assert "http://example.org/docs/new" in scope
    assert "http://example.org/docs/old/a" not in scope
    assert "http://example.org/blog" not in scope


def test_include_does_not_widen_the_site():
    scope = Scope(["http://example.org/"], include=[r"/docs/"])
    assert "http://other.test/docs/" not in scope


def test_regexes_are_searched_not_matched():
    scope = Scope(["http://example.org/"], include=[r"docs"])
    assert "http://example.org/a/docs/b" in scope


def test_bad_regex_raises_re_error():
    with pytest.raises(re.error):
        Scope(["http://example.org/"], include=["("])


def test_from_config():
    cfg = CrawlConfig(
        seeds=("http://127.0.0.1:8000/",),
        out_dir="/tmp/x",
        workers=1,
        allow_domains=(".example.org", "exact.test"),
        include=(r"/keep",),
        exclude=(r"/keep/no",),
    )
    scope = Scope.from_config(cfg)
    assert scope.sites == frozenset({"127.0.0.1:8000"})
    assert scope.hosts == frozenset({"exact.test"})
    assert scope.suffixes == (".example.org",)
    assert "http://127.0.0.1:8000/keep/yes" in scope
    assert "http://docs.example.org/keep" in scope
    assert "http://127.0.0.1:8000/keep/no" not in scope
    assert "http://127.0.0.1:8000/other" not in scope


def test_site_of_fast_path_agrees_with_urlsplit_on_normalized_urls():
    import random
    import urllib.parse

    from crawler.web.urlnorm import normalize

    rng = random.Random(3)
    parts = [
        "http://",
        "https://",
        "HTTP://",
        "u:p@",
        "Ex.ORG",
        "[::1]",
        ":8080",
        ":80",
        "/",
        "a",
        "?",
        "#",
        "q=1",
        "%41",
        "é",
        "@",
        ":",
    ]
    checked = 0
    for _ in range(20000):
        url = normalize("".join(rng.choice(parts) for _ in range(rng.randint(2, 9))))
        if url is None:
            continue
        checked += 1
        assert site_of(url) == urllib.parse.urlsplit(url).netloc.rpartition("@")[2].lower(), url
    assert checked > 1000


@pytest.mark.parametrize(
    "domain, key",
    [
        ("example.org", "example.org"),
        (".Example.ORG", ".example.org"),
        ("Bücher.de", "xn--bcher-kva.de"),
        (".bücher.de", ".xn--bcher-kva.de"),
        ("[::1]", "::1"),
        ("bad host!", None),
        ("x.org:80", None),
        ("a/b", None),
        ("user@x.org", None),
        ("", None),
        (".", None),
        ("[::1]:8080", None),
        ("..example.org", None),
        ("a..b", None),
    ],
)
def test_allowed_domains_are_compared_as_normalized_hosts(domain, key):
    assert domain_key(domain) == key


def test_an_allowed_unicode_domain_admits_its_punycode_urls():
    scope = Scope(["http://seed.example/"], ["Bücher.de", ".Straße.de"])
    assert "http://xn--bcher-kva.de/x" in scope
    assert "http://shop.xn--strae-oqa.de/y" in scope  # UTS #46, nontransitional: ß stays
    assert "http://shop.strasse.de/y" not in scope
    assert "http://other.de/" not in scope
