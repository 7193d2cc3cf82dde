"""Every crawl setting and its default, in one frozen dataclass.

Units are in the names (``_s`` seconds, ``_bytes`` bytes). ``None`` means "no limit";
``0`` never does. The command line (:mod:`crawler.cli`) builds a :class:`CrawlConfig`
from its arguments and calls :meth:`CrawlConfig.validated`; library users may build one
directly. The object is small and picklable: it is handed to every fetcher process.
"""

from __future__ import annotations

import dataclasses
import os
import re

import xxhash

from crawler.content.convert import CONVERTERS, DEFAULT_CONVERTER
from crawler.errors import ConfigError
from crawler.output.shards import COMPRESSIONS, DEFAULT_SHARD_BYTES, zstd_available
from crawler.web.scope import domain_key
from crawler.web.urlnorm import key_of

#: Default visited-table shard count; must be a power of two.
DEFAULT_SHARDS = 64
#: Default fetcher threads per process: network waits overlap, parsing stays on one core.
DEFAULT_THREADS = 4
#: Upper bounds of the settings (beyond them the OS or the standard library overflows).
MAX_WORKERS = 1024
MAX_THREADS = 1024
MAX_QUEUE_SIZE = 1_000_000
MAX_TIMEOUT_S = 86_400.0
MAX_REDIRECTS = 100
MAX_RETRIES = 100
#: Sitemap indexes are followed this many levels deep, and at most this many sitemaps
#: are read per crawl (the protocol allows 50,000 per index; a crawl needs fewer).
MAX_SITEMAP_LEVELS = 3
MAX_SITEMAPS = 1000
MAX_SHARDS = 2**20
MAX_BODY_BYTES = 2**40
#: Default crawler-trap guards on the path (:mod:`crawler.web.traps`): a segment (or run of
#: segments) may repeat at most this many times in a row, as Heritrix's
#: PathologicalPathDecideRule (maxRepetitions 2) ...
DEFAULT_MAX_PATH_REPEATS = 2
#: ... and a path may have at most this many segments, as Heritrix's
#: TooManyPathSegmentsDecideRule (maxPathDepth 20).
DEFAULT_MAX_PATH_SEGMENTS = 20
#: What a run does: ``crawl`` writes pages; ``map`` only walks the links and counts.
MODES = ("crawl", "map")
MAX_SHARD_BYTES = 2**40


def check_redis_url(url: str) -> None:
    """Raise ConfigError (one line) unless ``url`` is a ``redis://`` (or ``rediss://``,
    ``unix://``) URL redis-py reads, with a numeric database if one is given."""
    import urllib.parse

    from redis.connection import parse_url

    message = f"--redis must be a redis://HOST:PORT/DB URL, got {url!r}"
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(message)
    try:
        parse_url(url)
        database = urllib.parse.urlsplit(url).path.lstrip("/")
    except ValueError:
        raise ConfigError(message) from None
    if url.startswith(("redis://", "rediss://")) and database and not database.isdigit():
        raise ConfigError(message)


def default_workers() -> int:
    """Number of fetcher processes by default: the number of usable cores (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclasses.dataclass(frozen=True)
class CrawlConfig:
    """Settings of one crawl.

    Attributes:
        seeds: seed URLs in request form (:func:`crawler.web.urlnorm.request_url`: normalized,
            the query as written); the first one is the root of the tree.
        out_dir: output folder; created if missing.
        workers: fetcher processes (>= 1).
        threads: threads per fetcher process (>= 1); they overlap network waits.
        queue_size: bound of the task queue between dispatcher and fetchers (>= 1);
            ``None`` means ``2 * workers * threads``.
        max_depth: links followed from the seed (seed is depth 0); ``None``: unlimited.
        max_pages: exact cap on URLs fetched (every fetch counts, redirects included);
            ``None``: unlimited.
        allow_domains: extra hosts in scope besides the seeds' hosts; a leading ``.``
            admits every subdomain (``.example.org``).
        include, exclude: regex sources; a URL is in scope only if it matches some
            include (when any are given) and no exclude (``re.search`` on the URL).
        connect_timeout_s, read_timeout_s: per-socket timeouts handed to requests.
        total_timeout_s: wall-clock cap on one fetch, body included (a trickling server
            cannot hold a thread longer than this).
        page_timeout_s: wall-clock cap on one page's page work (decode, links, main
            content, Markdown, SimHash), from the end of its download. Native code
            holding the GIL cannot be interrupted from Python, so past it the dispatcher
            kills the fetcher process: the URL is failed with ``page work timeout`` and the
            fetcher's other tasks go back to the frontier, as after any fetcher death.
        max_body_bytes: bodies are streamed and cut at this size (recorded as truncated).
        max_redirects: longest redirect chain followed before the URL is failed.
        user_agent: the User-Agent header.
        cookies: keep the cookies servers set for the whole crawl, by domain, in a store
            every fetcher process shares (:mod:`crawler.engine.cookiestore`); ``False``
            (the default): a cookie lasts only as long as its redirect chain, so each
            page is fetched as an anonymous visitor sees it.
        shards: visited-table shards, a power of two.
        start_method: multiprocessing start method (fork, spawn, forkserver) or ``None``
            for the platform default.
        progress_interval_s: seconds between progress log lines.
        progress: ``"log"`` (a log line every ``progress_interval_s``), ``"bar"`` (a
            live tqdm bar: the command line's choice on a terminal) or ``"off"``.
        obey_robots: fetch and honour each origin's robots.txt (RFC 9309) before any
            page of it; ``False`` is ``--ignore-robots``.
        per_host: ``None`` (the default): the adaptive throttle, one request in flight
            per origin and a delay that follows its response time
            (:mod:`crawler.engine.throttle`); a number: at most that many in flight per origin
            and only the fixed ``delay_s`` (``--per-host N``).
        delay_s: minimum seconds between the end of one request to an origin and the
            start of the next; 0 means none. A larger ``Crawl-delay`` wins. With the
            adaptive throttle it is the delay's floor.
        max_pages_per_site: exact cap on URLs fetched per origin, over every run of the
            crawl (as ``max_pages``, redirects count); the rest of the origin's URLs are
            skipped (``max-pages-per-site``); ``None``: unlimited.
        stall_s: seconds without progress, while work waits, after which the dispatcher
            logs what waits, what is in flight and what each fetcher holds
            (:mod:`crawler.engine.watchdog`).
        max_crawl_delay_s: cap on a robots.txt ``Crawl-delay``.
        retries: further attempts after a transient failure (timeout, connection
            error, 408, 429, 500, 502, 503, 504); 0 disables retrying.
        retry_base_s, retry_cap_s: exponential backoff: about ``base * 2**attempt``
            seconds (with jitter), at most ``cap``, when the server gave no Retry-After.
        max_retry_wait_s: a ``Retry-After`` longer than this fails the URL at once
            (recorded with the reason) instead of holding it.
        max_url_length: URLs longer than this many characters are skipped.
        sitemaps: also seed the frontier from each seed origin's sitemaps (robots.txt
            ``Sitemap:`` lines, else ``/sitemap.xml``; indexes followed up to
            :data:`MAX_SITEMAP_LEVELS` levels, at most :data:`MAX_SITEMAPS` sitemaps), in
            scope only.
        max_memory_bytes: resident memory of the whole process tree (psutil) above
            which the dispatcher slows down to one task in flight; ``None``: no limit.
        recrawl: ``out_dir`` holds a finished crawl: start its next generation, asking
            every URL again with the validators of its stored record
            (:mod:`crawler.engine.recrawl`); a generation that did not finish is resumed.
        skip_unchanged_for: with ``recrawl``, a URL whose record was ``unchanged`` in each
            of the last N generations is not asked (skipped, listed); ``None``: asked.
        generation: the generation this run writes (set by :func:`crawler.api.crawl`
            from the folder: 1, or the recrawl's); recorded in every record.
        restart: delete this crawler's outputs and state in ``out_dir`` and start over
            (without it, a crawl whose ``out_dir`` holds a stopped crawl of the same
            seeds and scope resumes it; other seeds or scope are a ConfigError).
        max_query_variants: most URLs with a query per path (scheme, host and path):
            further ones are skipped (a calendar's endless ``?month=`` links); ``None``:
            unlimited.
        max_path_repeats: a discovered URL whose path repeats a segment (or a run of
            segments) more than this many times in a row, or one segment at more than
            this many alternate positions, is skipped (``repeated path segment``:
            ``/docs/docs/docs/``); ``None``: unlimited (:mod:`crawler.web.traps`).
        max_path_segments: a discovered URL whose path has more segments (``/``) than
            this is skipped (``too many path segments``: ``/1/2/3/...``); ``None``:
            unlimited.
        mode: ``"crawl"`` (fetch and convert every page) or ``"map"`` (:data:`MODES`):
            walk the same links with the same rules, convert nothing, size non-HTML
            links with ``HEAD`` (see :mod:`crawler.web.probe` and :mod:`crawler.output.map_report`).
        keep_boilerplate: convert the whole page to Markdown; by default only its main
            content is (:func:`crawler.content.main.main_content`: navigation, header,
            footer, sidebars and cookie banners stripped).
        site_repeats: drop from a page without a ``main`` landmark the text blocks
            repeated on more than half of its site's pages (:mod:`crawler.content.repeats`;
            each fetcher counts the pages it converts, so which pages lose them depends on
            the order of the crawl); ``False`` (``--no-site-repeats``): every page is
            converted on its own.
        converter: the HTML-to-Markdown converter (:data:`crawler.content.convert.CONVERTERS`);
            if it raises on a page, the other one converts that page.
        warc: also write every HTTP exchange (pages, redirects, errors, robots.txt,
            sitemaps) as WARC/1.1 request and response records, one
            ``warc-NN-*.warc.gz`` file per fetcher process and run (:mod:`crawler.output.warc`).
        compress: ``None`` (shards stay plain), ``"zstd"`` or ``"gzip"``: what each
            page-record shard is compressed to once closed (:mod:`crawler.output.shards`).
        shard_bytes: most uncompressed bytes of one page-record shard; a record larger
            than this gets a shard of its own.
        mirror: at the end of the crawl, write ``out_dir/site/<host>/<path>.md``, one file
            per page with Markdown, and ``site/index.tsv`` (:mod:`crawler.output.mirror`).
        redis: ``None`` (the embedded default: manager process and ``state.sqlite``) or a
            ``redis://HOST:PORT/DB`` URL: the visited table, the frontier and the shard
            leases are shared there by every machine running the same crawl
            (:mod:`crawler.engine.rediscrawl`); ``out_dir`` is this machine's own.
        crawl_name: the crawl's name in Redis; ``None``: derived from the seeds
            (:meth:`cluster_name`).
        machine: this machine's name in the crawl (unique; letters, digits, ``.``, ``_``,
            ``-``); ``None``: ``HOST-PID``.
        lease_s: seconds a frontier shard's lease lasts unless renewed (every third of
            it): a machine that stops answering loses its shards after this long.
    """

    seeds: tuple[str, ...]
    out_dir: str
    workers: int = dataclasses.field(default_factory=default_workers)
    threads: int = DEFAULT_THREADS
    queue_size: int | None = None
    max_depth: int | None = None
    max_pages: int | None = None
    allow_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    total_timeout_s: float = 120.0
    page_timeout_s: float = 60.0
    max_body_bytes: int = 20 * 1024 * 1024
    max_redirects: int = 10
    user_agent: str = ""
    cookies: bool = False
    shards: int = DEFAULT_SHARDS
    start_method: str | None = None
    progress_interval_s: float = 5.0
    progress: str = "log"
    obey_robots: bool = True
    per_host: int | None = None
    delay_s: float = 0.0
    max_pages_per_site: int | None = None
    stall_s: float = 60.0
    max_crawl_delay_s: float = 60.0
    retries: int = 2
    retry_base_s: float = 1.0
    retry_cap_s: float = 60.0
    max_retry_wait_s: float = 300.0
    max_url_length: int = 2048
    max_query_variants: int | None = 1000
    max_path_repeats: int | None = DEFAULT_MAX_PATH_REPEATS
    max_path_segments: int | None = DEFAULT_MAX_PATH_SEGMENTS
    sitemaps: bool = False
    restart: bool = False
    max_memory_bytes: int | None = None
    mode: str = "crawl"
    keep_boilerplate: bool = False
    site_repeats: bool = True
    converter: str = DEFAULT_CONVERTER
    warc: bool = False
    compress: str | None = None
    shard_bytes: int = DEFAULT_SHARD_BYTES
    mirror: bool = False
    redis: str | None = None
    crawl_name: str | None = None
    machine: str | None = None
    lease_s: float = 30.0
    recrawl: bool = False
    skip_unchanged_for: int | None = None
    generation: int = 1

    @property
    def seed_keys(self) -> tuple[str, ...]:
        """The seeds' visited-table keys (:func:`crawler.web.urlnorm.key_of`)."""
        return tuple(key_of(seed) for seed in self.seeds)

    def cluster_name(self) -> str:
        """The crawl's name in Redis: ``crawl_name``, else ``crawl-`` and 12 hex digits of
        the xxh3 of the sorted seed keys (machines given the same seeds join one crawl)."""
        if self.crawl_name:
            return self.crawl_name
        digest = xxhash.xxh3_64_hexdigest("\n".join(sorted(self.seed_keys)).encode("utf-8", "surrogatepass"))
        return f"crawl-{digest[:12]}"

    def resume_settings(self) -> dict:
        """The settings a resume must not change, JSON-able: the seeds' keys, the allowed
        domains, the include and exclude patterns, and the converter (its Markdown is what
        duplicates are found by: two converters in one corpus would hide them);
        ``state.sqlite`` keeps them."""
        return {
            "seeds": list(self.seed_keys),
            "allow_domains": list(self.allow_domains),
            "include": list(self.include),
            "exclude": list(self.exclude),
            "converter": self.converter,
        }

    @property
    def task_queue_size(self) -> int:
        """The bound of the task queue actually used."""
        return self.queue_size if self.queue_size is not None else 2 * self.workers * self.threads

    def validated(self) -> CrawlConfig:
        """Return ``self`` after checking every field.

        Raises:
            ConfigError: the first invalid field, with a one-line reason.
        """
        if not self.seeds:
            raise ConfigError("at least one seed URL is required")
        for name, top in (
            ("workers", MAX_WORKERS),
            ("threads", MAX_THREADS),
            ("max_redirects", MAX_REDIRECTS),
            ("queue_size", MAX_QUEUE_SIZE),
            ("max_pages", None),
            ("max_pages_per_site", None),
            ("max_body_bytes", MAX_BODY_BYTES),
            ("per_host", MAX_THREADS),
            ("max_url_length", None),
            ("max_memory_bytes", None),
            ("max_query_variants", None),
            ("max_path_repeats", None),
            ("max_path_segments", None),
        ):
            value = getattr(self, name)
            flag = "--max-bytes" if name == "max_body_bytes" else f"--{name.replace('_', '-')}"
            if value is not None and value < 1:
                raise ConfigError(f"{flag} must be at least 1")
            if value is not None and top is not None and value > top:
                raise ConfigError(f"{flag} must be at most {top}, got {value}")
        if self.max_depth is not None and self.max_depth < 0:
            raise ConfigError("--max-depth must be 0 or more")
        if not 0 <= self.retries <= MAX_RETRIES:
            raise ConfigError(f"--retries must be from 0 to {MAX_RETRIES}, got {self.retries}")
        for name, flag in (
            ("delay_s", "--delay"),
            ("max_crawl_delay_s", "max_crawl_delay_s"),
            ("max_retry_wait_s", "--max-retry-wait"),
            ("retry_base_s", "retry_base_s"),
            ("retry_cap_s", "retry_cap_s"),
        ):
            if not 0 <= getattr(self, name) <= MAX_TIMEOUT_S:
                raise ConfigError(f"{flag} must be from 0 to {MAX_TIMEOUT_S:g} s")
        for name in ("connect_timeout_s", "read_timeout_s", "total_timeout_s", "page_timeout_s", "stall_s"):
            if not 0 < getattr(self, name) <= MAX_TIMEOUT_S:
                raise ConfigError(f"{name} must be more than 0 and at most {MAX_TIMEOUT_S:g} s")
        if self.shards < 1 or self.shards & (self.shards - 1) or self.shards > MAX_SHARDS:
            raise ConfigError(f"--shards must be a power of two up to {MAX_SHARDS}, got {self.shards}")
        if self.progress not in ("log", "bar", "off"):
            raise ConfigError(f"unknown progress display {self.progress!r}")
        if self.mode not in MODES:
            raise ConfigError(f"unknown mode {self.mode!r} (one of {', '.join(MODES)})")
        if self.start_method not in (None, "fork", "spawn", "forkserver"):
            raise ConfigError(f"unknown start method {self.start_method!r}")
        if self.converter not in CONVERTERS:
            raise ConfigError(f"--converter must be one of {', '.join(CONVERTERS)}, got {self.converter!r}")
        if self.compress not in (None, *COMPRESSIONS):
            raise ConfigError(f"--compress must be zstd or gzip, got {self.compress!r}")
        if self.compress == "zstd" and not zstd_available():
            raise ConfigError("--compress zstd needs the zstandard package (pip install zstandard)")
        if not 1 <= self.shard_bytes <= MAX_SHARD_BYTES:
            raise ConfigError(
                f"--shard-size must be from 1 byte to {MAX_SHARD_BYTES // 2**20} MiB, got {self.shard_bytes} bytes"
            )
        if self.redis is not None:
            self._validate_cluster()
        if self.recrawl and self.restart:
            raise ConfigError("--recrawl and --restart cannot go together: --restart deletes the crawl to recrawl")
        if self.recrawl and self.mode != "crawl":
            raise ConfigError("map has no --recrawl: map the site again with a new --out")
        if self.recrawl and self.mirror:
            raise ConfigError("--mirror is not supported with --recrawl yet (export-current writes the current corpus)")
        if self.skip_unchanged_for is not None and not self.recrawl:
            raise ConfigError("--skip-unchanged-for needs --recrawl")
        if self.skip_unchanged_for is not None and self.skip_unchanged_for < 1:
            raise ConfigError("--skip-unchanged-for must be at least 1")
        for domain in self.allow_domains:
            if domain_key(domain) is None:
                raise ConfigError(
                    f"--allow-domain {domain!r} is not a host name (example.org, or .example.org with its subdomains)"
                )
        for pattern in self.include + self.exclude:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"bad regex {pattern!r}: {exc}") from None
        return self

    def _validate_cluster(self) -> None:
        """The settings ``--redis`` needs or cannot take (one-line ConfigErrors)."""
        assert self.redis is not None  # validated() calls this with --redis only
        check_redis_url(self.redis)
        for name, flag in (("max_pages", "--max-pages"), ("max_pages_per_site", "--max-pages-per-site")):
            if getattr(self, name) is not None:
                raise ConfigError(f"{flag} is not supported with --redis yet (each machine would count its own)")
        if self.mode != "crawl":
            raise ConfigError("map is not supported with --redis")
        if self.cookies:
            raise ConfigError("--cookies is not supported with --redis yet (the cookie store is one machine's)")
        if self.sitemaps:
            raise ConfigError("--sitemaps is not supported with --redis yet (a sitemap is read by one machine only)")
        if self.recrawl:
            raise ConfigError("--recrawl is not supported with --redis yet: recrawl on one machine")
        if self.restart:
            raise ConfigError(
                "--restart does not apply with --redis: every run has a new --out; "
                "a new --crawl-name starts the crawl over"
            )
        for value, flag in ((self.crawl_name, "--crawl-name"), (self.machine, "--machine")):
            if value is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", value):
                raise ConfigError(f"{flag} must be 1 to 64 letters, digits, '.', '_' or '-', got {value!r}")
        if not 1.0 <= self.lease_s <= MAX_TIMEOUT_S:
            raise ConfigError(f"--lease must be from 1 to {MAX_TIMEOUT_S:g} s, got {self.lease_s:g}")
