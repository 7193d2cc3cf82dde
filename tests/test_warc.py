"""WARC output (``--warc``): every HTTP exchange a fetcher makes comes back from the files
through warcio's own reader, digests checked, with the bytes the server sent."""

from __future__ import annotations

import glob
import gzip
import io
import os
import signal

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from crawler.cli import build_parser, config_from_args
from crawler.engine.resume import remove_outputs
from crawler.output.warc import OPEN_SUFFIX, WarcWriter, repair, seal_open_files, warc_files, warc_path
from crawler.web.fetch import FetchError, HttpClient
from tests.helpers.crawlutil import read_records, run_crawl
from tests.helpers.generatedsite import DEADLINE_S, PAGES, GeneratedSite, start
from tests.helpers.rawserver import RawServer
from tests.helpers.siteserver import Route, SiteServer, redirect

UA = "warc-test/1.0"
HTML = "<html><head><title>{0}</title></head><body><h1>{0}</h1>{1}</body></html>"
GZIPPED = HTML.format("Zipped", "<p>squeezed</p>").encode("utf-8")
BIG = b"<p>" + b"b" * 300_000 + b"</p>"  # more than one 64 KiB read: cut at --max-bytes


def read_warc(path: str) -> list:
    """Every record of ``path`` as (WARC headers, HTTP headers or None, raw payload,
    decoded payload), digests checked by warcio (a mismatch raises)."""
    records = []
    with open(path, "rb") as f:
        for record in ArchiveIterator(f, check_digests="raise"):
            raw = record.raw_stream.read()
            records.append((record.rec_headers, record.http_headers, raw, None))
    with open(path, "rb") as f:  # again, decoded as a replay tool reads it
        for i, record in enumerate(ArchiveIterator(f)):
            records[i] = records[i][:3] + (record.content_stream().read(),)
    return records


def site_routes() -> dict[str, Route]:
    links = "".join(f'<a href="{p}">{p}</a>' for p in ("/old", "/missing", "/gz", "/file.bin", "/big", "/secret"))
    return {
        "/robots.txt": Route("User-agent: *\nDisallow: /secret\n", content_type="text/plain"),
        "/": Route(HTML.format("Home", links)),
        "/old": redirect("/new", 301),
        "/new": Route(HTML.format("New", "")),
        "/gz": Route(gzip.compress(GZIPPED, mtime=0), headers={"Content-Encoding": "gzip"}),
        # under --max-bytes (1000): a body past it is whole in the WARC only when one read
        # happened to get all of it, so only /big is over the cap
        "/file.bin": Route(bytes(range(256)) * 3, content_type="application/octet-stream"),
        "/big": Route(BIG),
        "/secret": Route(HTML.format("Secret", "")),
    }


def test_a_crawl_archives_every_exchange_with_the_bytes_the_server_sent(tmp_path):
    routes = site_routes()
    with SiteServer(routes) as site:
        summary, records = run_crawl(tmp_path, site.url("/"), warc=True, user_agent=UA, max_body_bytes=1000)
        hits = dict(site.hits)
    out = tmp_path / "out"
    assert hits == {"/robots.txt": 1, "/": 1, "/old": 1, "/new": 1, "/missing": 1, "/gz": 1, "/file.bin": 1, "/big": 1}
    assert not glob.glob(str(out / ("*" + OPEN_SUFFIX)))
    files = warc_files(str(out))
    assert len(files) == 2  # one per fetcher process
    responses, requests = {}, {}
    for path in files:
        records_in_file = read_warc(path)
        warcinfo = records_in_file[0][0]
        assert warcinfo.get_header("WARC-Type") == "warcinfo"
        assert warcinfo.get_header("WARC-Filename") == os.path.basename(path)
        info = records_in_file[0][3].decode("utf-8")
        assert f"http-header-user-agent: {UA}\r\n" in info and "robots: classic\r\n" in info
        assert "format: WARC File Format 1.1\r\n" in info
        for warc_headers, http_headers, raw, decoded in records_in_file:
            assert warc_headers.protocol == "WARC/1.1"
            kind = warc_headers.get_header("WARC-Type")
            if kind == "warcinfo":
                continue
            assert warc_headers.get_header("WARC-Warcinfo-ID") == warcinfo.get_header("WARC-Record-ID")
            assert warc_headers.get_header("WARC-IP-Address") == "127.0.0.1"
            uri = warc_headers.get_header("WARC-Target-URI")
            target = requests if kind == "request" else responses
            assert kind in ("request", "response") and uri not in target
            target[uri] = (warc_headers, http_headers, raw, decoded)
    paths = {site.url(p): p for p in hits}
    assert set(responses) == set(requests) == set(paths)
    # one response per page record, plus robots.txt
    assert {r["request_url"] for r in records.values()} | {site.url("/robots.txt")} == set(responses)
    status = {paths[u]: (h.get_statuscode(), h.statusline, h.protocol) for u, (_, h, _, _) in responses.items()}
    assert status == {
        "/robots.txt": ("200", "200 OK", "HTTP/1.1"),
        "/": ("200", "200 OK", "HTTP/1.1"),
        "/old": ("301", "301 Moved Permanently", "HTTP/1.1"),
        "/new": ("200", "200 OK", "HTTP/1.1"),
        "/missing": ("404", "404 Not Found", "HTTP/1.1"),
        "/gz": ("200", "200 OK", "HTTP/1.1"),
        "/file.bin": ("200", "200 OK", "HTTP/1.1"),
        "/big": ("200", "200 OK", "HTTP/1.1"),
    }
    for url, (warc_headers, http_headers, raw, decoded) in responses.items():
        path = paths[url]
        route = routes.get(path) or Route("<h1>not found</h1>", 404)
        names = [name for name, _ in http_headers.headers]
        assert names == ["Server", "Date", *route.headers, "Content-Length"], path  # as sent
        for name, value in route.headers.items():
            assert http_headers.get_header(name) == value, (path, name)
        assert http_headers.get_header("Content-Length") == str(len(route.body))
        if path == "/big":  # cut at --max-bytes: the bytes read, a prefix of the body
            assert warc_headers.get_header("WARC-Truncated") == "length"
            assert 1000 <= len(raw) < len(BIG) and raw == BIG[: len(raw)]
            assert records[url]["truncated"] is True and records[url]["bytes"] == 1000
        else:
            assert warc_headers.get_header("WARC-Truncated") is None, path
            assert raw == route.body, path  # exactly the bytes the server sent
        if path == "/gz":
            assert raw[:2] == b"\x1f\x8b" and decoded == GZIPPED
        # the request: the head we wrote, linked to its response
        request_headers, request_http, request_raw, _ = requests[url]
        assert request_headers.get_header("WARC-Concurrent-To") == warc_headers.get_header("WARC-Record-ID")
        assert request_headers.get_header("WARC-Date") == warc_headers.get_header("WARC-Date")
        assert request_http.protocol == "GET" and request_http.statusline == f"{path} HTTP/1.1"
        assert request_http.get_header("User-Agent") == UA
        assert request_http.get_header("Host") == f"127.0.0.1:{site.port}"
        assert request_raw == b""
    assert summary["reconciled"] and summary["pages"] == 4  # /, /new, /gz (and /big, cut)


def test_without_warc_no_file_is_written(tmp_path):
    with SiteServer({"/": Route("<p>home</p>")}) as site:
        run_crawl(tmp_path, site.url("/"), workers=1, threads=1)
    assert warc_files(str(tmp_path / "out")) == []
    assert sorted(os.listdir(tmp_path / "out")) == [
        ".lock",
        "README.md",
        "edges-00.tsv",
        "edges.tsv",
        "manifest.json",
        "pages-00-00000.jsonl",
        "sites.tsv",
        "skipped.tsv",
        "state.sqlite",
        "summary.json",
        "tree.txt",
    ]


def recorded(handler, **settings):
    """GET ``/x`` from a RawServer running ``handler`` with a recording client; returns
    (the Response or the FetchError, the records of the WARC file written)."""
    exchanges = []
    settings.setdefault("total_timeout_s", 10)
    client = HttpClient(UA, 5, 5, on_exchange=exchanges.append, **settings)
    with RawServer(handler) as raw:
        try:
            outcome = client.get(raw.url("/x"))
        except FetchError as exc:
            outcome = exc
        client.close()
        raw.stop.set()
    return outcome, exchanges


def write_and_read(tmp_path, exchanges) -> list:
    writer = WarcWriter(warc_path(str(tmp_path), 0), UA, obey_robots=False)
    for exchange in exchanges:
        writer.write_exchange(exchange)
    writer.close()
    (path,) = warc_files(str(tmp_path))
    return read_warc(path)


CHUNKED_BODY = b"0\r\n\r\nnot the end"  # what a de-chunking reader would take for the last chunk


def _chunked_with_repeated_headers(conn, server):
    server.read_head(conn)
    conn.sendall(
        b"HTTP/1.1 200 Fine Thanks\r\nSet-Cookie: a=1\r\nX-Z:  z\r\nSet-Cookie: b=2\r\n"
        b"Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\n0\r\n\r\n\r\n" + b"%x\r\n%s\r\n" % (len(CHUNKED_BODY) - 5, CHUNKED_BODY[5:]) + b"0\r\n\r\n"
    )


def test_headers_in_order_with_repeats_reason_phrase_and_chunking_removed(tmp_path):
    response, exchanges = recorded(_chunked_with_repeated_headers)
    assert response.body == CHUNKED_BODY
    (_, (warc_headers, http_headers, raw, decoded), _) = write_and_read(tmp_path, exchanges)[:3]
    assert http_headers.protocol == "HTTP/1.1" and http_headers.statusline == "200 Fine Thanks"
    assert http_headers.headers == [
        ("Set-Cookie", "a=1"),
        ("X-Z", "z"),
        ("Set-Cookie", "b=2"),
        ("Content-Type", "text/plain"),
        ("X-Crawler-Transfer-Encoding", "chunked"),
    ]
    assert raw == decoded == CHUNKED_BODY
    assert warc_headers.get_header("WARC-Truncated") is None


def _http10_gzip_until_close(conn, server):
    server.read_head(conn)
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(GZIPPED, mtime=0))


def test_http_1_0_body_until_close_content_encoding_kept(tmp_path):
    response, exchanges = recorded(_http10_gzip_until_close)
    assert response.body == GZIPPED
    info, (_, http_headers, raw, decoded), _ = write_and_read(tmp_path, exchanges)
    assert http_headers.protocol == "HTTP/1.0"
    assert raw == gzip.compress(GZIPPED, mtime=0) and decoded == GZIPPED
    assert "robots: ignore\r\n" in info[3].decode()


def _no_answer(conn, server):
    server.read_head(conn)  # then close without a status line


def test_no_response_leaves_the_request_record_alone(tmp_path):
    error, exchanges = recorded(_no_answer)
    assert isinstance(error, FetchError)
    info, (warc_headers, http_headers, raw, _) = write_and_read(tmp_path, exchanges)
    assert warc_headers.get_header("WARC-Type") == "request"
    assert warc_headers.get_header("WARC-Concurrent-To") is None
    assert http_headers.statusline == "/x HTTP/1.1"


def test_connection_refused_writes_nothing(tmp_path):
    with RawServer(_no_answer) as raw:
        url = raw.url("/x")
    exchanges = []
    with pytest.raises(FetchError) as info:
        HttpClient(on_exchange=exchanges.append, connect_timeout_s=5).get(url)
    assert info.value.reason == "connection" and exchanges == []


def _trickle(conn, server):
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nfirst")
    while not server.stop.wait(0.1):
        conn.sendall(b"x")


def _close_mid_body(conn, server):
    server.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nfirst")


@pytest.mark.parametrize("handler, cut", [(_trickle, "time"), (_close_mid_body, "disconnect")])
def test_a_body_cut_by_the_time_limit_or_the_connection_is_marked(tmp_path, handler, cut):
    error, exchanges = recorded(handler, total_timeout_s=0.5)
    assert isinstance(error, FetchError)
    info, (warc_headers, http_headers, raw, _), request = write_and_read(tmp_path, exchanges)
    assert warc_headers.get_header("WARC-Truncated") == cut
    assert http_headers.get_header("Content-Length") == "1000"
    assert raw.startswith(b"first") and raw == b"first" + b"x" * (len(raw) - 5)
    assert request[0].get_header("WARC-Concurrent-To") == warc_headers.get_header("WARC-Record-ID")


@pytest.mark.parametrize(
    "headers, stored, cut",
    [
        ({}, b"moved", None),
        ({"Content-Encoding": "gzip"}, b"", "unspecified"),  # requests decoded it: the bytes sent are lost
    ],
)
def test_a_redirect_body_is_kept_unless_content_encoded(tmp_path, headers, stored, cut):
    body = gzip.compress(b"moved") if headers else b"moved"
    routes = {"/x": Route(body, 302, {"Location": "/y", **headers}, content_type="text/html")}
    exchanges = []
    with SiteServer(routes) as site:
        assert HttpClient(on_exchange=exchanges.append).get(site.url("/x")).location == "/y"
    _, (warc_headers, http_headers, raw, _), _ = write_and_read(tmp_path, exchanges)
    assert (http_headers.get_statuscode(), raw) == ("302", stored)
    assert warc_headers.get_header("WARC-Truncated") == cut


# --- repair ---------------------------------------------------------------------------


def _three_exchanges(tmp_path):
    routes = {f"/{i}": Route(f"<p>page {i}</p>" * (i + 1)) for i in range(3)}
    exchanges = []
    with SiteServer(routes) as site:
        client = HttpClient(on_exchange=exchanges.append)
        for i in range(3):
            client.get(site.url(f"/{i}"))
    writer = WarcWriter(warc_path(str(tmp_path), 7), UA)
    for exchange in exchanges:
        writer.write_exchange(exchange)
    writer.close()
    (path,) = warc_files(str(tmp_path))
    return path


def _member_ends(data: bytes) -> list[int]:
    """Where each record (gzip member) of ``data`` ends, as warcio's reader finds them."""
    iterator = ArchiveIterator(io.BytesIO(data))
    return [iterator.get_record_offset() + iterator.get_record_length() for _ in iterator]


@pytest.mark.parametrize("damage", ["none", "last byte", "half the last member", "header of a new member", "garbage"])
def test_repair_cuts_a_partial_last_record_and_keeps_every_complete_one(tmp_path, damage):
    path = _three_exchanges(tmp_path)
    whole = open(path, "rb").read()
    ends = _member_ends(whole)
    assert len(ends) == 7 and ends[-1] == len(whole)  # warcinfo + 3 pairs
    start = ends[-2]
    content, kept = {
        "none": (whole, 7),
        "last byte": (whole[:-1], 6),
        "half the last member": (whole[: (start + len(whole)) // 2], 6),
        "header of a new member": (whole + whole[:10], 7),
        "garbage": (whole + b"\x1f\x8b\x08\x00garbage", 7),
    }[damage]
    with open(path, "wb") as f:
        f.write(content)
    expected_size = ends[kept - 1]
    assert repair(path) == len(content) - expected_size
    assert os.path.getsize(path) == expected_size
    assert len(read_warc(path)) == kept  # reads cleanly, digests checked
    assert repair(path) == 0


def test_seal_open_files_repairs_and_renames(tmp_path):
    path = _three_exchanges(tmp_path)
    whole = open(path, "rb").read()
    os.remove(path)
    with open(path + OPEN_SUFFIX, "wb") as f:
        f.write(whole[:-3])
    assert warc_files(str(tmp_path)) == []
    assert seal_open_files(str(tmp_path)) == (1, len(whole) - 3 - _member_ends(whole)[-2])
    assert warc_files(str(tmp_path)) == [path] and len(read_warc(path)) == 6


def test_a_changed_payload_fails_the_digest_check(tmp_path):
    path = _three_exchanges(tmp_path)
    plain = gzip.decompress(open(path, "rb").read())  # every member, as one uncompressed WARC
    assert plain.count(b"<p>page 0</p>") == 1
    with open(path, "wb") as f:
        f.write(plain.replace(b"<p>page 0</p>", b"<p>PAGE 0</p>"))
    with pytest.raises(ArchiveLoadFailed, match="digest"):
        read_warc(path)


def test_restart_removes_the_warc_files(tmp_path):
    for name in (
        "warc-00-20250101T000000000000Z-1.warc.gz",
        "warc-01-20250101T000000000000Z-2.warc.gz.open",
        "mine.warc.gz",
    ):
        (tmp_path / name).write_bytes(b"x")
    remove_outputs(str(tmp_path))
    assert os.listdir(tmp_path) == ["mine.warc.gz"]


def test_the_warc_flag():
    args = build_parser().parse_args(["http://127.0.0.1:1/", "--warc"])
    assert config_from_args(args).warc is True
    assert config_from_args(build_parser().parse_args(["http://127.0.0.1:1/"])).warc is False


# --- a crash, then a resume -------------------------------------------------------------


def test_sigkill_then_resume_leaves_clean_warc_files_with_every_page(tmp_path):
    out = tmp_path / "out"
    with GeneratedSite(wanted=40) as site:
        first = start(site, out, "--quiet", "--warc")
        assert site.reached.wait(DEADLINE_S)
        os.killpg(first.pid, signal.SIGKILL)  # every process: the WARC files stay .open
        first.communicate(timeout=DEADLINE_S)
        left_open = glob.glob(str(out / ("*" + OPEN_SUFFIX)))
        assert left_open and warc_files(str(out)) == []
        second = start(site, out, "--quiet", "--warc")
        _, err = second.communicate(timeout=DEADLINE_S)
        hits = dict(site.hits)
    assert second.returncode == 0, err
    assert not glob.glob(str(out / ("*" + OPEN_SUFFIX)))
    files = warc_files(str(out))
    assert {p[: -len(OPEN_SUFFIX)] for p in left_open} <= set(files)
    responses: dict[str, int] = {}
    for path in files:
        records = read_warc(path)  # every file reads cleanly, digests checked
        assert records[0][0].get_header("WARC-Type") == "warcinfo"
        for warc_headers, http_headers, _, _ in records[1:]:
            if warc_headers.get_header("WARC-Type") == "response":
                uri = warc_headers.get_header("WARC-Target-URI")
                responses[uri] = responses.get(uri, 0) + 1
                robots = uri == site.url("/robots.txt")  # the site has none
                assert http_headers.get_statuscode() == ("404" if robots else "200"), uri
    records = read_records(str(out))
    assert len(records) == PAGES
    assert {r["request_url"] for r in records.values()} <= set(responses)
    # no more responses archived than requests served (a kill may lose a last record)
    for uri, count in responses.items():
        assert count <= hits[uri[len(site.url("")) :]], uri


def _non_ascii_head(conn, server):
    server.read_head(conn)
    conn.sendall(
        "HTTP/1.1 200 Très bien\r\nX-Name: café\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok".encode()
    )


def test_non_ascii_bytes_in_the_status_line_and_headers_are_stored_percent_encoded(tmp_path):
    # found by a reviewer: warcio raised UnicodeEncodeError on the reason phrase, which
    # failed the page (and, on robots.txt, the crawl); a value was stored double-encoded
    response, exchanges = recorded(_non_ascii_head)
    assert response.status == 200 and response.body == b"ok"
    (_, (_, http_headers, raw, _), _) = write_and_read(tmp_path, exchanges)[:3]
    assert http_headers.statusline == "200 Tr%C3%A8s bien"
    assert ("X-Name", "caf%C3%A9") in http_headers.headers and raw == b"ok"


def test_a_warc_writer_that_fails_loses_its_record_not_the_fetch():
    def broken(exchange):
        raise OSError("No space left on device")

    client = HttpClient(UA, 5, 5, on_exchange=broken)
    with RawServer(_non_ascii_head) as raw:
        try:
            response = client.get(raw.url("/x"))
        finally:
            client.close()
            raw.stop.set()
    assert (response.status, response.body) == (200, b"ok")
