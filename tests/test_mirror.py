"""The mirror tree: URL -> file path table, collision planning, Windows validity, and a
crawl with mirror=True (crawler.output.mirror)."""

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.engine import resume
from crawler.output.mirror import MAX_COMPONENT_BYTES, fold, mirror_path, plan
from crawler.web.urlnorm import normalize
from tests.helpers.crawlutil import run_crawl
from tests.helpers.siteserver import Route, SiteServer

H = "http://example.org"

TABLE = [
    ("/", "example.org/index.md"),
    ("/docs/", "example.org/docs/index.md"),
    ("/a/b.html", "example.org/a/b.md"),
    ("/a/B.HTM", "example.org/a/B.md"),
    ("/a/page.xhtml", "example.org/a/page.md"),
    ("/a.php", "example.org/a.php.md"),
    ("/readme", "example.org/readme.md"),
    ("/.html", "example.org/.html.md"),
    ("/search?q=x", "example.org/search-q-a544dd55.md"),
    ("/search?q=y", "example.org/search-q-797cea52.md"),
    ("/s?b=2&a=1", "example.org/s-a-b-126d83b7.md"),
    ("/p?", "example.org/p-2d068005.md"),
    ("/?lang=en", "example.org/index-lang-f783c502.md"),
    ("/con", "example.org/co%6E.md"),
    ("/CON.txt", "example.org/CO%4E.txt.md"),
    ("/CON%20", "example.org/CO%4E .md"),  # Win32 strips the space: "CON .md" is the device
    ("/nul%20.txt", "example.org/nu%6C .txt.md"),
    ("/aux/x.html", "example.org/au%78/x.md"),
    ("/lpt1/com9", "example.org/lpt%31/com%39.md"),
    ("/console", "example.org/console.md"),
    ("/caf%C3%A9/cr%C3%A8me.html", "example.org/café/crème.md"),
    ("/a%20b", "example.org/a b.md"),
    ("/a%3Ab", "example.org/a%253Ab.md"),
    ("/a:b", "example.org/a%3Ab.md"),
    ("/a*b", "example.org/a%2Ab.md"),
    ("/a%2Ab", "example.org/a%252Ab.md"),
    ("/100%25", "example.org/100%2525.md"),
    ("/a%2Fb", "example.org/a%2Fb.md"),
    ("/a%7Cb%22c%3Cd%3E", "example.org/a%7Cb%22c%3Cd%3E.md"),
    ("/x%00y%7F", "example.org/x%00y%7F.md"),
    ("/dir./x", "example.org/dir%2E/x.md"),
    ("/dir%20/x", "example.org/dir%20/x.md"),
    ("//x", "example.org/%5F/x.md"),
    ("/%FF", "example.org/%FF.md"),
]


@pytest.mark.parametrize("path, expected", TABLE)
def test_mirror_path_table(path, expected):
    assert mirror_path(normalize(H + path)) == expected


def test_query_hash_is_xxh3_of_the_sorted_query():
    import xxhash

    assert xxhash.xxh3_64_hexdigest(b"a=1&b=2")[:8] == "126d83b7"  # the /s?b=2&a=1 row
    assert xxhash.xxh3_64_hexdigest(b"")[:8] == "2d068005"  # the /p? row


def test_host_port_and_scheme():
    assert mirror_path("http://127.0.0.1:8080/x") == "127.0.0.1_8080/x.md"
    assert mirror_path("https://example.org/x") == "example.org/x.md"
    assert mirror_path(normalize("http://bücher.de/")) == "xn--bcher-kva.de/index.md"
    assert mirror_path("http://[::1]:8080/") == "%5B%3A%3A1%5D_8080/index.md"


def test_long_components_are_cut_with_a_hash():
    assert mirror_path(H + "/" + "x" * 300) == "example.org/" + "x" * 188 + "-73e096f0.md"  # 200 bytes
    folder = mirror_path(normalize(H + "/" + "é" * 150 + "/a"))
    assert folder == "example.org/" + "é" * 95 + "-4286ae9c/a.md"  # 199 bytes
    escaped = mirror_path(H + "/" + "%00" * 100)  # cut between escapes, never inside one
    assert re.fullmatch(r"example\.org/(%00)+-25b5f73c\.md", escaped)
    assert len(escaped.split("/")[1].encode()) <= MAX_COMPONENT_BYTES


def test_plan_resolves_collisions_in_url_order():
    urls = [
        H + "/",
        H + "/index.html",
        H + "/a",
        H + "/a.html",
        "https://example.org/a",
        H + "/Readme",
        H + "/README",
        H + "/b.md/",
        H + "/b",
    ]
    assert plan(urls) == {
        H + "/": "example.org/index.md",
        H + "/index.html": "example.org/index-012949ba.md",  # "/" sorts first
        H + "/README": "example.org/README.md",
        H + "/Readme": "example.org/Readme-3ba24a3a.md",  # one file on macOS and Windows
        H + "/a": "example.org/a.md",
        H + "/a.html": "example.org/a-34812310.md",
        "https://example.org/a": "example.org/a-00509271.md",
        H + "/b": "example.org/b-1f4a810f.md",  # b.md is the folder of /b.md/
        H + "/b.md/": "example.org/b.md/index.md",
    }


_RESERVED = re.compile(r"(CON|PRN|AUX|NUL|COM[0-9¹²³]|LPT[0-9¹²³])([ .].*)?", re.I | re.S)


def windows_valid(path: str) -> bool:
    """Microsoft, "Naming Files, Paths, and Namespaces": each component non-empty, no
    <>:"/\\|?* or code points 0-31, no trailing dot or space, no reserved device name
    (alone or with an extension), at most 255 UTF-16 code units."""
    for name in path.split("/"):
        if not name or any(c in '<>:"\\|?*' or ord(c) < 32 for c in name):
            return False
        if name[-1] in ". " or _RESERVED.fullmatch(name):
            return False
        if len(name.encode("utf-16-le")) // 2 > 255 or len(name.encode()) > MAX_COMPONENT_BYTES:
            return False
    return True


def test_the_windows_checker_rejects_what_it_should():
    for bad in ("a/CON.md", "a/nul", "a/x:y.md", "a/x.", "a/x ", "a//b.md", "a/x|y", "a/\x01", "a/LPT¹.md"):
        assert not windows_valid(bad), bad
    assert windows_valid("a/CONSOLE.md") and windows_valid("a/co%6E.md")


segment_chars = st.sampled_from(
    list("aAbB.-_~!$&'()*+,;=:@ %é\u00c9\u0301Ωcon")
    + ["%25", "%3A", "%2F", "%00", "%C3%A9", "%20", "/", "?", "html", "CON", "lpt1", "."]
)
paths = st.lists(segment_chars, max_size=12).map("".join)
urls = st.builds(
    lambda host, path, query: normalize(f"http://{host}/{path}" + (f"?{query}" if query is not None else "")),
    st.sampled_from(["example.org", "example.org:8080", "b.example"]),
    paths,
    st.none() | st.lists(st.sampled_from(["q=x", "q=y", "a", "A=1", "b="]), max_size=3).map("&".join),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(urls, max_size=25))
def test_plan_is_injective_on_every_file_system_and_names_are_valid(batch):
    batch = [u for u in batch if u is not None]
    files = plan(batch)
    assert set(files) == set(batch)
    folded = [fold(path) for path in files.values()]
    assert len(set(folded)) == len(folded)  # no two files on a case-insensitive system
    folders = {fold(p[:i]) for p in files.values() for i, c in enumerate(p) if c == "/"}
    assert not folders & set(folded)  # no file is another's folder
    assert all(windows_valid(path) and path.endswith(".md") for path in files.values())
    assert plan(list(reversed(batch))) == files  # deterministic


@settings(max_examples=300, deadline=None)
@given(st.lists(paths, min_size=2, max_size=2, unique=True))
def test_distinct_paths_give_distinct_names_before_planning(pair):
    """Percent-encoding is handled injectively: two different normalized paths give two
    different mirror paths (NFC/case aside; the planner handles those)."""
    a, b = (normalize(H + "/" + p) for p in pair)
    known = (".html", ".htm", "/index")  # "/x.html" and "/x", "/" and "/index": the planner's job
    if a != b and not a.endswith(known) and not b.endswith(known):
        assert mirror_path(a) != mirror_path(b)


def test_a_crawl_writes_the_mirror_and_restart_removes_only_it(tmp_path):
    with SiteServer() as server:
        server.routes.update(
            {
                "/": Route(
                    '<title>Home</title><h1>Home</h1><a href="/docs/">docs</a> <a href="/search?q=x">x</a>'
                    ' <a href="/search?q=y">y</a> <a href="/CON">con</a> <a href="/bin">bin</a>'
                    ' <a href="/gone">gone</a> <a href="/caf%C3%A9.html">cafe</a>'
                ),
                "/docs/": Route('<h1>Docs</h1><a href="/docs/a.html">a</a> <a href="/copy">copy</a>'),
                "/docs/a.html": Route("<p>Same text.</p>"),
                "/copy": Route("<p>Same text.</p>"),
                "/search?q=x": Route("<p>Results for x</p>"),
                "/search?q=y": Route("<p>Results for y</p>"),
                "/CON": Route("<p>Device</p>"),
                "/caf%C3%A9.html": Route("<p>Crème</p>"),
                "/bin": Route(b"\x00\x01", content_type="application/octet-stream"),
                "/gone": Route("no", status=404),
            }
        )
        summary, records = run_crawl(tmp_path, server.url("/"), mirror=True)
    out = tmp_path / "out"
    host = server.url("/").split("/")[2].replace(":", "_")
    site = out / "site"
    mask = os.umask(0o022)
    os.umask(mask)
    modes = {p.stat().st_mode & 0o777 for p in site.rglob("*") if p.is_file()}
    assert modes == {0o666 & ~mask}  # readable as the umask says (mkstemp alone gives 0600)
    files = {str(p.relative_to(site)): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    first, copy = sorted(
        (server.url("/docs/a.html"), server.url("/copy")), key=lambda u: records[u]["duplicate_of"] is not None
    )
    first_file = f"{host}/docs/a.md" if first.endswith("a.html") else f"{host}/copy.md"
    home = records[server.url("/")]["markdown"].encode()
    assert files == {
        f"{host}/index.md": home,
        f"{host}/docs/index.md": records[server.url("/docs/")]["markdown"].encode(),
        first_file: b"Same text.",
        f"{host}/search-q-a544dd55.md": b"Results for x",
        f"{host}/search-q-797cea52.md": b"Results for y",
        f"{host}/CO%4E.md": b"Device",
        f"{host}/café.md": "Crème".encode(),
        "index.tsv": "".join(
            f"{u}\t{f}\n"
            for u, f in sorted(
                {
                    "url": "file",
                    server.url("/"): f"{host}/index.md",
                    server.url("/docs/"): f"{host}/docs/index.md",
                    first: first_file,
                    copy: first_file,  # an exact duplicate: its first copy's file
                    server.url("/search?q=x"): f"{host}/search-q-a544dd55.md",
                    server.url("/search?q=y"): f"{host}/search-q-797cea52.md",
                    server.url("/CON"): f"{host}/CO%4E.md",
                    server.url("/caf%C3%A9.html"): f"{host}/café.md",
                }.items(),
                key=lambda row: (row[0] != "url", row[0]),
            )
        ).encode(),
    }
    assert summary["mirror_files"] == 7
    (site / "mine.txt").write_text("a user's file")
    resume.remove_outputs(str(out))
    kept = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert kept == [".lock", "site", "site/mine.txt"]  # the lock stays: a --restart removes while holding it
