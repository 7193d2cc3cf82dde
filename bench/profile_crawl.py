"""Where a crawl's CPU goes: pages/s against the page-work limit, CPU per process role,
and a cProfile of every process split into page work, HTTP, IPC, visited table, waits.

Usage:
    .venv/bin/python bench/profile_crawl.py [--root /usr/share/doc/python3.11/html]
        [--workers 2 4] [--profile-workers 2 [4]] [--threads 4] [--runs 2]
        [--pw-rounds 2] [--builtins] [--no-probes] [--parallel-page-work] [--keep DIR]
    BENCH_QUICK=1 .venv/bin/python bench/profile_crawl.py   # one run of each

nginx (``bench/nginx.py``, one worker) serves ``--root`` on 127.0.0.1 only; every crawl
starts from ``index.html``, same site only, and runs in this process through
``crawler.api.crawl(CrawlConfig(..., start_method="fork"))``. ``*_proxy`` variables
are removed first, so nothing but that 127.0.0.1 port is ever contacted.

What it measures:

1. Page work alone: the steps of ``bench/page_work.py`` (decode, the one lxml parse, links
   from the tree, resolve + normalize, main content + Markdown by the default converter,
   SimHash, JSON), timed the same way (process CPU, one process, pages read
   from disk first, best of ``--pw-rounds``). The limit on C cores is
   ``C / page-work CPU per page``. The same steps are then timed once page by page,
   interleaved as a fetcher runs them (thread CPU per step), and with
   ``--parallel-page-work`` once in one forked process per core at the same time.
2. Run 1, no profiler, for each ``--workers`` (``--runs`` times, alternating; the
   fastest run of each is used): pages/s and CPU per page of each role from
   ``summary.json``'s ``processes`` (dispatcher = this process, its CPU before the crawl
   subtracted; manager; fetchers; nginx is measured apart and left out). The summary
   samples CPU at the end of the dispatcher's loop; the CPU of the whole ``crawl()``
   call (end-of-crawl outputs included) is shown too. pages/s / limit is split into
   CPU efficiency (page work alone / crawl CPU per page) x CPU busy (crawl CPU /
   (cores x wall)); the second factor is what other load on the machine and the
   politeness take away. Each round also crawls once at the base worker count (2 if
   given) with ``--per-host 2 x workers x threads`` (as ``bench/slow_server.py``): no
   adaptive crawl delay, so the default's one request in flight to this one origin,
   spaced by its measured latency, shows as the ratio of the two (fastest of each).
   Probes (not a profiler): each fetcher sums the thread CPU (``time.thread_time``)
   of a few functions, inclusive: ``PageProcessor.run``, ``HttpClient.get``, each
   page-work step, the scope check, the Markdown fingerprint, ``OfferedKeys.first_offer``,
   ``RecordWriter.write``, ``VisitedProxy.settle`` (also counting the links sent and
   the pickled size of its arguments) and ``first_content``, ``ResultSender.put``, the
   task queue's ``get``; a target missing from the crawler is skipped and listed
   (``--no-probes``: none). Their own cost is measured and printed (~90 calls/page,
   ~1.5 us each). The leftover per page (crawl CPU - page work alone) is split with them.
3. Components alone: ``HttpClient.get`` over the crawled pages' URLs in one thread
   (process CPU per GET, its deadline timer thread included), and the profiler's
   inflation: each page-work step and ``HttpClient.get`` timed unprofiled and under the
   same profiler on every 20th file.
4. Run 2, for each ``--profile-workers`` (default 2): cProfile in every thread of
   every process. The clock is ``time.thread_time_ns``, CPU time of the profiled
   thread, not wall clock (with 4 fetcher threads sharing a GIL, a wall clock would
   charge every GIL wait and blocking read to the function that was running). C
   functions are not profiled as entries by default (``--builtins``: twice the
   overhead), so their time is part of the Python function calling them. Under fork:

   * dispatcher (this process): a profiler on the main thread around ``crawl()``;
     ``threading.setprofile`` starts one in each thread it starts (the task queue's
     feeder thread);
   * fetchers: ``crawler.engine.pool.fetcher_main`` (the pool looks it up there)
     is wrapped; an at-fork hook replaces the profiler inherited from the dispatcher,
     the ``threading.setprofile`` hook profiles each fetcher thread and each
     deadline timer thread (``crawler.web.deadlines``); stats are dumped when ``fetcher_main``
     returns;
   * manager: ``crawler.engine.visited.child_signals`` (its server initializer) is wrapped:
     every server thread is profiled and the stats are dumped when the manager gets its
     shutdown message, before it replies (the parent then joins it for 1 s only), with
     a ``multiprocessing.util.Finalize`` as fall-back. A missing dump is an error.

   Each function's own time (tottime) goes to a category chosen by its file and name; a
   function of a shared module (``multiprocessing.connection``, ``threading``,
   ``socket``, ``json``, ``urllib.parse``, pickling...) is charged to its callers'
   categories, in proportion to the time of each caller's calls. Per role: ms of CPU
   per page (pages = HTML pages converted) and % of the role's profile; ``scaled``:
   scaled uniformly to the role's unprofiled CPU of run 1; for fetchers
   ``calibr.``: each page-work step and the HTTP client divided by its own measured
   inflation (measured in each run: a step in Python inflates several times, one in C
   about 1x), the other
   categories by the fetcher's overall inflation, and what remains of the unprofiled
   fetcher CPU is shown as unattributed. Also the top functions by own time, the top
   functions outside page work, and inclusive times of chosen entry points; a
   cross-check of profile totals against psutil CPU (profiled and unprofiled runs).

Last, claims: from the 2-worker crawl's edges, the in-scope links of each page (what
``settle`` would carry unfiltered) and how many repeat; from the probes, the links
actually sent and how many of them could only lose. And, from run 1, the dispatcher's
and the manager's CPU share and the rate at which each (one process) would fill one
core. Full run about 3 minutes on 2 idle cores. Timings on a shared machine are noisy.

Outputs: the tables on stdout, everything in ``bench/results/profile.json``; the pstats
dumps (``ROLE-PID-THREADKIND.prof``, marshal format: ``pstats.Stats(path)`` reads them)
are kept with ``--keep DIR``.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import datetime
import json
import marshal
import multiprocessing.managers
import multiprocessing.queues
import multiprocessing.util
import os
import platform
import shutil
import sys
import tempfile
import threading
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from nginx import Nginx, nginx_binary  # noqa: E402
from page_work import best_ms_per_page  # noqa: E402

import crawler.engine.dispatcher  # noqa: E402
import crawler.engine.pool  # noqa: E402
import crawler.engine.visited  # noqa: E402
import crawler.engine.worker  # noqa: E402
import crawler.output.writers  # noqa: E402
import crawler.web.fetch  # noqa: E402
import crawler.web.scope  # noqa: E402
from crawler.api import crawl  # noqa: E402
from crawler.config import CrawlConfig  # noqa: E402
from crawler.content.document import parse  # noqa: E402
from crawler.content.links import effective_base, link_targets, links_of  # noqa: E402
from crawler.content.neardup import simhash  # noqa: E402
from crawler.engine.worker import page_markdown  # noqa: E402
from crawler.output.shards import iter_records  # noqa: E402
from crawler.web.decode import decode_html  # noqa: E402
from crawler.web.fetch import HttpClient  # noqa: E402
from crawler.web.urlnorm import RequestUrlMemo  # noqa: E402

QUICK = bool(os.environ.get("BENCH_QUICK"))
ROLES = ("dispatcher", "manager", "fetcher")

# --------------------------------------------------------------------------------------
# Profiling every thread of every process (fork only)
# --------------------------------------------------------------------------------------


class _State:
    """Profiling state of this process (a forked child gets a copy, reset at fork)."""

    active = False  # profiling is on (set in the dispatcher; inherited by children)
    builtins = False  # profile C functions as their own entries
    out_dir = ""  # where each process dumps its stats
    role = "dispatcher"
    main: cProfile.Profile | None = None  # this process's main-thread profiler
    profilers: list = []  # [(thread kind, Profile)] of this process
    dumped = False


STATE = _State()


def _new_profiler(kind: str) -> cProfile.Profile:
    prof = cProfile.Profile(time.thread_time_ns, 1e-9, builtins=STATE.builtins)
    STATE.profilers.append((kind, prof))
    return prof


def _thread_kind(thread: threading.Thread) -> str:
    """A label for the threads whose stats are merged in one dump."""
    name = thread.name
    if isinstance(thread, threading.Timer) or name == "deadlines":
        return "timer"  # the fetch watchdog: crawler.web.deadlines' thread (a Timer per GET before)
    if name.startswith("fetcher-"):
        return "worker"
    if name == "QueueFeederThread":
        return "feeder"
    if name.endswith("(handle_request)"):
        return "server"  # a manager connection (renamed later by the manager)
    if name.endswith("(accepter)"):
        return "accepter"
    return "thread"


def _thread_hook(frame, event, arg) -> None:
    """``threading.setprofile`` hook: runs at a new thread's first event and replaces
    itself with a cProfile profiler for that thread."""
    sys.setprofile(None)
    if STATE.active:
        _new_profiler(_thread_kind(threading.current_thread())).enable()


def _after_fork_child() -> None:
    """In a forked child: drop the profiler inherited from the dispatcher's main thread
    and profile this process's main thread afresh."""
    if not STATE.active:
        return
    if STATE.main is not None:
        STATE.main.disable()
    STATE.profilers = []
    STATE.role = "child"
    STATE.dumped = False
    STATE.main = _new_profiler("main")
    STATE.main.enable()


os.register_at_fork(after_in_child=_after_fork_child)


def _dump() -> None:
    """Write this process's stats, one file per thread kind (threads of one kind merged).
    Profilers of threads still running are read without stopping them."""
    if STATE.dumped or not STATE.active:
        return
    STATE.dumped = True
    merged: dict[str, dict] = {}
    threads: collections.Counter = collections.Counter()
    for kind, prof in list(STATE.profilers):
        prof.snapshot_stats()  # getstats() without disable(): safe for a live thread
        target = merged.setdefault(kind, {})
        threads[kind] += 1
        for func, stat in prof.stats.items():
            target[func] = _add_stat(target[func], stat) if func in target else stat
    for kind, stats in merged.items():
        path = os.path.join(STATE.out_dir, f"{STATE.role}-{os.getpid()}-{kind}.prof")
        with open(path + ".tmp", "wb") as f:
            marshal.dump(stats, f)
        os.replace(path + ".tmp", path)
        with open(path + ".threads", "w") as f:
            f.write(str(threads[kind]))


def _add_stat(a, b):
    """pstats.add_func_stats, without importing pstats in the children."""
    cc, nc, tt, ct, callers = b
    callers_a = dict(a[4])
    for func, edge in callers.items():
        callers_a[func] = tuple(x + y for x, y in zip(callers_a[func], edge)) if func in callers_a else edge
    return (a[0] + cc, a[1] + nc, a[2] + tt, a[3] + ct, callers_a)


_ORIGINAL_FETCHER_MAIN = crawler.engine.pool.fetcher_main
_ORIGINAL_MANAGER_INIT = crawler.engine.visited.child_signals
_ORIGINAL_SERVER_SHUTDOWN = multiprocessing.managers.Server.shutdown


def _profiled_fetcher_main(*args, **kwargs):
    STATE.role = "fetcher"
    try:
        return _ORIGINAL_FETCHER_MAIN(*args, **kwargs)
    finally:
        _dump()


def _profiled_server_shutdown(self, c):
    _dump()  # before the reply: the parent joins the manager for 1 s only after it
    return _ORIGINAL_SERVER_SHUTDOWN(self, c)


def _profiled_manager_init():
    _ORIGINAL_MANAGER_INIT()
    STATE.role = "manager"
    if STATE.active:
        # patched in this (forked) manager process only
        multiprocessing.managers.Server.shutdown = _profiled_server_shutdown
        multiprocessing.util.Finalize(None, _dump, exitpriority=100)


def profiled_crawl(config: CrawlConfig, out_dir: str, builtins: bool) -> dict:
    """``crawl(config)`` with every thread of every process under cProfile."""
    STATE.active, STATE.builtins, STATE.out_dir = True, builtins, out_dir
    STATE.role, STATE.profilers, STATE.dumped = "dispatcher", [], False
    crawler.engine.pool.fetcher_main = _profiled_fetcher_main
    crawler.engine.visited.child_signals = _profiled_manager_init
    STATE.main = _new_profiler("main")
    threading.setprofile(_thread_hook)
    STATE.main.enable()
    try:
        return crawl(config)
    finally:
        STATE.main.disable()
        threading.setprofile(None)
        _dump()
        STATE.active, STATE.main, STATE.profilers = False, None, []
        crawler.engine.pool.fetcher_main = _ORIGINAL_FETCHER_MAIN
        crawler.engine.visited.child_signals = _ORIGINAL_MANAGER_INIT


# --------------------------------------------------------------------------------------
# Probes for run 1: thread-CPU timers around a few fetcher functions (no profiler)
# --------------------------------------------------------------------------------------

#: (module, class or None, attribute, label): each call's thread CPU is summed per label
#: in each fetcher. Inclusive times; the page-work labels are bench/page_work.py's
#: steps. A target missing from the crawler's code is skipped (and listed).
PROBE_TARGETS = (
    ("crawler.engine.worker", "PageProcessor", "run", "PageProcessor.run (one task)"),
    ("crawler.web.fetch", "HttpClient", "get", "HttpClient.get"),
    ("crawler.engine.worker", None, "decode_html", "decode"),
    ("crawler.engine.worker", None, "parse", "parse (lxml)"),
    ("crawler.engine.worker", None, "links_of", "links from the tree"),
    ("crawler.engine.worker", None, "link_targets", "resolve + normalize"),
    ("crawler.engine.worker", None, "effective_base", "effective_base (markdown step)"),
    ("crawler.engine.worker", None, "page_markdown", "main content + markdown"),
    ("crawler.engine.worker", None, "simhash", "simhash"),
    ("crawler.engine.worker", None, "markdown_fingerprint", "Markdown fingerprint"),
    ("crawler.web.scope", "Scope", "__contains__", "scope check"),
    ("crawler.engine.visited", "OfferedKeys", "first_offer", "OfferedKeys.first_offer"),
    ("crawler.output.writers", "RecordWriter", "write", "record + edges write"),
    ("crawler.engine.visited", "VisitedProxy", "settle", "visited table settle"),
    ("crawler.engine.visited", "VisitedProxy", "register_content", "visited table register_content"),
    ("crawler.engine.worker", "ResultSender", "put", "result send"),
    ("multiprocessing.queues", "Queue", "get", "task queue get"),
)
_PROBE_SUMS: list[dict] = []  # one dict per thread: label -> [calls, seconds]
_probe_local = threading.local()


def _probe_sums() -> dict:
    sums = getattr(_probe_local, "sums", None)
    if sums is None:
        sums = _probe_local.sums = {}
        _PROBE_SUMS.append(sums)
    return sums


def _probe(label: str, fn):
    clock = time.thread_time

    def probed(*args, **kwargs):
        started = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            _count(label, clock() - started)

    return probed


def _count(label: str, amount: float) -> None:
    """A probe row used as a counter: [calls, summed amount]."""
    sums = _probe_sums()
    row = sums.get(label)
    if row is None:
        row = sums[label] = [0, 0.0]
    row[0] += 1
    row[1] += amount


def _settle_probe(timed):
    """The settle probe, counting the links sent and the pickled size of the arguments
    (outside the timed call)."""
    from multiprocessing.reduction import ForkingPickler

    def settle(self, *args, **kwargs):
        links = list(args[2]) if len(args) > 2 else list(kwargs.get("links", ()))
        _count("(settle: links sent)", len(links))
        _count("(settle: pickled argument bytes)", len(ForkingPickler.dumps(args)))
        return timed(self, *args, **kwargs)

    return settle


def _probed_fetcher_main(*args, **kwargs):
    _PROBE_SUMS.clear()  # a forked copy of the dispatcher's lists
    _probe_local.__dict__.pop("sums", None)
    try:
        return _ORIGINAL_FETCHER_MAIN(*args, **kwargs)
    finally:
        totals: dict[str, list] = {}
        for sums in list(_PROBE_SUMS):
            for label, (calls, seconds) in sums.items():
                row = totals.setdefault(label, [0, 0.0])
                row[0] += calls
                row[1] += seconds
        path = os.path.join(STATE.out_dir, f"probe-{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump({"process_cpu_s": time.process_time(), "probes": totals}, f)


def _probe_owner(module: str, cls: str | None):
    mod = sys.modules.get(module) or __import__(module, fromlist=["_"])
    return mod if cls is None else getattr(mod, cls, None)


def probed_crawl(config: CrawlConfig, out_dir: str) -> dict:
    """``crawl(config)`` with the probes in every fetcher; one JSON per fetcher in
    ``out_dir``."""
    saved = []
    STATE.out_dir = out_dir
    try:
        for module, cls, name, label in PROBE_TARGETS:
            owner = _probe_owner(module, cls)
            original = getattr(owner, name, None) if owner is not None else None
            if original is None:
                continue
            saved.append((owner, name, original))
            wrapped = _probe(label, original)
            setattr(owner, name, _settle_probe(wrapped) if label == "visited table settle" else wrapped)
        crawler.engine.pool.fetcher_main = _probed_fetcher_main
        return crawl(config)
    finally:
        crawler.engine.pool.fetcher_main = _ORIGINAL_FETCHER_MAIN
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def missing_probes() -> list[str]:
    return [
        label for module, cls, name, label in PROBE_TARGETS if getattr(_probe_owner(module, cls), name, None) is None
    ]


def probe_cost_us() -> float:
    """Thread CPU microseconds one probe adds to a call (best of 5 x 20,000 calls)."""

    def nothing():
        return None

    probed = _probe("(cost)", nothing)
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        for _ in range(20000):
            probed()
        plain = time.thread_time()
        for _ in range(20000):
            nothing()
        best = min(best, (plain - started) - (time.thread_time() - plain))
    _probe_sums().pop("(cost)", None)
    return best / 20000 * 1e6


def load_probes(probe_dir: str, pages: int) -> dict:
    """The fetchers' probe sums: ms of thread CPU and calls per page."""
    totals: dict[str, list] = {}
    cpu = 0.0
    files = 0
    for name in os.listdir(probe_dir):
        if name.startswith("probe-") and name.endswith(".json"):
            with open(os.path.join(probe_dir, name)) as f:
                data = json.load(f)
            files += 1
            cpu += data["process_cpu_s"]
            for label, (calls, seconds) in data["probes"].items():
                row = totals.setdefault(label, [0, 0.0])
                row[0] += calls
                row[1] += seconds
    counters = {
        label: {"calls": calls, "total": amount, "per_call": round(amount / calls, 1) if calls else None}
        for label, (calls, amount) in totals.items()
        if label.startswith("(")
    }
    return {
        "fetchers": files,
        "process_cpu_ms_per_page": round(cpu * 1000 / pages, 3),
        "probes": {
            label: {"calls_per_page": round(calls / pages, 2), "ms_per_page": round(seconds * 1000 / pages, 4)}
            for label, (calls, seconds) in sorted(totals.items(), key=lambda kv: _ORDER.get(kv[0], 99))
            if not label.startswith("(")
        },
        "counters": counters,
        "missing": missing_probes(),
    }


_ORDER = {label: n for n, (_, _, _, label) in enumerate(PROBE_TARGETS)}


# --------------------------------------------------------------------------------------
# Charging profile time to categories
# --------------------------------------------------------------------------------------

PAGE_MD = "page work: main content + markdown"
PAGE_EXTRACT = "page work: parse + links from the tree (lxml)"
PAGE_SIMHASH = "page work: SimHash"
PAGE_LINKS = "page work: resolve + normalize links"
PAGE_DECODE = "page work: decode (w3lib)"
PAGE_WRITE = "page work: JSON record + file write"
EXTRA = "page extras: scope check, Markdown fingerprint"
GLUE = "fetcher: task loop, record dict, glue"
HTTP = "HTTP client: requests, urllib3, http.client, socket"
HTTP_TIMER = "HTTP client: deadline timer thread"
IPC = "IPC: task queue, result pipe, pickling"
TABLE_PROXY = "visited table: proxy round trips"
TABLE_SERVE = "visited table: manager serve loop, connections, pickling"
TABLE_LOGIC = "visited table: claims/marks, URL fingerprints"
DISPATCH = "dispatcher: frontier, scheduling, counters"
MONITOR = "dispatcher: psutil process monitor"
PROCS = "process start/stop (fork, join)"
OUTPUTS = "end of crawl: edges merge, tree, summary"
WAIT = "locks/waits/select (their CPU)"
PROFILER = "profiler bookkeeping (this script)"
OTHER = "other"

#: Categories grouped as the leftover split names them.
GROUP = {
    PAGE_MD: "page work",
    PAGE_EXTRACT: "page work",
    PAGE_LINKS: "page work",
    PAGE_DECODE: "page work",
    PAGE_WRITE: "page work",
    PAGE_SIMHASH: "page work",
    HTTP: "HTTP",
    HTTP_TIMER: "HTTP",
    IPC: "IPC",
    TABLE_PROXY: "table",
    TABLE_SERVE: "table",
    TABLE_LOGIC: "table",
    WAIT: "waits",
    EXTRA: "other",
    GLUE: "other",
    DISPATCH: "other",
    MONITOR: "other",
    PROCS: "other",
    OUTPUTS: "other",
    PROFILER: "other",
    OTHER: "other",
}
PAGE_CATEGORIES = (PAGE_MD, PAGE_EXTRACT, PAGE_LINKS, PAGE_DECODE, PAGE_WRITE, PAGE_SIMHASH)

#: Where a thread's time goes when no caller owns it, by (role, thread kind).
ROOT_DEFAULT = {("dispatcher", "feeder"): IPC, ("fetcher", "timer"): HTTP_TIMER}
ROLE_DEFAULT = {"dispatcher": DISPATCH, "fetcher": GLUE, "manager": TABLE_SERVE}

_WAIT_NAMES = ("wait", "acquire", "join", "_wait_for_tstate_lock", "poll", "select", "sleep")


def _has(path: str, *parts: str) -> bool:
    return any(p in path for p in parts)


def owner(func: tuple, role: str) -> str | None:
    """The category that owns ``func``'s own time, or None: charge it to its callers."""
    path, _line, name = func
    path = path.replace(os.sep, "/")
    if path == "~":  # a builtin (only with --builtins)
        return WAIT if any(w in name for w in ("acquire", "poll", "select", "sleep", "wait")) else None
    if path.endswith("/bench/profile_crawl.py") or _has(path, "/cProfile.py", "/pstats.py"):
        return PROFILER
    if _has(
        path,
        *("/crawler/content/markdown.py", "/crawler/content/main.py", "/crawler/content/fragment.py"),
        *("/crawler/content/escapes.py", "/crawler/content/convert.py", "/html_to_markdown/", "/trafilatura/"),
        *("/html2text/", "/html/parser.py", "/_markupbase.py", "/html/__init__.py"),
    ):
        return PAGE_MD
    if path.endswith("/crawler/content/links.py"):
        return PAGE_LINKS if name in ("link_targets", "resolve_links") else PAGE_EXTRACT
    if path.endswith("/crawler/content/document.py"):
        return PAGE_EXTRACT
    if path.endswith("/crawler/content/neardup.py"):
        return PAGE_SIMHASH
    if "/lxml/" in path:
        return None  # lxml's Python helpers: charged to the step that called them
    if _has(path, "/crawler/web/decode.py", "/w3lib/"):
        return PAGE_DECODE
    if path.endswith("/crawler/output/writers.py"):
        return PAGE_WRITE
    if path.endswith("/crawler/web/urlnorm.py"):
        return {"manager": TABLE_LOGIC, "fetcher": PAGE_LINKS}.get(role, DISPATCH)
    if path.endswith("/crawler/web/scope.py"):
        return EXTRA if role == "fetcher" else ROLE_DEFAULT.get(role, OTHER)
    if path.endswith("/crawler/engine/worker.py"):
        if name == "markdown_fingerprint":
            return EXTRA
        return IPC if name == "put" else GLUE  # ResultSender.put: the result pipe
    if _has(
        path,
        "/crawler/web/fetch.py",
        "/requests/",
        "/urllib3/",
        "/http/client.py",
        "/http/cookiejar.py",
        "/email/",
        "/certifi/",
        "/charset_normalizer/",
    ):
        return HTTP
    if _has(path, "/crawler/engine/visited.py"):
        return TABLE_LOGIC if role == "manager" else TABLE_PROXY
    if path.endswith("/multiprocessing/managers.py"):
        return TABLE_SERVE if role == "manager" else TABLE_PROXY
    if path.endswith("/multiprocessing/queues.py"):
        return IPC
    if path.endswith("/crawler/engine/dispatcher.py"):
        if name in ("_shutdown", "start", "_start_fetcher"):
            return PROCS
        return IPC if name == "_receive" else DISPATCH
    if _has(path, "/psutil/") or (
        path.endswith("/crawler/engine/stats.py") and name in ("sample", "set_role", "by_role", "cpu_s")
    ):
        return MONITOR
    if path.endswith("/crawler/api.py") and name in ("finish_outputs", "never_claimed"):
        return OUTPUTS
    if path.endswith("/crawler/output/graph.py"):
        return OUTPUTS
    if path.endswith("/multiprocessing/connection.py") and name == "wait":
        return WAIT
    if _has(path, "/multiprocessing/popen_fork.py", "/multiprocessing/process.py"):
        return PROCS
    if path.endswith("/threading.py") and name in _WAIT_NAMES:
        return WAIT
    if path.endswith("/selectors.py"):
        return WAIT
    if "/crawler/" in path:  # api.crawl, frontier, messages, stats counters, signals, config
        return ROLE_DEFAULT.get(role, OTHER)
    return None


def categorize(stats: dict, role: str, kind: str) -> dict:
    """Seconds of own time per function and category for one dump (one thread kind of
    one process): ``{func: Counter(category -> seconds)}``."""
    default = ROOT_DEFAULT.get((role, kind), ROLE_DEFAULT.get(role, OTHER))
    memo: dict[tuple, dict] = {}

    def shares(func, depth=0) -> dict:
        """Category -> fraction of ``func``'s inclusive time, following its callers."""
        if func in memo:
            return memo[func]
        memo[func] = {default: 1.0}  # cycle guard: a caller still being resolved
        own = HTTP_TIMER if kind == "timer" else owner(func, role)
        if own is not None or func not in stats or depth > 200:
            result = {own or default: 1.0}
        else:
            callers = stats[func][4]
            weights = {c: e[3] for c, e in callers.items()}
            total = sum(weights.values())
            if total <= 0:
                weights = {c: e[0] for c, e in callers.items()}
                total = sum(weights.values())
            if total <= 0:
                result = {default: 1.0}
            else:
                result = collections.defaultdict(float)
                for caller, w in weights.items():
                    for cat, share in shares(caller, depth + 1).items():
                        result[cat] += share * w / total
        memo[func] = dict(result)
        return memo[func]

    by_func: dict[tuple, collections.Counter] = {}
    for func, (_cc, _nc, tt, _ct, callers) in stats.items():
        out = by_func[func] = collections.Counter()
        own = HTTP_TIMER if kind == "timer" else owner(func, role)
        if own is not None:
            out[own] += tt
            continue
        placed = 0.0
        for caller, edge in callers.items():
            edge_tt = min(edge[2], tt - placed)
            if edge_tt <= 0:
                continue
            for cat, share in shares(caller).items():
                out[cat] += edge_tt * share
            placed += edge_tt
        if tt > placed:
            out[default] += tt - placed
    return by_func


#: Inclusive (cumulative) times worth showing, per role: (file suffix, function name).
ENTRY_POINTS = {
    "fetcher": [
        ("crawler/engine/worker.py", "run"),
        ("crawler/engine/worker.py", "_page"),
        ("crawler/engine/worker.py", "page_markdown"),
        ("crawler/content/main.py", "main_content"),
        ("crawler/content/convert.py", "convert"),
        ("crawler/content/document.py", "parse"),
        ("crawler/content/links.py", "links_of"),
        ("crawler/content/links.py", "link_targets"),
        ("crawler/web/decode.py", "decode_html"),
        ("crawler/output/writers.py", "write"),
        ("crawler/web/fetch.py", "get"),
        ("crawler/engine/worker.py", "_finish"),
        ("crawler/engine/visited.py", "settle"),
        ("multiprocessing/managers.py", "_callmethod"),
        ("multiprocessing/queues.py", "get"),
        ("crawler/engine/worker.py", "put"),
    ],
    "manager": [
        ("multiprocessing/managers.py", "serve_client"),
        ("crawler/engine/visited.py", "settle"),
        ("crawler/engine/visited.py", "claim_many"),
        ("crawler/engine/visited.py", "_group"),
        ("crawler/web/urlnorm.py", "fingerprint"),
        ("multiprocessing/connection.py", "recv"),
        ("multiprocessing/connection.py", "send"),
        ("multiprocessing/managers.py", "accepter"),
        ("multiprocessing/managers.py", "handle_request"),
    ],
    "dispatcher": [
        ("crawler/engine/dispatcher.py", "_loop"),
        ("crawler/engine/dispatcher.py", "_fill"),
        ("crawler/engine/dispatcher.py", "_receive"),
        ("crawler/engine/dispatcher.py", "_handle"),
        ("crawler/engine/dispatcher.py", "_progress"),
        ("crawler/engine/stats.py", "sample"),
        ("multiprocessing/queues.py", "_feed"),
        ("multiprocessing/queues.py", "put"),
        ("crawler/engine/dispatcher.py", "start"),
        ("crawler/engine/dispatcher.py", "_shutdown"),
        ("crawler/api.py", "finish_outputs"),
    ],
}


def label(func: tuple) -> str:
    path, line, name = func
    if path == "~":
        return name
    parts = path.replace(os.sep, "/").split("/")
    for anchor in ("site-packages", "python3.11", "main"):
        if anchor in parts:
            parts = parts[len(parts) - parts[::-1].index(anchor) :]
            break
    return f"{'/'.join(parts[-2:])}:{line}({name})"


def load_profiles(prof_dir: str) -> dict:
    """Per role: merged stats, per-category seconds, dump count, thread count."""
    roles: dict[str, dict] = {}
    for name in sorted(os.listdir(prof_dir)):
        if not name.endswith(".prof"):
            continue
        role, pid, kind = name[:-5].split("-", 2)
        with open(os.path.join(prof_dir, name), "rb") as f:
            stats = marshal.load(f)
        with open(os.path.join(prof_dir, name + ".threads")) as f:
            threads = int(f.read())
        r = roles.setdefault(
            role,
            {
                "stats": {},
                "categories": collections.Counter(),
                "by_func": collections.defaultdict(collections.Counter),
                "pids": set(),
                "threads": collections.Counter(),
            },
        )
        r["pids"].add(int(pid))
        r["threads"][kind] += threads
        for func, cats in categorize(stats, role, kind).items():
            r["categories"].update(cats)
            r["by_func"][func].update(cats)
        for func, stat in stats.items():
            r["stats"][func] = _add_stat(r["stats"][func], stat) if func in r["stats"] else stat
    return roles


def role_report(role: str, data: dict, pages: int, unprofiled_ms: float | None) -> dict:
    """ms/page per category, top functions and entry points of one role."""
    total_s = sum(data["categories"].values())
    scale = (unprofiled_ms / (total_s * 1000 / pages)) if unprofiled_ms and total_s else None
    cats = {}
    for cat, sec in sorted(data["categories"].items(), key=lambda kv: -kv[1]):
        ms = sec * 1000 / pages
        cats[cat] = {
            "ms_per_page": round(ms, 3),
            "share": round(sec / total_s, 4) if total_s else 0,
            "scaled_ms_per_page": round(ms * scale, 3) if scale else None,
            "group": GROUP[cat],
        }
    stats = data["stats"]
    by_func = data["by_func"]

    def row(func) -> dict:
        _cc, nc, tt, ct, _callers = stats[func]
        cats = by_func.get(func) or {}
        main = max(cats, key=cats.get) if cats else "?"
        return {
            "function": label(func),
            "own_ms_per_page": round(tt * 1000 / pages, 3),
            "incl_ms_per_page": round(ct * 1000 / pages, 3),
            "calls_per_page": round(nc / pages, 2),
            "category": main,
            "charged_to_callers": owner(func, role) is None,
        }

    top = [row(f) for f in sorted(stats, key=lambda f: -stats[f][2])[:15]]
    non_page = {f: sum(v for c, v in by_func.get(f, {}).items() if GROUP[c] != "page work") for f in stats}
    top_non_page = []
    for f in sorted(non_page, key=lambda f: -non_page[f])[:20]:
        if non_page[f] <= 0:
            break
        outside = {c: v for c, v in by_func[f].items() if GROUP[c] != "page work"}
        top_non_page.append(
            dict(
                row(f),
                category=max(outside, key=outside.get),
                non_page_ms_per_page=round(non_page[f] * 1000 / pages, 3),
            )
        )
    entries = []
    for suffix, name in ENTRY_POINTS.get(role, []):
        found = [(s[1], s[3]) for f, s in stats.items() if f[2] == name and f[0].replace(os.sep, "/").endswith(suffix)]
        if found:
            entries.append(
                {
                    "function": f"{suffix}({name})",
                    "calls_per_page": round(sum(n for n, _ in found) / pages, 2),
                    "incl_ms_per_page": round(sum(c for _, c in found) * 1000 / pages, 3),
                }
            )
    return {
        "processes": len(data["pids"]),
        "threads": dict(data["threads"]),
        "profiled_ms_per_page": round(total_s * 1000 / pages, 3),
        "scale_to_unprofiled": round(scale, 4) if scale else None,
        "categories": cats,
        "top_functions": top,
        "top_non_page_work": top_non_page,
        "entry_points": entries,
    }


# --------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------


def code_version() -> dict:
    """The crawler code measured: git HEAD, files of crawler/ changed since, and a hash
    of crawler/*.py as they are on disk now."""
    import hashlib
    import subprocess

    repo = os.path.dirname(HERE)
    digest = hashlib.sha1()
    package = os.path.join(repo, "crawler")
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())

    def git(*cmd) -> str:
        try:
            return subprocess.run(["git", "-C", repo, *cmd], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "head": git("rev-parse", "--short", "HEAD"),
        "changed_since_head": git("status", "--porcelain", "--", "crawler").splitlines(),
        "crawler_sha1": digest.hexdigest()[:12],
    }


def html_files(root: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root, followlinks=True) for f in fs if f.endswith(".html"))


def page_items(root: str, every: int = 1) -> tuple[list, list]:
    """bench/page_work.py's items: ``(url, body)`` and ``(url, text, PageLinks,
    Markdown)`` of every ``every``-th HTML file under ``root``, read from disk first."""
    files = html_files(root)[::every]
    bodies = []
    for path in files:
        with open(path, "rb") as f:
            bodies.append(("http://127.0.0.1/" + os.path.relpath(path, root), f.read()))
    pages = []
    for url, body in bodies:
        text = decode_html(body, "text/html")[0]
        page = links_of(parse(text))
        pages.append((url, text, page, page_markdown(text, effective_base(url, page))[0].markdown))
    return bodies, pages


#: The fetcher's page work, as bench/page_work.py times it: name -> (function of one
#: item, profile category, items: "bodies", "texts", "trees" (fresh ones: the main
#: content changes its tree), "pages" or "markdowns").
PAGE_STEPS = {
    "decode": (lambda item: decode_html(item[1], "text/html"), PAGE_DECODE, "bodies"),
    "parse (lxml)": (lambda item: parse(item[1]), PAGE_EXTRACT, "pages"),
    "links from the tree": (lambda item: links_of(item[4]), PAGE_EXTRACT, "trees"),
    "resolve + normalize": (lambda item: link_targets(item[0], item[2], _MEMO[0]), PAGE_LINKS, "memo"),
    "main content + markdown": (
        lambda item: page_markdown(item[1], effective_base(item[0], item[2]), root=item[4]),
        PAGE_MD,
        "trees",
    ),
    "simhash": (lambda item: simhash(item[3]), PAGE_SIMHASH, "pages"),
    "json record": (lambda item: json.dumps({"markdown": item[3]}, ensure_ascii=False), PAGE_WRITE, "pages"),
}


#: The request-URL memo of the resolve step: a fetcher keeps one; each round starts empty.
_MEMO = [RequestUrlMemo()]


def _step_items(kind: str, bodies: list, pages: list):
    if kind == "bodies":
        return bodies
    if kind == "memo":

        def fresh_memo() -> list:
            _MEMO[0] = RequestUrlMemo()
            return pages

        return fresh_memo
    if kind == "trees":
        return lambda: [(*page, parse(page[1])) for page in pages]
    return pages


def _page_steps_ms(bodies, pages, rounds: int) -> dict:
    return {
        name: best_ms_per_page(fn, _step_items(kind, bodies, pages), rounds)
        for name, (fn, _cat, kind) in PAGE_STEPS.items()
    }


def _page_steps_child(bodies, pages, conn) -> None:
    conn.send(_page_steps_ms(bodies, pages, 1))
    conn.close()


def _interleaved_ms(bodies) -> dict:
    """The same steps run page by page, one after the other, as a fetcher runs them
    (bench/page_work.py runs each step over all pages in turn); thread CPU, one round."""
    clock = time.thread_time
    spent = dict.fromkeys(PAGE_STEPS, 0.0)
    memo = RequestUrlMemo()
    for url, body in bodies:
        t0 = clock()
        text = decode_html(body, "text/html")[0]
        t1 = clock()
        root = parse(text)
        t2 = clock()
        page = links_of(root)
        t3 = clock()
        markdown = page_markdown(text, effective_base(url, page), root=root)[0].markdown
        t4 = clock()
        link_targets(url, page, memo)
        t5 = clock()
        simhash(markdown)
        t6 = clock()
        json.dumps({"markdown": markdown}, ensure_ascii=False)
        t7 = clock()
        times = (t1 - t0, t2 - t1, t3 - t2, t5 - t4, t4 - t3, t6 - t5, t7 - t6)  # in PAGE_STEPS' order
        for name, dt in zip(PAGE_STEPS, times):
            spent[name] += dt
    return {name: sec * 1000 / len(bodies) for name, sec in spent.items()}


def page_work(root: str, rounds: int, parallel: int) -> dict:
    """The steps of bench/page_work.py (same items, same timing), best of ``rounds``;
    then once interleaved page by page; then (``parallel`` > 1) once in ``parallel``
    forked processes at the same time (every core busy, as in a crawl), their mean."""
    bodies, pages = page_items(root)
    rows = _page_steps_ms(bodies, pages, rounds)
    interleaved = _interleaved_ms(bodies)
    result = {
        "files": len(bodies),
        "rounds": rounds,
        "steps_ms_per_page": rows,
        "total_ms_per_page": sum(rows.values()),
        "interleaved": {"steps_ms_per_page": interleaved, "total_ms_per_page": sum(interleaved.values())},
    }
    if parallel > 1:
        ctx = multiprocessing.get_context("fork")
        children = []
        for _ in range(parallel):
            reader, writer = ctx.Pipe(duplex=False)
            child = ctx.Process(target=_page_steps_child, args=(bodies, pages, writer))
            child.start()
            writer.close()
            children.append((child, reader))
        got = []
        for child, reader in children:
            got.append(reader.recv())
            child.join()
        mean = {name: sum(g[name] for g in got) / len(got) for name in rows}
        result["parallel"] = {"processes": parallel, "steps_ms_per_page": mean, "total_ms_per_page": sum(mean.values())}
    return result


def thread_cpu_ms(fn, items, rounds: int) -> float:
    """Best of ``rounds``: CPU ms of this thread per item."""
    return best_ms_per_page(fn, items, rounds, clock=time.thread_time)


def profiled_ms(fn, items, builtins: bool) -> float:
    """ms per item that the crawl's profiler (same clock and settings) reports."""
    prof = cProfile.Profile(time.thread_time_ns, 1e-9, builtins=builtins)
    prof.enable()
    for item in items:
        fn(item)
    prof.disable()
    prof.create_stats()
    return sum(stat[2] for stat in prof.stats.values()) * 1000 / len(items)


def calibrate(root: str, every: int, server: Nginx, builtins: bool, threads: int) -> dict:
    """The profiler's inflation per page-work step and for the HTTP client: the same
    work timed unprofiled (thread CPU, best of 3) and under the crawl's profiler, on
    every ``every``-th file (GETs from nginx for the HTTP client)."""
    bodies, pages = page_items(root, every)
    rows = {}
    for name, (fn, cat, kind) in PAGE_STEPS.items():
        items = _step_items(kind, bodies, pages)
        items = items() if callable(items) else items
        plain = thread_cpu_ms(fn, items, 3)
        prof = profiled_ms(fn, items, builtins)
        rows[cat] = {
            "step": name,
            "unprofiled_ms": round(plain, 4),
            "profiled_ms": round(prof, 4),
            "inflation": round(prof / plain, 3) if plain > 0 else None,
        }
    client = HttpClient.from_config(make_config(server.url("/index.html"), "", 1, threads))
    urls = [server.url("/" + url.split("/", 3)[3]) for url, _ in bodies]
    try:
        get = client.get
        plain = thread_cpu_ms(get, urls, 3)
        prof = profiled_ms(get, urls, builtins)
    finally:
        client.close()
    rows[HTTP] = {
        "step": "HttpClient.get (main thread only)",
        "unprofiled_ms": round(plain, 4),
        "profiled_ms": round(prof, 4),
        "inflation": round(prof / plain, 3),
    }
    return {"every": every, "pages": len(bodies), "by_category": rows}


def http_alone(server: Nginx, urls: list[str], threads: int, rounds: int) -> dict:
    """CPU of HttpClient.get alone, one thread, keep-alive: process CPU (the watchdog
    deadline timer thread included) per GET, best of ``rounds`` over ``urls``."""
    client = HttpClient.from_config(make_config(server.url("/index.html"), "", 1, threads))
    try:
        best = float("inf")
        for _ in range(rounds):
            started = time.process_time()
            for url in urls:
                client.get(url)
            best = min(best, time.process_time() - started)
    finally:
        client.close()
    return {"gets": len(urls), "rounds": rounds, "ms_per_get": round(best * 1000 / len(urls), 4)}


def page_urls(out: str) -> list[str]:
    """The request URLs of a crawl's page records (those with Markdown)."""
    return [record["request_url"] for record in iter_records(out) if record["markdown"] is not None]


def make_config(seed: str, out: str, workers: int, threads: int, per_host: int | None = None) -> CrawlConfig:
    return CrawlConfig(
        seeds=(seed,),
        out_dir=out,
        workers=workers,
        threads=threads,
        start_method="fork",
        progress_interval_s=3600.0,
        per_host=per_host,
    )


def own_cpu_s() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


def run_crawl(
    server: Nginx,
    tmp: str,
    tag: str,
    workers: int,
    threads: int,
    prof_dir: str | None = None,
    builtins: bool = False,
    probes: bool = False,
    per_host: int | None = None,
) -> dict:
    """One in-process crawl; CPU per role (dispatcher corrected for this process's
    earlier CPU, nginx apart). ``per_host``: the crawl's ``--per-host`` (``None``: the
    default adaptive crawl delay)."""
    out = os.path.join(tmp, tag)
    config = make_config(server.url("/index.html"), out, workers, threads, per_host)
    server.requests()
    nginx_before = server.cpu_s()
    before_psutil, before_pt = own_cpu_s(), time.process_time()
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    probe_dir = os.path.join(tmp, tag + "-probes")
    if prof_dir is not None:
        summary = profiled_crawl(config, prof_dir, builtins)
    elif probes:
        os.makedirs(probe_dir)
        summary = probed_crawl(config, probe_dir)
    else:
        summary = crawl(config)
    wall = time.monotonic() - started
    crawl_call_cpu = time.process_time() - before_pt
    hits = server.requests()
    procs = summary["processes"]
    cpu = {role: procs.get(role, {}).get("cpu_s", 0.0) for role in ROLES}
    cpu["dispatcher"] = max(0.0, cpu["dispatcher"] - before_psutil)
    pages = summary["pages"]
    total = sum(cpu.values())
    return {
        "tag": tag,
        "workers": workers,
        "threads": threads,
        "per_host": per_host,
        "profiled": prof_dir is not None,
        "pages": pages,
        "claimed": summary["claimed"],
        "failed": summary["failed"],
        "reconciled": summary["reconciled"],
        "wall_s": summary["wall_s"],
        "call_wall_s": round(wall, 3),
        "pages_per_s": summary["pages_per_s"],
        "requests": sum(hits.values()),
        "duplicate_requests": sum(hits.values()) - len(hits),
        "cpu_s": {r: round(c, 3) for r, c in cpu.items()},
        "cpu_total_s": round(total, 3),
        "ms_per_page": {r: round(c * 1000 / pages, 3) for r, c in cpu.items()},
        "share": {r: round(c / total, 4) for r, c in cpu.items()},
        "total_ms_per_page": round(total * 1000 / pages, 3),
        "dispatcher_crawl_call_cpu_s": round(crawl_call_cpu, 3),
        "nginx_cpu_s": round(server.cpu_s() - nginx_before, 3),
        "processes": {r: procs.get(r, {}).get("processes", 0) for r in ROLES},
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "probes": load_probes(probe_dir, pages) if probes and prof_dir is None else None,
        "out": out,
    }


def run_line(label: str, run: dict) -> str:
    """One line of progress for a finished crawl of run 1."""
    return (
        f"{label}: {run['pages']} pages {run['wall_s']:.2f} s {run['pages_per_s']:.1f}/s "
        f"cpu {run['cpu_total_s']:.1f} s dups {run['duplicate_requests']} load {run['load_before']:.1f}"
    )


def claims_analysis(out: str, run: dict) -> dict:
    """Claims in the visited table. From the crawl's edges: the in-scope links of each
    page other than itself (what ``settle`` would carry with no filter in front of it),
    and their pickled size; from the probes, what the fetchers actually sent."""
    per_page: dict[str, list[str]] = collections.defaultdict(list)
    for name in sorted(os.listdir(out)):
        if name.startswith("edges-") and name.endswith(".tsv"):
            with open(os.path.join(out, name), encoding="utf-8") as f:
                for line in f:
                    source, target, kind, in_scope = line.rstrip("\n").split("\t")
                    if kind == "link" and in_scope == "1" and target != source:
                        per_page[source].append(target)
    claims = sum(len(v) for v in per_page.values())
    distinct = len({t for v in per_page.values() for t in v})
    from multiprocessing.reduction import ForkingPickler

    sizes = [
        len(ForkingPickler.dumps(("7f0000000000", "settle", (url, "visited", links), {})))
        for url, links in per_page.items()
    ]
    replies = [len(ForkingPickler.dumps(("#RETURN", [False] * len(links)))) for links in per_page.values()]
    result = {
        "edges": {
            "pages_with_links": len(per_page),
            "in_scope_links": claims,
            "per_page": round(claims / max(1, len(per_page)), 1),
            "distinct_targets": distinct,
            "repeats": claims - distinct,
            "repeat_share": round((claims - distinct) / claims, 4) if claims else 0,
            "settle_request_bytes_mean_unfiltered": round(sum(sizes) / max(1, len(sizes))),
            "settle_reply_bytes_mean_unfiltered": round(sum(replies) / max(1, len(replies))),
        },
        "claimed_in_table": run["claimed"],
    }
    counters = (run.get("probes") or {}).get("counters", {})
    sent = counters.get("(settle: links sent)")
    size = counters.get("(settle: pickled argument bytes)")
    if sent:
        won = max(0, (run["claimed"] or 0) - 1)  # every claimed URL but the seed came from a settle
        result["sent"] = {
            "settle_calls": sent["calls"],
            "links_sent": int(sent["total"]),
            "links_per_settle": sent["per_call"],
            "lost_claims_sent": int(sent["total"]) - won,
            "lost_share": round((sent["total"] - won) / sent["total"], 4) if sent["total"] else 0,
            "pickled_argument_bytes_per_settle": size["per_call"] if size else None,
        }
    return result


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------


def print_run1(runs: list[dict]) -> None:
    print("\nRun 1, no profiler (fastest run per worker count; CPU of dispatcher to the end of its loop):")
    print(
        f"  {'workers':>7} {'pages':>5} {'wall s':>7} {'pages/s':>8} "
        + "".join(f"{r + ' ms/pg (%)':>22}" for r in ROLES)
        + f" {'total ms/pg':>11}"
        + f" {'crawl() CPU s':>13} {'nginx s':>7}"
    )
    for run in runs:
        cols = "".join(f"{run['ms_per_page'][r]:>13.2f} ({run['share'][r] * 100:4.1f}%)  " for r in ROLES)
        print(
            f"  {run['workers']:>7} {run['pages']:>5} {run['wall_s']:>7.2f} "
            f"{run['pages_per_s']:>8.2f} {cols}{run['total_ms_per_page']:>10.2f}"
            f" {run['dispatcher_crawl_call_cpu_s']:>13.2f} {run['nginx_cpu_s']:>7.2f}"
        )
    for run in runs:
        if run.get("probes"):
            probes = run["probes"]
            print(
                f"  probes, {run['workers']} workers (fetcher thread CPU, inclusive; ms/page, calls/page;"
                f" fetcher process CPU at exit {probes['process_cpu_ms_per_page']:.2f} ms/page):"
            )
            for label, row in probes["probes"].items():
                print(f"    {label:<34} {row['ms_per_page']:8.3f} {row['calls_per_page']:8.2f}")


def print_profile(workers: int, report: dict) -> None:
    print(
        f"\nRun 2, cProfile (thread CPU clock) in every process, {workers} workers: "
        f"{report['pages']} pages, wall {report['wall_s']:.1f} s"
    )
    for role in ROLES:
        r = report["roles"].get(role)
        if r is None:
            print(f"  {role}: NO PROFILE DUMPED")
            continue
        print(
            f"  {role} ({r['processes']} process(es), threads {r['threads']}): profiled "
            f"{r['profiled_ms_per_page']:.2f} ms/page, unprofiled (run 1) "
            f"{report['unprofiled_ms_per_page'].get(role, float('nan')):.2f}, psutil in this "
            f"run {report['psutil_ms_per_page'][role]:.2f}"
        )
        calibrated = any("calibrated_ms_per_page" in row for row in r["categories"].values())
        print(
            f"    {'category':<58} {'ms/page':>8} {'%':>6} {'scaled':>7}" + (f" {'calibr.':>7}" if calibrated else "")
        )
        for cat, row in r["categories"].items():
            if row["ms_per_page"] < 0.005:
                continue
            scaled = f"{row['scaled_ms_per_page']:7.2f}" if row["scaled_ms_per_page"] is not None else ""
            calib = f" {row['calibrated_ms_per_page']:7.2f}" if "calibrated_ms_per_page" in row else ""
            print(f"    {cat:<58} {row['ms_per_page']:8.2f} {row['share'] * 100:6.1f} {scaled}{calib}")
        if "unattributed_ms_per_page" in r:
            print(
                f"    calibr.: page-work steps and HTTP client / their own inflation, the rest / "
                f"the fetcher's x{r['overall_inflation']}; unprofiled CPU beyond their sum: "
                f"{r['unattributed_ms_per_page']:.2f} ms/page"
            )
        print(
            "    top functions by own time (ms/page own, inclusive, calls/page) [category;"
            " * = a shared function charged to its callers]:"
        )
        for t in r["top_functions"][:8]:
            print(
                f"      {t['own_ms_per_page']:7.2f} {t['incl_ms_per_page']:8.2f} "
                f"{t['calls_per_page']:9.1f}  {t['function']}  [{t['category']}"
                f"{' *' if t['charged_to_callers'] else ''}]"
            )
        if role == "fetcher":
            print("    top functions outside page work (own ms/page outside page work):")
            for t in r["top_non_page_work"][:15]:
                print(
                    f"      {t['non_page_ms_per_page']:7.2f} {t['incl_ms_per_page']:8.2f} "
                    f"{t['calls_per_page']:9.1f}  {t['function']}  [{t['category']}"
                    f"{' *' if t['charged_to_callers'] else ''}]"
                )
        print("    entry points (inclusive ms/page, calls/page):")
        for e in r["entry_points"]:
            print(f"      {e['incl_ms_per_page']:8.2f} {e['calls_per_page']:8.2f}  {e['function']}")


# --------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument(
        "--profile-workers",
        type=int,
        nargs="*",
        default=[2],
        help="worker counts of the profiled runs (default 2; each takes about 4-5x a plain crawl's CPU)",
    )
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1, help="unprofiled runs per worker count (fastest reported)")
    parser.add_argument(
        "--pw-rounds", type=int, default=1 if QUICK else 2, help="rounds of the page-work timing (best reported)"
    )
    parser.add_argument(
        "--builtins", action="store_true", help="profile C functions as entries of their own (2x overhead)"
    )
    parser.add_argument(
        "--parallel-page-work", action="store_true", help="also time the page work in one process per core at once"
    )
    parser.add_argument(
        "--no-probes", action="store_true", help="run 1 without the thread-CPU probes around fetcher functions"
    )
    parser.add_argument("--keep", default=None, help="copy the .prof dumps here")
    args = parser.parse_args()
    profile_workers = args.profile_workers
    if nginx_binary() is None:
        print("profile_crawl: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    if not html_files(args.root):
        print(f"profile_crawl: no .html files under {args.root}", file=sys.stderr)
        return 2
    for var in [v for v in os.environ if v.lower().endswith("_proxy")]:
        os.environ.pop(var)  # requests (trust_env) would send every GET to a proxy
    cores = len(os.sched_getaffinity(0))
    started = time.monotonic()
    print(
        f"profile_crawl: {args.root}, {cores} cores, load {os.getloadavg()[0]:.2f}; "
        "shared machine: every timing below is noisy",
        flush=True,
    )
    version = code_version()
    print(
        f"crawler code: HEAD {version['head']}, {len(version['changed_since_head'])} file(s) of "
        f"crawler/ changed since, sha1 of crawler/*.py {version['crawler_sha1']}",
        flush=True,
    )

    pw = page_work(args.root, args.pw_rounds, cores if args.parallel_page_work else 0)
    print(
        f"page work alone ({pw['files']} files, best of {pw['rounds']}): "
        + ", ".join(f"{k} {v:.2f}" for k, v in pw["steps_ms_per_page"].items())
        + f"; total {pw['total_ms_per_page']:.2f} ms/page",
        flush=True,
    )
    inter = pw["interleaved"]
    print(
        "page work alone, steps interleaved page by page (one round): "
        + ", ".join(f"{k} {v:.2f}" for k, v in inter["steps_ms_per_page"].items())
        + f"; total {inter['total_ms_per_page']:.2f} ms/page",
        flush=True,
    )
    if "parallel" in pw:
        par = pw["parallel"]
        print(
            f"page work, {par['processes']} processes at once (one round each, mean): "
            + ", ".join(f"{k} {v:.2f}" for k, v in par["steps_ms_per_page"].items())
            + f"; total {par['total_ms_per_page']:.2f} ms/page",
            flush=True,
        )

    results: dict = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "code": version,
        "noisy": "shared 2-core machine with other CPU-heavy work running",
        "python": platform.python_version(),
        "cores": cores,
        "root": args.root,
        "threads": args.threads,
        "quick": QUICK,
        "page_work": pw,
    }
    tmp = tempfile.mkdtemp(prefix="profile-crawl-")
    try:
        with Nginx(args.root) as server:
            run1: dict[int, list[dict]] = collections.defaultdict(list)
            unthrottled: list[dict] = []
            base_workers = 2 if 2 in args.workers else args.workers[0]
            for n in range(args.runs):
                for workers in args.workers:
                    run = run_crawl(
                        server, tmp, f"plain-w{workers}-{n}", workers, args.threads, probes=not args.no_probes
                    )
                    run1[workers].append(run)
                    print(run_line(f"run 1 #{n} w={workers}", run), flush=True)
                # the same crawl without the adaptive crawl delay: what the politeness takes
                per_host = 2 * base_workers * args.threads
                run = run_crawl(
                    server, tmp, f"per-host-w{base_workers}-{n}", base_workers, args.threads, per_host=per_host
                )
                unthrottled.append(run)
                print(run_line(f"run 1 #{n} w={base_workers} --per-host {per_host}", run), flush=True)
            best = {w: max(runs, key=lambda r: r["pages_per_s"]) for w, runs in run1.items()}
            print_run1([best[w] for w in args.workers])
            results["run1"] = {
                "all": [r for w in args.workers for r in run1[w]],
                "best": {str(w): best[w] for w in args.workers},
                "per_host": {"all": unthrottled, "best": max(unthrottled, key=lambda r: r["pages_per_s"])},
            }

            if best[base_workers].get("probes"):
                calls = sum(r["calls_per_page"] for r in best[base_workers]["probes"]["probes"].values())
                cost = probe_cost_us()
                results["probe_overhead"] = {
                    "calls_per_page": round(calls, 1),
                    "us_per_call": round(cost, 3),
                    "ms_per_page": round(calls * cost / 1000, 4),
                }
            results["claims"] = claims_analysis(best[base_workers]["out"], best[base_workers])
            results["http_alone"] = http_alone(
                server, page_urls(best[base_workers]["out"]), args.threads, 1 if QUICK else 2
            )
            print(
                f"HTTP client alone (one thread, {results['http_alone']['gets']} GETs, process "
                f"CPU with its deadline timer thread): {results['http_alone']['ms_per_get']:.3f} ms/GET",
                flush=True,
            )
            calibration = calibrate(args.root, 20, server, args.builtins, args.threads)
            results["calibration"] = calibration
            print(
                f"profiler inflation (same work profiled / unprofiled, {calibration['pages']} pages): "
                + ", ".join(f"{row['step']} x{row['inflation']}" for row in calibration["by_category"].values()),
                flush=True,
            )

            results["run2"] = {}
            for workers in profile_workers:
                prof_dir = os.path.join(tmp, f"prof-w{workers}")
                os.makedirs(prof_dir)
                run = run_crawl(
                    server,
                    tmp,
                    f"profiled-w{workers}",
                    workers,
                    args.threads,
                    prof_dir=prof_dir,
                    builtins=args.builtins,
                )
                print(
                    f"run 2 w={workers}: {run['pages']} pages {run['wall_s']:.2f} s cpu {run['cpu_total_s']:.1f} s",
                    flush=True,
                )
                roles = load_profiles(prof_dir)
                unprof = best.get(workers, {}).get("ms_per_page", {})
                report = {
                    "pages": run["pages"],
                    "wall_s": run["wall_s"],
                    "psutil_ms_per_page": run["ms_per_page"],
                    "unprofiled_ms_per_page": unprof,
                    "run": run,
                    "roles": {},
                    "missing": [r for r in ROLES if r not in roles],
                }
                for role, data in roles.items():
                    if role not in ROLES:
                        continue
                    ref = unprof.get(role)
                    if role == "dispatcher" and workers in best:  # the profile covers crawl()
                        ref = best[workers]["dispatcher_crawl_call_cpu_s"] * 1000 / best[workers]["pages"]
                    report["roles"][role] = role_report(role, data, run["pages"], ref)
                if "fetcher" in report["roles"] and "fetcher" in unprof:
                    calibrate_fetcher(report["roles"]["fetcher"], calibration, unprof["fetcher"])
                expected = {"fetcher": workers, "manager": 1, "dispatcher": 1}
                for role, n in expected.items():
                    got = report["roles"].get(role, {}).get("processes", 0)
                    if got != n:
                        print(f"ERROR: {role}: {got} process dump(s), expected {n}", file=sys.stderr)
                        report.setdefault("errors", []).append(f"{role}: {got} dumps, expected {n}")
                report["crosscheck"] = crosscheck(report, best.get(workers), run)
                if "fetcher_page_work" in report["crosscheck"]:
                    report["crosscheck"]["fetcher_page_work"]["page_work_alone_ms_per_page"] = round(
                        pw["total_ms_per_page"], 3
                    )
                print_profile(workers, report)
                print_crosscheck(report["crosscheck"])
                results["run2"][str(workers)] = report
                if args.keep:
                    shutil.copytree(prof_dir, os.path.join(args.keep, f"prof-w{workers}"), dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    after = code_version()
    if after["crawler_sha1"] != version["crawler_sha1"]:
        print(
            f"note: crawler/*.py changed on disk during the run (sha1 {version['crawler_sha1']} -> "
            f"{after['crawler_sha1']}); the crawls ran the modules imported at the start",
            file=sys.stderr,
        )
        results["code_after"] = after
    results["limit"] = limit_and_leftover(results, pw, base_workers, cores)
    results["scaling"] = scaling(results)
    print_summary(results)
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    for runs in (results["run1"]["all"], results["run1"]["per_host"]["all"]):
        for run in runs:
            run.pop("out", None)
    for rep in results["run2"].values():
        rep["run"].pop("out", None)
    path = os.path.join(HERE, "results", "profile.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nsaved {path} ({results['elapsed_s']:.0f} s)")
    return 1 if any(rep.get("errors") for rep in results["run2"].values()) else 0


def calibrate_fetcher(fetcher: dict, calibration: dict, unprofiled_ms: float) -> None:
    """Add ``calibrated_ms_per_page`` to the fetcher's categories: a calibrated category
    (page-work steps, HTTP client) is its profiled time divided by its own measured
    inflation, any other one its profiled time divided by the fetcher's overall
    inflation (profile total / unprofiled CPU). What the unprofiled fetcher CPU has
    beyond their sum is ``unattributed_ms_per_page`` (page work slower in the crawl than
    alone, contention, CPU the profile does not see)."""
    cats = fetcher["categories"]
    inflation = {c: row["inflation"] for c, row in calibration["by_category"].items() if row["inflation"]}
    overall = fetcher["profiled_ms_per_page"] / unprofiled_ms
    total = 0.0
    for cat, row in cats.items():
        row["calibrated_ms_per_page"] = round(row["ms_per_page"] / inflation.get(cat, overall), 3)
        total += row["calibrated_ms_per_page"]
    fetcher["overall_inflation"] = round(overall, 3)
    fetcher["unattributed_ms_per_page"] = round(unprofiled_ms - total, 3)


def crosscheck(report: dict, best: dict | None, run: dict) -> dict:
    """Profiled totals against CPU: this run's psutil CPU (what the profile covers) and the
    unprofiled run's (the profiler's inflation)."""
    rows = {}
    for role in ROLES:
        r = report["roles"].get(role)
        if r is None:
            continue
        prof = r["profiled_ms_per_page"]
        psutil_ms = run["ms_per_page"][role]
        if role == "dispatcher":
            psutil_ms = run["dispatcher_crawl_call_cpu_s"] * 1000 / run["pages"]
        row = {
            "profiled_ms_per_page": prof,
            "psutil_this_run_ms_per_page": round(psutil_ms, 3),
            "profile_covers": round(prof / psutil_ms, 3) if psutil_ms else None,
        }
        if best is not None:
            ref = best["ms_per_page"][role]
            if role == "dispatcher":
                ref = best["dispatcher_crawl_call_cpu_s"] * 1000 / best["pages"]
            row["unprofiled_ms_per_page"] = round(ref, 3)
            row["inflation_profiled_cpu_vs_unprofiled"] = round(psutil_ms / ref, 2) if ref else None
            row["inflation_profile_total_vs_unprofiled"] = round(prof / ref, 2) if ref else None
        rows[role] = row
    fetcher = report["roles"].get("fetcher")
    if fetcher:
        page_ms = sum(fetcher["categories"].get(c, {}).get("ms_per_page", 0) for c in PAGE_CATEGORIES)
        scaled = sum(fetcher["categories"].get(c, {}).get("scaled_ms_per_page") or 0 for c in PAGE_CATEGORIES)
        calibrated = sum(fetcher["categories"].get(c, {}).get("calibrated_ms_per_page") or 0 for c in PAGE_CATEGORIES)
        rows["fetcher_page_work"] = {
            "profiled_ms_per_page": round(page_ms, 3),
            "scaled_ms_per_page": round(scaled, 3) if scaled else None,
            "calibrated_ms_per_page": round(calibrated, 3) if calibrated else None,
            "page_work_alone_ms_per_page": None,
            "by_step_profiled": {c: fetcher["categories"].get(c, {}).get("ms_per_page", 0) for c in PAGE_CATEGORIES},
        }
    return rows


def print_crosscheck(rows: dict) -> None:
    print("  cross-check (dispatcher: CPU of the whole crawl() call):")
    for role in ROLES:
        row = rows.get(role)
        if not row:
            continue
        extra = ""
        if "unprofiled_ms_per_page" in row:
            extra = (
                f"; unprofiled run 1 {row['unprofiled_ms_per_page']:.2f}: profiled CPU "
                f"x{row['inflation_profiled_cpu_vs_unprofiled']}, profile total "
                f"x{row['inflation_profile_total_vs_unprofiled']}"
            )
        print(
            f"    {role:<10} profile {row['profiled_ms_per_page']:8.2f} ms/page, psutil CPU this run "
            f"{row['psutil_this_run_ms_per_page']:8.2f} (profile covers {row['profile_covers']}){extra}"
        )
    pw = rows.get("fetcher_page_work")
    if pw:
        scaled = f", scaled to unprofiled {pw['scaled_ms_per_page']:.2f}" if pw["scaled_ms_per_page"] else ""
        calib = f", calibrated per step {pw['calibrated_ms_per_page']:.2f}" if pw["calibrated_ms_per_page"] else ""
        print(
            f"    fetcher page work in the profile: {pw['profiled_ms_per_page']:.2f} ms/page{scaled}"
            f"{calib}; page work alone (bench/page_work.py steps) "
            f"{pw['page_work_alone_ms_per_page']:.2f}"
        )


def limit_shares(run: dict, limit: float, pw_ms: float, cores: int) -> dict:
    """pages/s of ``run`` as a share of the ``limit`` = CPU efficiency (page work alone
    ``pw_ms`` / its CPU per page) x CPU busy (its CPU / (``cores`` x wall))."""
    return {
        "fraction_of_limit": round(run["pages_per_s"] / limit, 3),
        "cpu_efficiency": round(pw_ms / run["total_ms_per_page"], 3),
        "cpu_busy_fraction": round(run["cpu_total_s"] / (cores * run["wall_s"]), 3),
    }


def limit_and_leftover(results: dict, pw: dict, workers: int, cores: int) -> dict:
    best = results["run1"]["best"][str(workers)]
    pw_ms = pw["total_ms_per_page"]
    limit = cores * 1000 / pw_ms
    out = {
        "cores": cores,
        "workers": workers,
        "page_work_ms_per_page": round(pw_ms, 3),
        "limit_pages_per_s": round(limit, 2),
        "crawler_pages_per_s": best["pages_per_s"],
        **limit_shares(best, limit, pw_ms, cores),
        "total_cpu_ms_per_page": best["total_ms_per_page"],
        "leftover_ms_per_page": round(best["total_ms_per_page"] - pw_ms, 3),
        "cpu_bound_pages_per_s": round(cores * 1000 / best["total_ms_per_page"], 2),
        "load_before": best["load_before"],
    }
    fixed = results["run1"]["per_host"]["best"]
    out["per_host"] = {
        "per_host": fixed["per_host"],
        "pages_per_s": fixed["pages_per_s"],
        **limit_shares(fixed, limit, pw_ms, cores),
        "default_vs_per_host": round(best["pages_per_s"] / fixed["pages_per_s"], 3),
    }
    split = {"dispatcher": best["ms_per_page"]["dispatcher"], "manager": best["ms_per_page"]["manager"]}
    fetcher_ms = best["ms_per_page"]["fetcher"]
    split["fetchers beyond page work alone"] = round(fetcher_ms - pw_ms, 3)
    if best.get("probes"):
        split["fetchers, by the probes (run 1)"] = probe_split(best["probes"], fetcher_ms, pw)
    rep = results["run2"].get(str(workers))
    fetcher = rep["roles"].get("fetcher") if rep else None
    if fetcher and all("calibrated_ms_per_page" in row for row in fetcher["categories"].values()):
        groups: collections.Counter = collections.Counter()
        for cat, row in fetcher["categories"].items():
            group = row["group"]
            if group == "page work":
                group = "page work in the crawl - page work alone"
            elif group == "other":
                group = f"other: {cat}"
            groups[group] += row["calibrated_ms_per_page"]
        groups["page work in the crawl - page work alone"] -= pw_ms
        groups["unattributed (unprofiled CPU - calibrated sum)"] = fetcher["unattributed_ms_per_page"]
        split["fetchers, by the profile (run 2, calibrated)"] = {
            k: round(v, 3) for k, v in sorted(groups.items(), key=lambda kv: -abs(kv[1]))
        }
    out["leftover_split_ms_per_page"] = split
    return out


def probe_split(probes: dict, fetcher_ms: float, pw: dict) -> dict:
    """Fetcher CPU per page beyond page work alone, from the probes' thread CPU."""
    p = probes["probes"]

    def ms(label: str) -> float:
        return p.get(label, {}).get("ms_per_page", 0.0)

    alone = pw["steps_ms_per_page"]
    in_crawl = {
        "decode": ms("decode"),
        "parse (lxml)": ms("parse (lxml)"),
        "links from the tree": ms("links from the tree"),
        "resolve + normalize": ms("resolve + normalize"),
        "main content + markdown": ms("main content + markdown") + ms("effective_base (markdown step)"),
        "simhash": ms("simhash"),
        "json record": ms("record + edges write"),
    }
    run_ms = ms("PageProcessor.run (one task)")
    inside = {
        "HTTP client (HttpClient.get)": ms("HttpClient.get"),
        "visited table settle (client side of the round trip)": ms("visited table settle"),
        "visited table register_content (second round trip)": ms("visited table register_content"),
        "scope checks": ms("scope check"),
        "Markdown fingerprint": ms("Markdown fingerprint"),
        "OfferedKeys filter": ms("OfferedKeys.first_offer"),
    }
    rows = {"page work in the crawl - page work alone": sum(in_crawl.values()) - pw["total_ms_per_page"]}
    inter = pw["interleaved"]["total_ms_per_page"]
    rows["  of which: alone, steps interleaved per page - separate loops"] = inter - pw["total_ms_per_page"]
    rows["  of which: in the crawl - alone interleaved"] = sum(in_crawl.values()) - inter
    if "parallel" in pw:
        rows["  (alone, on every core at once - alone)"] = pw["parallel"]["total_ms_per_page"] - pw["total_ms_per_page"]
    rows.update(inside)
    rows["rest of PageProcessor.run (record dict, glue)"] = run_ms - sum(in_crawl.values()) - sum(inside.values())
    rows["task queue get"] = ms("task queue get")
    rows["result send"] = ms("result send")
    rows["rest of the fetcher processes (thread loop, timer thread, start/exit)"] = (
        fetcher_ms - run_ms - rows["task queue get"] - rows["result send"]
    )
    return {
        "rows": {k: round(v, 3) for k, v in rows.items()},
        "page_work_steps_in_crawl_vs_alone": {
            step: [
                round(in_crawl[step], 3),
                round(alone[step], 3),
                round(pw["interleaved"]["steps_ms_per_page"][step], 3),
            ]
            for step in in_crawl
        },
        "note": "json record alone is json.dumps of the page; in the crawl it is "
        "RecordWriter.write (record JSON, edge lines, two flushed writes)",
    }


def scaling(results: dict) -> dict:
    """CPU share of the one-process roles, and where they would saturate one core."""
    rows = {}
    for w, run in results["run1"]["best"].items():
        fetcher_ms = run["ms_per_page"]["fetcher"]
        row = {"pages_per_s": run["pages_per_s"]}
        for role in ("dispatcher", "manager"):
            ms = run["ms_per_page"][role]
            row[role] = {
                "ms_per_page": ms,
                "share_of_crawl_cpu": run["share"][role],
                "core_fraction_used": round(run["cpu_s"][role] / run["wall_s"], 3),
                "saturates_at_pages_per_s": round(1000 / ms, 1) if ms else None,
                "fetcher_cores_to_saturate": round(fetcher_ms / ms, 1) if ms else None,
            }
        rows[w] = row
    return rows


def print_summary(results: dict) -> None:
    lim = results["limit"]
    print(
        f"\nThe limit ({lim['cores']} cores / page work alone {lim['page_work_ms_per_page']:.2f} "
        f"ms/page): {lim['limit_pages_per_s']:.1f} pages/s"
    )
    print(
        f"crawler at {lim['workers']} workers: {lim['crawler_pages_per_s']:.1f} pages/s = "
        f"{lim['fraction_of_limit'] * 100:.1f}% of the limit = CPU efficiency (page work alone /"
        f" crawl CPU per page) {lim['cpu_efficiency'] * 100:.1f}% x CPU busy "
        f"{lim['cpu_busy_fraction'] * 100:.1f}% of {lim['cores']} cores during the crawl "
        f"(load average {lim['load_before']:.1f} before it); at its own "
        f"{lim['total_cpu_ms_per_page']:.2f} ms/page on {lim['cores']} idle cores: "
        f"{lim['cpu_bound_pages_per_s']:.1f} pages/s"
    )
    fixed = lim["per_host"]
    print(
        f"without the adaptive crawl delay (--per-host {fixed['per_host']}, the same site and workers): "
        f"{fixed['pages_per_s']:.1f} pages/s = {fixed['fraction_of_limit'] * 100:.1f}% of the limit = CPU "
        f"efficiency {fixed['cpu_efficiency'] * 100:.1f}% x CPU busy {fixed['cpu_busy_fraction'] * 100:.1f}%; "
        f"the default politeness (one request in flight to this one origin) runs at "
        f"{fixed['default_vs_per_host'] * 100:.1f}% of that"
    )
    print(
        f"leftover per page (total {lim['total_cpu_ms_per_page']:.2f} - page work "
        f"{lim['page_work_ms_per_page']:.2f}) = {lim['leftover_ms_per_page']:.2f} ms:"
    )
    for key, value in lim["leftover_split_ms_per_page"].items():
        if not isinstance(value, dict):
            print(f"  {key:<72} {value:7.2f}")
            continue
        print(f"  {key}:")
        for k, v in (value["rows"] if "rows" in value else value).items():
            print(f"    {k:<70} {v:7.2f}")
        if "page_work_steps_in_crawl_vs_alone" in value:
            print(
                "    page-work steps, in the crawl / alone / alone interleaved: "
                + ", ".join(
                    f"{step} {a:.2f}/{b:.2f}/{c:.2f}"
                    for step, (a, b, c) in value["page_work_steps_in_crawl_vs_alone"].items()
                )
            )
    if "probe_overhead" in results:
        o = results["probe_overhead"]
        print(
            f"  (probes: {o['calls_per_page']:.0f} timed calls/page x {o['us_per_call']:.2f} us "
            f"= {o['ms_per_page']:.3f} ms/page of their own)"
        )
    if "http_alone" in results:
        print(f"  HTTP client alone (one thread, process CPU): {results['http_alone']['ms_per_get']:.2f} ms/GET")
    c = results["claims"]
    e = c["edges"]
    print(
        f"claims: pages link to {e['in_scope_links']} in-scope URLs ({e['per_page']}/page) for "
        f"{e['distinct_targets']} distinct URLs ({e['repeat_share'] * 100:.1f}% repeats; unfiltered, a "
        f"settle would pickle {e['settle_request_bytes_mean_unfiltered']} B of arguments per page)"
    )
    if "sent" in c:
        t = c["sent"]
        print(
            f"  sent by the fetchers (probes): {t['links_sent']} links in {t['settle_calls']} settle calls "
            f"({t['links_per_settle']}/call, {t['pickled_argument_bytes_per_settle']} B pickled "
            f"arguments/call); {c['claimed_in_table']} URLs claimed in the table, so "
            f"{t['lost_claims_sent']} claims sent could only lose ({t['lost_share'] * 100:.1f}%)"
        )
    print("dispatcher and manager (one process each), unprofiled:")
    for w, row in results["scaling"].items():
        parts = []
        for role in ("dispatcher", "manager"):
            r = row[role]
            parts.append(
                f"{role} {r['ms_per_page']:.2f} ms/page = {r['share_of_crawl_cpu'] * 100:.1f}% of "
                f"crawl CPU, {r['core_fraction_used'] * 100:.1f}% of a core, one core at "
                f"{r['saturates_at_pages_per_s']} pages/s (~{r['fetcher_cores_to_saturate']} "
                f"fetcher cores)"
            )
        print(f"  w={w}: " + "; ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
