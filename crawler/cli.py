"""Command line: ``python -m crawler [crawl | map] [URL ...] [--seeds FILE] [options]``.
Parses arguments (seed files through :mod:`crawler.seeds`), builds a
:class:`crawler.config.CrawlConfig`, calls :func:`crawler.api.crawl` (``crawl``, the
default when the first argument is not a command) or :func:`crawler.api.map_site` (``map``:
prints the map), maps errors to exit codes. No crawl logic lives here.

Exit codes: 0 the crawl completed (or was stopped cleanly), 2 bad input or a fatal error
(one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from crawler import __version__
from crawler.config import (
    DEFAULT_MAX_PATH_REPEATS,
    DEFAULT_MAX_PATH_SEGMENTS,
    DEFAULT_SHARD_BYTES,
    DEFAULT_SHARDS,
    DEFAULT_THREADS,
    MODES,
    CrawlConfig,
    default_workers,
)
from crawler.content.convert import CONVERTERS, DEFAULT_CONVERTER
from crawler.engine.signals import StopOnSignal
from crawler.errors import ConfigError, CrawlerError
from crawler.output.shards import COMPRESSIONS
from crawler.seeds import combine, read_seed_file, seed_url

EXIT_OK, EXIT_ERROR = 0, 2

_N = TypeVar("_N", int, float)


def _number(convert: Callable[[str], _N], minimum: _N, inclusive: bool, noun: str) -> Callable[[str], _N]:
    """An argparse ``type`` that converts with ``convert`` and checks the lower bound."""

    def parse(text: str) -> _N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {noun}: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < minimum or (value == minimum and not inclusive):
            bound = f"at least {minimum}" if inclusive else f"more than {minimum}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    return parse


_positive_int = _number(int, 1, True, "a whole number")
_non_negative_int = _number(int, 0, True, "a whole number")
_positive_float = _number(float, 0.0, False, "a number")
_non_negative_float = _number(float, 0.0, True, "a number")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: ``crawler: error: ...``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"crawler: error: {message} (see --help)\n")


def build_parser(mode: str = "crawl") -> argparse.ArgumentParser:
    """The argument parser of ``mode`` (``crawl`` or ``map``: the same options);
    ``--help`` lists every option with its default."""
    p = _Parser(
        prog="python -m crawler" + (" map" if mode == "map" else ""),
        description="Crawl a website into one Markdown record per page, a link graph and a site tree.",
        epilog="Commands: 'python -m crawler crawl URL' is 'python -m crawler URL'; "
        "'python -m crawler map URL' walks the same links without converting anything "
        "and writes OUT/map.json and OUT/tree.txt (a later crawl in OUT uses it for "
        "its progress total); 'python -m crawler export DIR --format parquet|documents|llms-txt' "
        "and 'python -m crawler export-current DIR --to NEW' write a crawl's current corpus; "
        "'python -m crawler status' and 'python -m crawler merge' serve a crawl run through Redis. "
        "Each has its own --help.",
    )
    p.add_argument(
        "seeds", nargs="*", metavar="URL", help="seed URL(s), http or https (at least one, here or in --seeds)"
    )
    p.add_argument(
        "--seeds",
        dest="seed_file",
        metavar="FILE",
        default=None,
        help="also read seed URLs from FILE ('-': standard input): one a line, "
        "'#' comments and blank lines ignored; after the URL arguments, "
        "duplicates dropped",
    )
    p.add_argument("--out", default="crawl-out", help="output folder, created if missing (default: %(default)s)")
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=default_workers(),
        help="fetcher processes (default: usable cores, here %(default)s)",
    )
    p.add_argument(
        "--threads",
        type=_positive_int,
        default=DEFAULT_THREADS,
        help="threads per fetcher process, to overlap network waits (default: %(default)s)",
    )
    p.add_argument(
        "--queue-size",
        type=_positive_int,
        default=None,
        help="bound of the task queue (default: 2 x workers x threads)",
    )
    p.add_argument(
        "--max-depth",
        type=_non_negative_int,
        default=None,
        help="follow links at most this far from the seed (default: no limit)",
    )
    p.add_argument(
        "--max-pages",
        type=_positive_int,
        default=None,
        help="fetch at most this many URLs, exactly (default: no limit)",
    )
    p.add_argument(
        "--max-pages-per-site",
        type=_positive_int,
        default=None,
        metavar="N",
        help="fetch at most N URLs of each site (origin), exactly, over every run of the crawl (default: no limit)",
    )
    p.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="HOST",
        help="also crawl this host, on any port; '.example.org' admits its subdomains "
        "(repeatable; default: only the seeds' sites)",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="REGEX",
        help="crawl only URLs matching one of these regexes (repeatable; default: all)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="never crawl URLs matching this regex (repeatable; default: none)",
    )
    p.add_argument(
        "--connect-timeout", type=_positive_float, default=10.0, help="seconds to connect (default: %(default)s)"
    )
    p.add_argument(
        "--read-timeout",
        type=_positive_float,
        default=30.0,
        help="seconds without a byte before a fetch fails (default: %(default)s)",
    )
    p.add_argument(
        "--total-timeout",
        type=_positive_float,
        default=120.0,
        help="wall-clock seconds for one fetch, body included (default: %(default)s)",
    )
    p.add_argument(
        "--page-timeout",
        type=_positive_float,
        default=60.0,
        help="wall-clock seconds for one page's parsing and conversion; past it the fetcher "
        "process is replaced and the URL failed (default: %(default)s)",
    )
    p.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=20 * 1024 * 1024,
        help="bodies are cut at this many bytes, recorded as truncated (default: %(default)s)",
    )
    p.add_argument(
        "--max-redirects", type=_positive_int, default=10, help="longest redirect chain followed (default: %(default)s)"
    )
    p.add_argument(
        "--user-agent",
        default="",
        help="User-Agent header (default: crawler/VERSION (corpus crawler; python-requests))",
    )
    p.add_argument(
        "--cookies",
        action="store_true",
        help="keep the cookies servers set for the whole crawl, shared by every fetcher "
        "(default: a cookie lasts only for its redirect chain, as for an anonymous visitor)",
    )
    p.add_argument(
        "--shards",
        type=_positive_int,
        default=DEFAULT_SHARDS,
        help="visited-table shards, a power of two (default: %(default)s)",
    )
    p.add_argument(
        "--start-method",
        choices=("fork", "spawn", "forkserver"),
        default=None,
        help="multiprocessing start method (default: the platform's)",
    )
    p.add_argument(
        "--progress-interval",
        type=_positive_float,
        default=5.0,
        help="seconds between progress lines on stderr (default: %(default)s)",
    )
    p.add_argument(
        "--ignore-robots", action="store_true", help="do not fetch or honour robots.txt (default: honour it, RFC 9309)"
    )
    p.add_argument(
        "--per-host",
        type=_positive_int,
        default=None,
        help="fixed politeness: at most N requests in flight to one host, spaced only by "
        "--delay or Crawl-delay (default: adaptive, one request at a time and a delay "
        "that follows the host's response time)",
    )
    p.add_argument(
        "--delay",
        type=_non_negative_float,
        default=0.0,
        help="seconds between the end of one request to a host and the start of the next, "
        "at least; a larger robots.txt Crawl-delay (capped at 60 s) wins "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--retries",
        type=_non_negative_int,
        default=2,
        help="retries of a timeout, connection error, incomplete body, 408, 429, 500, "
        "502, 503 or 504, "
        "after Retry-After or an exponential backoff (default: %(default)s)",
    )
    p.add_argument(
        "--max-retry-wait",
        type=_non_negative_float,
        default=300.0,
        help="a Retry-After longer than this many seconds fails the URL (default: %(default)s)",
    )
    p.add_argument(
        "--max-url-length", type=_positive_int, default=2048, help="skip URLs longer than this (default: %(default)s)"
    )
    p.add_argument(
        "--max-query-variants",
        type=_positive_int,
        default=1000,
        help="most URLs with a query per path, against calendar traps (default: %(default)s)",
    )
    p.add_argument(
        "--max-path-repeats",
        type=_positive_int,
        default=DEFAULT_MAX_PATH_REPEATS,
        metavar="N",
        help="skip URLs whose path repeats a segment more than N times in "
        "a row, or at every other position: /docs/docs/docs/ "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-path-segments",
        type=_positive_int,
        default=DEFAULT_MAX_PATH_SEGMENTS,
        metavar="N",
        help="skip URLs whose path has more than N segments (default: %(default)s)",
    )
    p.add_argument(
        "--sitemaps",
        action="store_true",
        help="also start from the seed hosts' sitemaps (robots.txt Sitemap: lines, "
        "else /sitemap.xml; gzip and indexes read), in scope only (default: off)",
    )
    p.add_argument(
        "--max-memory",
        type=_positive_int,
        default=None,
        metavar="MIB",
        help="slow down (one request at a time) while all processes together use "
        "more than this many MiB (default: no limit)",
    )
    p.add_argument(
        "--compress",
        choices=COMPRESSIONS,
        default=None,
        help="compress each page-record shard once it is closed: .jsonl.zst or .jsonl.gz (default: plain .jsonl)",
    )
    p.add_argument(
        "--shard-size",
        type=_positive_float,
        default=DEFAULT_SHARD_BYTES / 2**20,
        metavar="MIB",
        help="most uncompressed MiB of one page-record shard, pages-NN-SSSSS.jsonl (default: %(default)g)",
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="delete the outputs and state already in --out and start over (default: resume the crawl found there)",
    )
    if mode == "crawl":
        p.add_argument(
            "--recrawl",
            action="store_true",
            help="--out holds a finished crawl: start its next generation, asking every URL again with "
            "If-None-Match / If-Modified-Since; writes changes-G.tsv (a recrawl that did not finish is resumed)",
        )
        p.add_argument(
            "--skip-unchanged-for",
            type=_positive_int,
            metavar="N",
            help="with --recrawl: do not ask URLs that were unchanged in each of the last N generations "
            "(listed in skipped.tsv)",
        )
    p.add_argument(
        "--keep-boilerplate",
        action="store_true",
        help="convert the whole page to Markdown (default: only its main content, "
        "without navigation, header, footer, sidebars and cookie banners)",
    )
    p.add_argument(
        "--no-site-repeats",
        action="store_true",
        help="keep the text blocks repeated across a site's pages (default: a page without a main landmark "
        "loses those on more than half of the site's pages, once a fetcher has seen 10 of them)",
    )
    p.add_argument(
        "--converter",
        choices=CONVERTERS,
        default=DEFAULT_CONVERTER,
        help=f"HTML-to-Markdown converter (default: {DEFAULT_CONVERTER}); if it fails on a page, the other one is used",
    )
    p.add_argument(
        "--warc",
        action="store_true",
        help="also write the raw HTTP requests and responses as WARC/1.1 files, "
        "warc-NN-*.warc.gz in --out (default: off)",
    )
    p.add_argument(
        "--mirror",
        action="store_true",
        help="also write OUT/site/<host>/<path>.md, one Markdown file per page, and "
        "site/index.tsv (url -> file) (default: off)",
    )
    _cluster_arguments(p)  # map takes them only to say it cannot run through Redis
    p.add_argument("--quiet", action="store_true", help="no progress lines, only errors")
    p.add_argument("--version", action="version", version=f"crawler {__version__}")
    return p


def _cluster_arguments(p: argparse.ArgumentParser) -> None:
    """The options of a crawl run by several machines through Redis."""
    group = p.add_argument_group("several machines (Redis)")
    group.add_argument(
        "--redis",
        metavar="URL",
        help="share the crawl through Redis (redis://HOST:PORT/DB): run the same command on every machine, "
        "each with its own --out; the first creates the crawl, the others join it (default: one machine)",
    )
    group.add_argument(
        "--crawl-name",
        metavar="NAME",
        help="the crawl's name in Redis (default: crawl- and a hash of the seeds)",
    )
    group.add_argument("--machine", metavar="NAME", help="this machine's name in the crawl (default: HOST-PID)")
    group.add_argument(
        "--lease",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="seconds a machine keeps its frontier shards without renewing them; after it, a stalled or "
        "dead machine's shards and in-flight URLs go to the others (default: %(default)g)",
    )


def config_from_args(args: argparse.Namespace) -> CrawlConfig:
    """Build and validate the config. Raises ConfigError for a bad seed or setting."""
    positional = [seed_url(raw) for raw in args.seeds]
    from_file = read_seed_file(args.seed_file) if args.seed_file is not None else []
    if not positional and not from_file:
        raise ConfigError("no seed URL: give one or more URLs, or --seeds FILE")
    return CrawlConfig(
        seeds=combine(positional, from_file),
        out_dir=args.out,
        workers=args.workers,
        threads=args.threads,
        queue_size=args.queue_size,
        max_depth=args.max_depth,
        max_pages=args.max_pages,
        max_pages_per_site=args.max_pages_per_site,
        allow_domains=tuple(args.allow_domain),
        include=tuple(args.include),
        exclude=tuple(args.exclude),
        connect_timeout_s=args.connect_timeout,
        read_timeout_s=args.read_timeout,
        total_timeout_s=args.total_timeout,
        page_timeout_s=args.page_timeout,
        max_body_bytes=args.max_bytes,
        max_redirects=args.max_redirects,
        user_agent=args.user_agent,
        cookies=args.cookies,
        shards=args.shards,
        start_method=args.start_method,
        progress_interval_s=args.progress_interval,
        obey_robots=not args.ignore_robots,
        per_host=args.per_host,
        delay_s=args.delay,
        retries=args.retries,
        max_retry_wait_s=args.max_retry_wait,
        max_url_length=args.max_url_length,
        max_query_variants=args.max_query_variants,
        max_path_repeats=args.max_path_repeats,
        max_path_segments=args.max_path_segments,
        sitemaps=args.sitemaps,
        restart=args.restart,
        mode=getattr(args, "mode", "crawl"),
        mirror=args.mirror,
        max_memory_bytes=args.max_memory * 2**20 if args.max_memory else None,
        warc=args.warc,
        compress=args.compress,
        shard_bytes=int(args.shard_size * 2**20),
        progress="off" if args.quiet else "bar" if sys.stderr.isatty() else "log",
        keep_boilerplate=args.keep_boilerplate,
        site_repeats=not args.no_site_repeats,
        converter=args.converter,
        redis=getattr(args, "redis", None),
        crawl_name=getattr(args, "crawl_name", None),
        machine=getattr(args, "machine", None),
        lease_s=getattr(args, "lease", 30.0),
        recrawl=getattr(args, "recrawl", False),
        skip_unchanged_for=getattr(args, "skip_unchanged_for", None),
    ).validated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    # Installed first and never removed: a signal while the modules load, during the
    # crawl or after it is always a warm stop, then an abort; never a traceback.
    signals = StopOnSignal().install()
    try:
        return _main(argv, signals)
    except KeyboardInterrupt as exc:
        print(f"crawler: {str(exc) or 'aborted'}; run the same command again to resume", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # stdout's reader left (`| head`): the outputs are on disk
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the exit's flush cannot fail again
        return EXIT_OK


def _main(argv: Sequence[str] | None, signals: StopOnSignal) -> int:
    from crawler.api import crawl  # imported here so --help stays fast
    from crawler.engine.progress import summary_table

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "status":
        return _status(argv[1:])
    if argv and argv[0] == "merge":
        return _merge(argv[1:])
    if argv and argv[0] == "export-current":
        return _export_current(argv[1:])
    if argv and argv[0] == "export":
        return _export(argv[1:])
    mode = argv.pop(0) if argv and argv[0] in MODES else "crawl"
    args = build_parser(mode).parse_args(argv)
    args.mode = mode
    logging.basicConfig(
        level=logging.ERROR if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    if mode == "map":
        return _map(args, signals)
    try:
        config = config_from_args(args)
        if config.redis is not None:
            from crawler.cluster import crawl_cluster

            summary = crawl_cluster(config, signals)
        else:
            summary = crawl(config, signals)
    except CrawlerError as exc:
        print(f"crawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    keys = (
        "pages",
        "non_html",
        "redirects",
        "failed",
        "skipped",
        "claimed",
        "wall_s",
        "pages_per_s",
        "peak_rss_bytes",
        "reconciled",
    )
    if not args.quiet:
        print(summary_table(summary), file=sys.stderr)
    if summary["stopped"]:
        again = (
            "start a machine again with a new --out to go on"
            if config.redis is not None
            else "run the same command again to resume"
        )
        print(f"crawler: stopped ({summary['stopped']}); {again}", file=sys.stderr)
    print(json.dumps({k: summary[k] for k in keys}))
    print(f"output: {config.out_dir}")
    return EXIT_OK


def _status(argv: list[str]) -> int:
    """``python -m crawler status --redis URL [--crawl-name N | SEED...]``: the live counts
    of a crawl run through Redis, as JSON on stdout."""
    from crawler.cluster import status

    p = _Parser(
        prog="python -m crawler status", description="Print the live state of a crawl run through Redis, as JSON."
    )
    p.add_argument("seeds", nargs="*", metavar="URL", help="the crawl's seed URLs (to derive its default name)")
    p.add_argument("--seeds", dest="seed_file", metavar="FILE", help="the crawl's seed file")
    p.add_argument("--redis", required=True, metavar="URL", help="redis://HOST:PORT/DB")
    p.add_argument("--crawl-name", metavar="NAME", help="the crawl's name (default: derived from the seeds)")
    args = p.parse_args(argv)
    try:
        name = args.crawl_name
        if name is None:
            positional = [seed_url(raw) for raw in args.seeds]
            from_file = read_seed_file(args.seed_file) if args.seed_file is not None else []
            if not positional and not from_file:
                raise ConfigError("give --crawl-name, or the crawl's seeds to derive it")
            name = CrawlConfig(seeds=combine(positional, from_file), out_dir=".").cluster_name()
        print(json.dumps(status(args.redis, name), indent=2))
    except CrawlerError as exc:
        print(f"crawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _merge(argv: list[str]) -> int:
    """``python -m crawler merge DIR... --out FINAL``: one crawl's machine folders gathered
    into one (:mod:`crawler.output.merge`); the summary's counts as JSON on stdout."""
    from crawler.output.merge import merge_folders

    p = _Parser(
        prog="python -m crawler merge",
        description="Write the outputs of a crawl run on several machines (--redis) from their folders: "
        "one record per URL, edges, tree, skipped URLs, sites and summary.",
    )
    p.add_argument("folders", nargs="+", metavar="DIR", help="the machines' --out folders")
    p.add_argument("--out", required=True, help="the merged output folder (new or empty)")
    p.add_argument("--compress", choices=COMPRESSIONS, help="compress the merged page shards (default: plain)")
    args = p.parse_args(argv)
    try:
        summary = merge_folders(args.folders, args.out, compression=args.compress)
    except CrawlerError as exc:
        print(f"crawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    keys = ("claimed", "visited", "failed", "skipped", "records_repeated", "edges", "sites", "reconciled")
    print(json.dumps({k: summary[k] for k in keys}))
    print(f"output: {args.out}")
    return EXIT_OK


def _export_current(argv: list[str]) -> int:
    """``python -m crawler export-current DIR --to NEW``: the current corpus of a crawled
    (and recrawled) folder, one record per URL (:mod:`crawler.output.current`)."""
    from crawler.output.current import export_current

    p = _Parser(
        prog="python -m crawler export-current",
        description="Write the current corpus of a crawl folder: per URL its latest record that is not a "
        "transient failure, gone pages left out, Markdown carried from earlier generations filled in.",
    )
    p.add_argument("folder", metavar="DIR", help="the crawl's --out folder")
    p.add_argument("--to", required=True, metavar="NEW", help="the folder to write (new or empty)")
    p.add_argument("--compress", choices=COMPRESSIONS, help="compress the page shards (default: plain)")
    args = p.parse_args(argv)
    return _run_export(args.folder, args.to, lambda: export_current(args.folder, args.to, args.compress))


def _export(argv: list[str]) -> int:
    """``python -m crawler export DIR --format F [--to NEW]``: the current corpus as
    Parquet, training documents or llms.txt (:mod:`crawler.output.export`)."""
    from crawler.output.export import FORMATS, ROWS, export

    p = _Parser(
        prog="python -m crawler export",
        description="Export the current corpus of a crawl folder (per URL its latest record) as Parquet, "
        "FineWeb/Dolma-shaped documents or llms.txt, with a dataset card.",
    )
    p.add_argument("folder", metavar="DIR", help="the crawl's --out folder")
    p.add_argument("--format", required=True, choices=FORMATS, help="what to write")
    p.add_argument("--to", metavar="NEW", help="the folder to write (default: DIR/export-FORMAT)")
    p.add_argument(
        "--rows",
        choices=ROWS,
        default="pages",
        help="parquet: HTML pages only (default), or every record (non-HTML, redirects, failures too)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    to = args.to or os.path.join(args.folder, "export-" + args.format)
    return _run_export(args.folder, to, lambda: export(args.folder, args.format, to, args.rows))


def _run_export(folder: str, to: str, run: Callable[[], dict]) -> int:
    """Run an export of ``folder`` into ``to``: its counts as one JSON line and the output
    folder on stdout, or one ``crawler: error:`` line and :data:`EXIT_ERROR`."""
    try:
        counts = run()
    except CrawlerError as exc:
        print(f"crawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"crawler: error: {exc.filename or folder}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a damaged shard (EOFError, zlib, zstd) or a line that is no record
        print(f"crawler: error: {folder}: a page record cannot be read ({type(exc).__name__}: {exc})", file=sys.stderr)
        return EXIT_ERROR
    print(json.dumps(counts))
    print(f"output: {to}")
    return EXIT_OK


def _map(args: argparse.Namespace, signals: StopOnSignal) -> int:
    """``python -m crawler map``: walk, then print the map on stdout."""
    from crawler.api import map_site
    from crawler.output.map_report import format_map, tree_excerpt

    try:
        config = config_from_args(args)
        report = map_site(config, signals)
    except CrawlerError as exc:
        print(f"crawler: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if report["stopped"]:
        print(f"crawler: stopped ({report['stopped']}); run the same command again to resume", file=sys.stderr)
    print(format_map(report))
    print(tree_excerpt(os.path.join(config.out_dir, "tree.txt")))
    hint = (
        "; crawl with the same --out and the progress bar knows the total"
        if report["complete"]
        else "; incomplete: a crawl does not use it for its total"
    )
    print(f"output: {config.out_dir} (map.json, tree.txt){hint}")
    return EXIT_OK
