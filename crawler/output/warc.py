"""WARC output (``--warc``): every HTTP exchange of a fetcher process as WARC/1.1 records.

Each fetcher process writes its own file, ``warc-NN-<UTC time>-<pid>.warc.gz``, a new one
per run (never appended to), with warcio (``WARCWriter(gzip=True)``: one gzip member per
record, the usual ``.warc.gz`` form that indexers can seek into). While a file is being
written it is named ``....warc.gz.open`` (Heritrix's convention); it gets its final name
when the fetcher closes it. A file still ``.open`` afterwards belonged to a process that
died: :func:`seal_open_files` cuts a partial last record off it (:func:`repair`) and
renames it, on resume and at the end of every crawl.

Records (WARC 1.1, ISO 28500:2017; https://iipc.github.io/warc-specifications/):

- one ``warcinfo`` record first in each file (software, format, hostname, robots
  policy, the crawl's User-Agent); every other record names it in ``WARC-Warcinfo-ID``;
- per GET whose request was written: a ``response`` record (the status line with the
  server's HTTP version and reason phrase, the header fields as received, the body as
  received: content-encoding kept, chunking removed) and a ``request`` record (the
  request head as written to the socket) with ``WARC-Concurrent-To`` naming the
  response. ``WARC-Target-URI`` is the URL requested, ``WARC-Date`` when the request was
  sent, ``WARC-IP-Address`` the server's address. A body cut short carries
  ``WARC-Truncated`` (``length``: ``--max-bytes``; ``time``: ``--total-timeout``;
  ``disconnect``: the connection failed mid-body; ``unspecified``: a redirect's body
  with a ``Content-Encoding``, which requests has already decoded, stored empty, or a
  body that failed to decode); non-ASCII bytes of the status line and header fields are
  stored ``%XX`` (warcio writes ASCII headers);
- a recrawl's conditional request answered 304 is a ``revisit`` record of profile
  ``server-not-modified``, and a 200 whose body (without a content-coding) has the
  earlier capture's payload digest one of profile ``identical-payload-digest`` (its
  body not stored again); both name the earlier capture in
  ``WARC-Refers-To-Target-URI`` and ``WARC-Refers-To-Date``;
- a GET that got no response at all (a timeout or reset before the status line) leaves
  its ``request`` record alone, without ``WARC-Concurrent-To``; one that failed before
  its request was written (connection refused, DNS) leaves nothing.

The chunked transfer-coding is removed (as http.client reads the body), so the
``Transfer-Encoding`` header field is renamed ``X-Crawler-Transfer-Encoding``, as
Common Crawl does: a reader (warcio, pywb) would otherwise try to de-chunk the body.
Block and payload digests (``sha1:`` base 32) are computed by warcio over the bytes
stored.
"""

from __future__ import annotations

import base64
import datetime
import glob
import hashlib
import importlib.metadata
import io
import os
import socket
import threading
import zlib
from typing import TYPE_CHECKING, Protocol

from crawler import __version__
from crawler.web.fetch import DEFAULT_USER_AGENT, Exchange

if TYPE_CHECKING:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

#: The WARC version written (warcio writes WARC/1.0 unless told otherwise).
WARC_VERSION = "1.1"
#: ``WARC-Profile`` of a revisit record for a 304 Not Modified (WARC 1.1 §6.7.3).
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
#: Suffix of a file still being written (renamed without it when closed).
OPEN_SUFFIX = ".open"
#: Glob of the finished WARC files of a crawl in its output folder.
WARC_GLOB = "warc-*.warc.gz"
#: Renamed ``Transfer-Encoding`` field: the body is stored de-chunked (Common Crawl's name).
RENAMED_TRANSFER_ENCODING = "X-Crawler-Transfer-Encoding"
_WARCIO_VERSION = importlib.metadata.version("warcio")
#: Decompressed bytes inflated per step while checking a file in :func:`repair`.
_INFLATE_STEP_BYTES = 1 << 20


def warc_path(out_dir: str, worker_id: int, now: datetime.datetime | None = None) -> str:
    """Final path of the WARC file fetcher ``worker_id`` starts now: ``warc-NN-<UTC
    time to the microsecond>-<pid>.warc.gz`` (unique per process and run)."""
    now = now or datetime.datetime.now(datetime.UTC)
    return os.path.join(out_dir, f"warc-{worker_id:02d}-{now:%Y%m%dT%H%M%S%fZ}-{os.getpid()}.warc.gz")


def warc_files(out_dir: str) -> list[str]:
    """The finished WARC files in ``out_dir``, sorted by name (fetcher, then time)."""
    return sorted(glob.glob(os.path.join(out_dir, WARC_GLOB)))


class _WarcSettings(Protocol):
    """What :meth:`WarcWriter.from_config` reads of a :class:`crawler.config.CrawlConfig`
    (not imported: the config is a higher layer, see tests/test_layers.py)."""

    @property
    def out_dir(self) -> str: ...
    @property
    def user_agent(self) -> str: ...
    @property
    def obey_robots(self) -> bool: ...


class WarcWriter:
    """The WARC file of one fetcher process, shared by its threads.

    Each exchange's records are built and compressed in the calling thread, then
    appended under one lock with one ``write`` and flushed, so a crash leaves at worst
    a partial last pair (see :func:`repair`).

    Args:
        path: the file's final path (:func:`warc_path`); it is written as
            ``path + ".open"``, created exclusively (an existing file is an error).
        user_agent: the crawl's User-Agent ('' means :data:`DEFAULT_USER_AGENT`).
        obey_robots: the crawl's robots.txt policy, for the warcinfo record.

    Raises:
        OSError: the file cannot be created.
    """

    def __init__(self, path: str, user_agent: str = "", obey_robots: bool = True) -> None:
        self.path = path
        self._file = open(path + OPEN_SUFFIX, "xb")
        self._lock = threading.Lock()
        buffer = io.BytesIO()
        writer = _writer(buffer)
        info = writer.create_warcinfo_record(
            os.path.basename(path),
            {
                "software": f"crawler/{__version__} (warcio/{_WARCIO_VERSION})",
                "format": "WARC File Format 1.1",
                "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
                "hostname": socket.gethostname(),
                "robots": "classic" if obey_robots else "ignore",
                "http-header-user-agent": user_agent or DEFAULT_USER_AGENT,
            },
        )
        self.warcinfo_id = info.rec_headers.get_header("WARC-Record-ID")
        writer.write_record(info)
        self._append(buffer.getvalue())

    @classmethod
    def from_config(cls, config: _WarcSettings, worker_id: int) -> WarcWriter:
        """The writer of fetcher ``worker_id`` for a :class:`crawler.config.CrawlConfig`."""
        return cls(warc_path(config.out_dir, worker_id), config.user_agent, config.obey_robots)

    def write_exchange(self, exchange: Exchange) -> None:
        """Append the records of one GET (see the module docstring); thread-safe.

        Raises:
            OSError: the write failed (disk full...).
        """
        from warcio.statusandheaders import StatusAndHeaders
        from warcio.timeutils import datetime_to_iso_date

        buffer = io.BytesIO()
        writer = _writer(buffer)
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        fields = {
            "WARC-Date": exchange.warc_date or datetime_to_iso_date(now, use_micros=True),
            "WARC-Warcinfo-ID": self.warcinfo_id,
        }
        if exchange.peer_ip:
            fields["WARC-IP-Address"] = exchange.peer_ip
        head = exchange.request_head
        request = writer.create_warc_record(
            exchange.url, "request", payload=io.BytesIO(head), length=len(head), warc_headers_dict=dict(fields)
        )
        if exchange.status is None:
            writer.write_record(request)
        else:
            if exchange.cut:
                fields["WARC-Truncated"] = exchange.cut
            body = exchange.body
            http_headers = StatusAndHeaders(
                _ascii(f"{exchange.status} {exchange.reason}".rstrip()),
                _stored_headers(exchange.headers),
                protocol=exchange.http_version,
            )
            response = _revisit(writer, exchange, fields, http_headers) or writer.create_warc_record(
                exchange.url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                warc_headers_dict=fields,
                http_headers=http_headers,
            )
            writer.write_request_response_pair(request, response)
        self._append(buffer.getvalue())

    def _append(self, data: bytes) -> None:
        with self._lock:
            self._file.write(data)
            self._file.flush()

    def close(self) -> None:
        """Close the file and give it its final name (no ``.open``)."""
        with self._lock:
            if self._file.closed:
                return
            self._file.close()
        os.replace(self.path + OPEN_SUFFIX, self.path)


def payload_digest(body: bytes) -> str:
    """``sha1:`` and the base32 SHA-1 of ``body``: the form of ``WARC-Payload-Digest``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def _revisit(
    writer: WARCWriter, exchange: Exchange, fields: dict[str, str], http_headers: StatusAndHeaders
) -> object | None:
    """The ``revisit`` record of a repeated request (WARC 1.1 §6.7), or None for a
    ``response``: a 304 to a conditional request is profile ``server-not-modified``; a
    200 whose body (sent without a content-coding) has the earlier capture's digest is
    profile ``identical-payload-digest``, its body not stored again. Both name the
    earlier capture (``WARC-Refers-To-Target-URI``, ``WARC-Refers-To-Date``)."""
    earlier = exchange.revisit
    if earlier is None or exchange.cut:
        return None
    refers = {"WARC-Refers-To-Target-URI": earlier.target_uri, "WARC-Refers-To-Date": earlier.date}
    if exchange.status == 304:
        record = writer.create_warc_record(
            exchange.url, "revisit", warc_headers_dict={**fields, **refers}, http_headers=http_headers
        )
        record.rec_headers.add_header("WARC-Profile", SERVER_NOT_MODIFIED)
        return record
    coded = any(name.lower() == "content-encoding" for name, _ in exchange.headers)
    if exchange.status != 200 or coded or earlier.payload_digest is None:
        return None
    if payload_digest(exchange.body) != earlier.payload_digest:
        return None
    return writer.create_revisit_record(
        exchange.url, earlier.payload_digest, earlier.target_uri, earlier.date, http_headers, fields
    )


def _writer(buffer: io.BytesIO) -> WARCWriter:
    """A warcio writer of gzip-per-record WARC/1.1 into ``buffer``. warcio is imported
    here, when a fetcher opens its WARC file (its ``warcinfo`` record), not with this
    module: importing it (it imports fsspec) took 70-85 ms of every start, with or
    without ``--warc`` (``python -X importtime``)."""
    from warcio.warcwriter import WARCWriter

    return WARCWriter(buffer, gzip=True, warc_version=WARC_VERSION)


def _stored_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The header fields to store: as received, ``Transfer-Encoding`` renamed (the body
    is stored without its chunking), non-ASCII bytes percent-encoded (:func:`_ascii`)."""
    return [
        (RENAMED_TRANSFER_ENCODING if name.lower() == "transfer-encoding" else _ascii(name), _ascii(value))
        for name, value in headers
    ]


def _ascii(text: str) -> str:
    """``text`` as http.client decoded it (ISO 8859-1, one character per byte received)
    with every non-ASCII byte written ``%XX``: warcio writes headers in ASCII, and left to
    itself it fails on a non-ASCII name or reason phrase and percent-encodes a value's
    UTF-8 re-encoding (``café`` sent in UTF-8 would be stored ``caf%C3%83%C2%A9``)."""
    if text.isascii():
        return text
    return "".join(c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("latin-1", "replace")) for c in text)


def repair(path: str) -> int:
    """Cut a partial last record off the gzip-per-record WARC file ``path``.

    Keeps every gzip member that is complete (its gzip trailer read, CRC checked by
    zlib) and whose content ends like a WARC record (``\\r\\n\\r\\n``), up to the first
    one that is not; truncates the file there. Reads the whole file once.

    Returns:
        the bytes removed (0 for a sound file).

    Raises:
        OSError: the file cannot be read or truncated.
    """
    keep = 0  # end of the last sound member
    offset = 0  # file offset of the data in ``pending``
    inflater, tail = None, b""
    with open(path, "rb+") as f:
        pending = b""
        while True:
            if not pending:
                pending = f.read(1 << 16)
                if not pending:
                    break
            if inflater is None:
                inflater, tail = zlib.decompressobj(16 + zlib.MAX_WBITS), b""
            try:
                data = inflater.decompress(pending, _INFLATE_STEP_BYTES)
                while inflater.unconsumed_tail and not inflater.eof:
                    tail = (tail + data)[-4:]
                    data = inflater.decompress(inflater.unconsumed_tail, _INFLATE_STEP_BYTES)
            except zlib.error:
                break  # a corrupt member: cut from the last sound one
            tail = (tail + data)[-4:]
            if inflater.eof:
                rest = inflater.unused_data
                member_end = offset + len(pending) - len(rest)
                if tail != b"\r\n\r\n":
                    break
                keep, inflater = member_end, None
                offset, pending = member_end, rest
            else:
                offset += len(pending)
                pending = b""
        size = f.seek(0, os.SEEK_END)
        f.truncate(keep)
    return size - keep


def seal_open_files(out_dir: str) -> tuple[int, int]:
    """Repair (:func:`repair`) and give their final names to the ``.open`` WARC files
    in ``out_dir``: those of fetcher processes that died. Call only while no fetcher of
    this folder runs (on resume, and after a crawl's processes have stopped).

    Returns:
        ``(files sealed, bytes cut)``.
    """
    files = cut = 0
    for path in sorted(glob.glob(os.path.join(out_dir, WARC_GLOB + OPEN_SUFFIX))):
        cut += repair(path)
        os.replace(path, path[: -len(OPEN_SUFFIX)])
        files += 1
    return files, cut
