"""The fetcher process: task -> fetch -> extract -> claim -> convert -> store -> result.

Each fetcher process runs ``threads`` threads that take :class:`FetchTask` messages from
the shared bounded task queue. Threads overlap network waits; the parse and Markdown work
of one process runs on one core, and N processes use N cores. Every thread builds its own
:class:`crawler.web.fetch.HttpClient` (a ``requests.Session``); nothing but the queues, the
visited-table proxy and the frozen config comes from the parent, so it works under every
start method.

For each task the fetcher writes the record (and its edges) itself, then settles the URL
in the visited table and claims the page's in-scope links in the same round trip, and
sends the dispatcher only the links it won.

Cookies (RFC 6265): every page task has its own jar, filled from the task's
:attr:`FetchTask.cookies` (the cookies of the redirect chain that led to it) and, with
``--cookies``, from the crawl's :class:`crawler.engine.cookiestore.CookieStore`; each
request of the task sends what the jar's policy allows and stores the response's
``Set-Cookie`` in it. A redirect passes the jar's cookies on to its target's task; a
link's task starts without any. So by default no cookie outlives its redirect chain: a
corpus crawler should see a page as an anonymous visitor does, whichever fetcher thread
gets it (a session per thread used to keep every cookie it was ever sent). With
``--cookies`` each response that changed the jar is written to the store, which every
fetcher process reads before a page task's first request.

In map mode (``config.mode == "map"``) the same steps run without the conversion: HTML
is decoded and its links extracted and claimed exactly as in a crawl, but no Markdown is
made and no content fingerprint registered; a URL that is probably not HTML is asked
with HEAD first and a non-HTML body is never read (:mod:`crawler.web.probe`). Map records
add ``outcome`` and ``content_length``.
"""

from __future__ import annotations

import dataclasses
import datetime
import http.cookiejar
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

import xxhash

from crawler.config import CrawlConfig
from crawler.content.convert import DEFAULT_CONVERTER, Conversion, convert, error_text
from crawler.content.document import parse
from crawler.content.links import effective_base, link_targets, links_of
from crawler.content.main import main_content, whole_page
from crawler.content.neardup import simhash
from crawler.content.repeats import SiteBlocks
from crawler.engine.channel import TaskChannel
from crawler.engine.cookiestore import CookieStore, CookieStoreProxy
from crawler.engine.lifeline import PARENT_DIED_EXIT_CODE, watch_parent
from crawler.engine.messages import (
    CRASHED,
    DEFERRED,
    FAILED,
    KIND_FAIL,
    KIND_PAGE,
    KIND_ROBOTS,
    KIND_ROBOTS_REDIRECT,
    KIND_SITEMAP,
    LEASE_LOST,
    NON_HTML,
    PAGE,
    REDIRECT,
    RETRY,
    ROBOTS,
    SITEMAP,
    STOP,
    Exchanged,
    FetchTask,
    TaskDone,
)
from crawler.engine.prior import PRIOR_FILE, PriorReader
from crawler.engine.recrawl import FAILED_AGAIN, NEW, UNCHANGED, Validators, change_of
from crawler.engine.rediscrawl import FENCED, RedisCrawl
from crawler.engine.signals import child_signals
from crawler.engine.visited import Claims, LocalClaims, OfferedKeys, VisitedProxy, VisitedTable
from crawler.errors import RecordWritten
from crawler.output.graph import LINK
from crawler.output.graph import REDIRECT as REDIRECT_EDGE
from crawler.output.warc import WarcWriter, payload_digest
from crawler.output.writers import RecordWriter
from crawler.web.cookies import BoundedJar, CookieTuple, changes, cookie_tuples, sets_new_value
from crawler.web.decode import decode_html, is_html_response
from crawler.web.fetch import FetchError, HttpClient, Response, Revisit
from crawler.web.probe import body_needed, head_decides, probably_not_html
from crawler.web.retry import is_transient, parse_retry_after
from crawler.web.robots import ROBOTS_MAX_BYTES, ROBOTS_MAX_REDIRECTS, robots_url
from crawler.web.scope import Scope
from crawler.web.sitemaps import SITEMAP_MAX_BYTES, parse_sitemap
from crawler.web.urlnorm import RequestUrlMemo, key_of, normalize, origin_of, request_url

if TYPE_CHECKING:
    import lxml.html

log = logging.getLogger("crawler")


def utc_now_iso() -> str:
    """Current UTC time as ISO 8601 with milliseconds and a ``Z`` suffix."""
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def markdown_fingerprint(markdown: str) -> str:
    """16 hex digits of the xxh3-64 hash of the Markdown's UTF-8 bytes."""
    return xxhash.xxh3_64_hexdigest(markdown.encode("utf-8"))


def page_markdown(
    text: str,
    base: str,
    keep_boilerplate: bool = False,
    converter: str = DEFAULT_CONVERTER,
    root: lxml.html.HtmlElement | None = None,
    site: str | None = None,
    blocks: SiteBlocks | None = None,
) -> tuple[Conversion, str, str | None]:
    """Markdown of a decoded HTML page (:func:`crawler.content.convert.convert` by
    ``converter``), what was converted: ``"main"`` (the main content,
    :func:`crawler.content.main.main_content`) or ``"page"`` (the whole page, tidied
    the same way, :func:`crawler.content.main.whole_page`: with ``keep_boilerplate``,
    when no main content was found, or when its selection raised), and the error a
    step fell back from (``"main content: ..."``, the converter's), else None. ``root``:
    the page's tree (:func:`crawler.content.document.parse`), if the caller has it; the
    main-content step changes it. ``site`` (the page's origin) and ``blocks`` (the
    fetcher's counts of text blocks per site): blocks repeated across the site's pages
    go from a page without a ``main`` landmark (:mod:`crawler.content.repeats`). Never
    raises for a page: each step falls back."""
    error = None
    if not keep_boilerplate:
        try:
            selected = main_content(text, root, site, blocks)
        except Exception as exc:  # the selection's bug must not lose the page
            selected, error = None, error_text("main content", exc)
        if selected is not None:
            conversion = convert(selected, base, converter)
            return conversion, "main", conversion.error
        root = None  # the selection changed it: the whole page is parsed again
    try:
        page = whole_page(text, root)
    except Exception as exc:  # the tidy step's bug must not lose the page either
        page = text
        error = "; ".join(e for e in (error, error_text("whole page", exc)) if e)
    conversion = convert(page, base, converter)
    errors = [e for e in (error, conversion.error) if e is not None]
    return conversion, "page", "; ".join(errors) or None


class _LeaseLost(Exception):
    """A later request of a task (a redirect hop) would go out after this machine lost
    the task's shard lease: nothing more is sent."""


class PageProcessor:
    """Runs one task to its outcome. Shared by the threads of one fetcher process.

    Args:
        worker_id: this fetcher's number.
        config: the crawl's :class:`crawler.config.CrawlConfig`.
        table: the visited table (a proxy, or a local table in tests), or with ``--redis``
            the :class:`crawler.engine.rediscrawl.RedisCrawl`.
        writer: this process's :class:`crawler.output.writers.RecordWriter`.
        notify: called with an :class:`crawler.engine.messages.Exchanged` once a page's body
            is read, before it is parsed (the result pipe's sender); ``None``: not told.
        cookie_store: with ``--cookies``, the crawl's cookie store (a proxy of the
            manager's, or a :class:`crawler.engine.cookiestore.CookieStore` in tests);
            ``None``: a cookie lasts only as long as its redirect chain.
    """

    def __init__(
        self,
        worker_id: int,
        config: CrawlConfig,
        table: VisitedProxy | VisitedTable | RedisCrawl,
        writer: RecordWriter,
        notify: Callable[[Exchanged], object] | None = None,
        cookie_store: CookieStoreProxy | CookieStore | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.config = config
        self.table = table
        self.claims: Claims = table if isinstance(table, RedisCrawl) else LocalClaims(table)
        self.writer = writer
        self.scope = Scope.from_config(config)
        self.offered = OfferedKeys()
        #: Text blocks per site, counted over the pages this process converts; ``None``
        #: with ``--no-site-repeats``.
        self.site_blocks = SiteBlocks() if config.site_repeats else None
        # origin -> monotonic time its Retry-After ends, as seen by this process: tasks
        # of that origin already queued are sent back unrequested until then
        self.paused: dict[str, float] = {}
        self.mapping = config.mode == "map"
        self.notify = notify
        self.request_urls = RequestUrlMemo()  # links repeat across a site's pages
        self.cookie_store = cookie_store
        #: A recrawl's earlier generations (:mod:`crawler.engine.recrawl`): None in
        #: generation 1 and in map mode.
        self.prior = None
        self.validators = Validators()
        if config.generation > 1 and not self.mapping:
            self.prior = PriorReader(os.path.join(config.out_dir, PRIOR_FILE))
            self.validators = Validators(self.prior.etag_ignored())
        self._asked = threading.local()  # this thread's task: .prior (PriorPage | None), .sent

    def run(self, task: FetchTask, client: HttpClient) -> TaskDone:
        """Fetch ``task`` and settle it; never raises for a bad page or server. The
        result carries the exchange's :attr:`TaskDone.latency_s`.

        A transient failure (:func:`crawler.web.retry.is_transient`) before the last
        attempt returns :data:`RETRY` with nothing written: the URL stays in flight
        and the dispatcher schedules the next attempt.
        """
        self._asked.sent = {}
        self._asked.prior = None
        self._asked.requests = 0  # requests of this task sent so far (the first is checked here)
        if self.prior is not None and task.kind in (KIND_PAGE, KIND_FAIL):
            self._asked.prior = self.prior.page(task.url)
        if task.kind == KIND_FAIL:
            return self._fail(task, task.error or CRASHED, None)
        origin = origin_of(task.url)
        wait = self.paused.get(origin, 0.0) - time.monotonic()
        if task.kind == KIND_PAGE and wait > 0:
            return TaskDone(self.worker_id, task.url, RETRY, None, DEFERRED, retry_after_s=wait)
        try:
            self._check_lease(task)  # --redis: another machine's now?
            started = time.monotonic()
            done = self._run(task, client, started)
        except _LeaseLost:
            return self._lease_lost(task)
        if done.latency_s is None:
            done = dataclasses.replace(done, latency_s=time.monotonic() - started)
        return done

    def _check_lease(self, task: FetchTask) -> None:
        """With ``--redis``, before each request of ``task`` (:meth:`run` before the
        first, then each redirect hop): a stall that outlasted the shard lease must not
        send it.

        Raises:
            _LeaseLost: ``task`` carries a lease token that no longer holds its shard.
        """
        if task.ticket is not None and not self.claims.may_fetch(task):
            raise _LeaseLost(task.url)

    def _lease_lost(self, task: FetchTask) -> TaskDone:
        """The answer to a task whose shard lease this machine lost: nothing (more)
        requested, nothing recorded; the lease's new holder fetches the URL."""
        if task.kind == KIND_ROBOTS or task.kind == KIND_ROBOTS_REDIRECT:
            return TaskDone(self.worker_id, task.url, ROBOTS, None, LEASE_LOST)
        if task.kind == KIND_SITEMAP:
            return TaskDone(self.worker_id, task.url, SITEMAP, None, LEASE_LOST)
        return TaskDone(self.worker_id, task.url, RETRY, None, LEASE_LOST, retry_after_s=0.0)

    def _run(self, task: FetchTask, client: HttpClient, started: float) -> TaskDone:
        if task.kind in (KIND_ROBOTS, KIND_ROBOTS_REDIRECT):
            return self._robots(task, client)
        if task.kind == KIND_SITEMAP:
            return self._sitemap(task, client)
        origin = origin_of(task.url)
        prior = self._asked.prior
        record = prior.record if prior is not None else None
        sent = self.validators.headers(record, origin) if _revisitable(record) else {}
        self._asked.sent = sent
        revisit = None
        if record is not None and _revisitable(record):
            date = record.get("warc_date") or record["fetched_at"]  # the earlier capture's WARC-Date
            revisit = Revisit(record.get("request_url") or task.url, date, record.get("payload_digest"))
        try:
            jar = self._jar(task)
            if self.mapping:
                response = self._map_get(task, client, jar)
            else:
                response = self._get(task, client, jar=jar, headers=sent, revisit=revisit)
        except FetchError as exc:
            if is_transient(None, exc.reason) and task.attempt < self.config.retries:
                return TaskDone(self.worker_id, task.url, RETRY, None, exc.reason)
            return self._fail(task, exc.reason, None)
        if response.location is not None:
            return self._redirect(task, response, jar)
        if response.status == 304 and sent and prior is not None and prior.record is not None:
            latency = self._exchange_over(task, response.status, started)  # free while the record is written
            return dataclasses.replace(self._unchanged(task, response, prior.record), latency_s=latency)
        if response.status >= 400:
            reason = f"http {response.status}"
            if is_transient(response.status) and task.attempt < self.config.retries:
                wait = parse_retry_after(response.retry_after, response.date, time.time())
                if wait is None or wait <= self.config.max_retry_wait_s:
                    if wait and response.status in (429, 503):
                        self.paused[origin] = time.monotonic() + wait
                    return TaskDone(
                        self.worker_id, task.url, RETRY, response.status, reason, len(response.body), retry_after_s=wait
                    )
                reason += f" (Retry-After {wait:g} s is over --max-retry-wait)"
            return self._fail(task, reason, response)
        if not is_html_response(response.content_type, response.body):
            return self._finish(task, NON_HTML, response, self._map_fields(NON_HTML, response), ())
        latency = self._exchange_over(task, response.status, started)  # free while the page is parsed
        return dataclasses.replace(self._page(task, response), latency_s=latency)

    def _exchange_over(self, task: FetchTask, status: int, started: float) -> float:
        """Tell the dispatcher that the exchange of ``task`` (begun at ``started``,
        monotonic seconds) is over, with the time it ended, so its origin may take the
        next request while this one is written; return its latency in seconds."""
        ended = time.monotonic()
        if self.notify is not None:
            self.notify(Exchanged(self.worker_id, task.url, ended - started, status, ended))
        return ended - started

    def _robots(self, task: FetchTask, client: HttpClient) -> TaskDone:
        """Fetch the robots.txt of the origin ``task.url`` (or, for a
        :data:`KIND_ROBOTS_REDIRECT` task, the redirect target ``task.url``), following
        redirects within the same origin, up to five in all (RFC 9309 section 2.3.1.2).
        A redirect to another origin is returned in :attr:`TaskDone.redirect_to`, not
        followed: that origin's politeness applies to it. Nothing is written."""
        url = task.url if task.kind == KIND_ROBOTS_REDIRECT else robots_url(task.url)
        try:  # only the first ROBOTS_MAX_BYTES are used (RFC 9309 2.5): no more are read
            response = client.get(url, ROBOTS_MAX_BYTES)
            for _ in range(ROBOTS_MAX_REDIRECTS - task.depth):
                if response.location is None:
                    break
                target = request_url(response.location, response.url)
                if target is None:
                    break
                if origin_of(target) != origin_of(url):
                    return TaskDone(
                        self.worker_id, task.url, ROBOTS, response.status, None, len(response.body), redirect_to=target
                    )
                url = target
                self._check_lease(task)
                response = client.get(url, ROBOTS_MAX_BYTES)
        except FetchError as exc:
            return TaskDone(self.worker_id, task.url, ROBOTS, None, exc.reason)
        body = response.body[:ROBOTS_MAX_BYTES] if 200 <= response.status < 300 else None
        return TaskDone(self.worker_id, task.url, ROBOTS, response.status, None, len(response.body), robots_body=body)

    def _sitemap(self, task: FetchTask, client: HttpClient) -> TaskDone:
        """Fetch and parse the sitemap ``task.url``; claim its in-scope URLs (as depth 0
        tasks with the sitemap as parent) and return them, with the child sitemaps of
        an index. Nothing is written; a failure is logged and returns nothing."""
        try:
            response = client.get(task.fetch_url, max(self.config.max_body_bytes, SITEMAP_MAX_BYTES))
        except FetchError as exc:
            log.warning("sitemap %s: %s", task.url, exc.reason)
            return TaskDone(self.worker_id, task.url, SITEMAP, None, exc.reason)
        if response.status >= 300:
            log.warning("sitemap %s: http %d", task.url, response.status)
            return TaskDone(self.worker_id, task.url, SITEMAP, response.status, f"http {response.status}")
        sitemap = parse_sitemap(response.body, response.url)
        if sitemap.error:
            log.warning("sitemap %s: %s", task.url, sitemap.error)
        if sitemap.kind == "sitemapindex":
            return TaskDone(
                self.worker_id,
                task.url,
                SITEMAP,
                response.status,
                sitemap.error,
                len(response.body),
                sitemaps=sitemap.urls,
            )
        claims: dict[str, FetchTask] = {}
        for sent in sitemap.urls:
            key = key_of(sent)
            if key in self.scope and self.offered.first_offer(key):
                claims.setdefault(key, FetchTask(key, 0, task.url, (), _unless_key(sent, key)))
        tasks = list(claims.values())
        won = self.claims.claim_tasks(tasks)
        return TaskDone(
            self.worker_id,
            task.url,
            SITEMAP,
            response.status,
            sitemap.error,
            len(response.body),
            tuple(t for t, w in zip(tasks, won) if w),
        )

    def _map_get(self, task: FetchTask, client: HttpClient, jar: http.cookiejar.CookieJar) -> Response:
        """Map mode's fetch (:mod:`crawler.web.probe`): HEAD first for a URL that is
        probably not HTML, kept when it decides the outcome; else :meth:`_get`, reading
        the body only when it may be HTML. Both send and keep ``jar``'s cookies."""
        if probably_not_html(task.fetch_url):
            try:
                head, _new = self._send(task, client, task.fetch_url, jar, head=True)
            except FetchError:  # HEAD failed: the GET a crawl sends decides
                head = None
            if head is not None and head_decides(head.status, head.content_type, head.location):
                return head
        return self._get(task, client, body_needed, jar)

    def _map_fields(self, outcome: str, response: Response) -> dict:
        """The record fields map mode adds (none in a crawl)."""
        if not self.mapping:
            return {}
        return {"outcome": outcome, "content_length": response.content_length, "method": response.method}

    def _get(
        self,
        task: FetchTask,
        client: HttpClient,
        body_wanted: Callable[[str | None], bool] | None = None,
        jar: http.cookiejar.CookieJar | None = None,
        headers: dict[str, str] | None = None,
        revisit: Revisit | None = None,
    ) -> Response:
        """GET the task's URL with the cookies of ``jar`` (default: :meth:`_jar`'s). A
        redirect to another spelling of the same key (the server's own query order) is
        the same resource: follow it here, at most ``max_redirects`` times. A spelling
        already tried is asked again only when the response before set a new cookie (a
        session or consent wall that sets one and redirects to the page it guards); else
        that redirect is left to :meth:`_redirect`, which fails it as a loop. ``headers``
        (a recrawl's validators) and ``revisit`` go with the first request only."""
        jar = self._jar(task) if jar is None else jar
        tried = [task.fetch_url]
        response, new_cookie = self._send(task, client, tried[-1], jar, body_wanted, headers=headers, revisit=revisit)
        while response.location is not None and len(tried) <= self.config.max_redirects:
            sent = request_url(response.location, response.url)
            if sent is None or key_of(sent) != task.url or (sent in tried and not new_cookie):
                break
            tried.append(sent)
            response, new_cookie = self._send(task, client, sent, jar, body_wanted)
        return response

    def _jar(self, task: FetchTask) -> BoundedJar:
        """A page task's cookie jar: with ``--cookies`` the store's cookies for its host,
        then the cookies its redirect chain passed on (:attr:`FetchTask.cookies`)."""
        stored: Iterable[CookieTuple] = ()
        if self.cookie_store is not None:
            stored = self.cookie_store.cookies_for(urllib.parse.urlsplit(task.url).hostname or "")
        return BoundedJar((*stored, *task.cookies))

    def _send(
        self,
        task: FetchTask,
        client: HttpClient,
        url: str,
        jar: http.cookiejar.CookieJar,
        body_wanted: Callable[[str | None], bool] | None = None,
        head: bool = False,
        headers: dict[str, str] | None = None,
        revisit: Revisit | None = None,
    ) -> tuple[Response, bool]:
        """One request of a page task with ``jar``'s cookies (a HEAD when ``head``); with
        ``--cookies``, what the response changed in the jar is written to the store.
        ``headers`` and ``revisit``: as :meth:`crawler.web.fetch.HttpClient.get`'s.
        Returns the response and whether it set a cookie value the jar did not have.

        A request after the task's first checks the lease again (:meth:`_check_lease`;
        :meth:`run` checked before the first).

        Raises:
            FetchError: no complete response.
            _LeaseLost: the lease was lost; nothing was sent.
        """
        if self._asked.requests:
            self._check_lease(task)
        self._asked.requests += 1
        before = cookie_tuples(jar)
        try:
            if head:
                response = client.head(url, cookies=jar)
            else:
                response = client.get(url, body_wanted=body_wanted, cookies=jar, headers=headers, revisit=revisit)
        finally:  # a body that failed still set its cookies
            after = cookie_tuples(jar)
            if self.cookie_store is not None and after != before:
                self.cookie_store.update(*changes(before, after))
        return response, sets_new_value(before, after)

    def _record(self, task: FetchTask, response: Response | None, **fields: object) -> dict:
        prior = getattr(self._asked, "prior", None)
        sent = getattr(self._asked, "sent", None)
        record: dict[str, object] = {
            "url": task.url,
            "request_url": response.url if response else task.fetch_url,
            "final_url": task.url,
            "status": response.status if response else None,
            "content_type": response.content_type if response else None,
            "depth": task.depth,
            "parent": task.parent,
            "redirect_chain": list(task.redirect_chain),
            "title": None,
            "markdown": None,
            "fingerprint": None,
            "canonical": None,
            "duplicate_of": None,
            "content": None,
            "converter": None,
            "fallback_error": None,
            "simhash": None,
            "near_duplicate_of": None,
            "near_duplicate_distance": None,
            "fetched_at": utc_now_iso(),
            "elapsed_ms": round(response.elapsed_ms, 1) if response else None,
            "bytes": len(response.body) if response else 0,
            "truncated": response.truncated if response else False,
            "attempts": task.attempt + 1,
            "error": None,
            "etag": response.etag if response else None,
            "last_modified": response.last_modified if response else None,
            "payload_digest": payload_digest(response.body) if response and response.status == 200 else None,
            "generation": self.config.generation,
            "change": NEW if prior is None else FAILED_AGAIN,
            "content_generation": None,
            "conditional": sorted(sent) if sent else None,
            "warc_date": response.warc_date if response else None,
        }
        record.update(fields)
        return record

    def _finish(
        self,
        task: FetchTask,
        outcome: str,
        response: Response | None,
        fields: Mapping[str, object],
        edges: Iterable[tuple[str, str, str, bool]],
        claims: Iterable[FetchTask] = (),
    ) -> TaskDone:
        """Write the record and edges, then settle the URL and claim ``claims`` (tasks)
        in one visited-table round trip; return the result with the tasks won. Keys
        this process offered before are not sent again (:class:`OfferedKeys`)."""
        claims = [t for t in claims if self.offered.first_offer(t.url)]
        record = self._record(task, response, **fields)
        if self.prior is not None and "change" not in fields:
            record["change"] = change_of(getattr(self._asked, "prior", None), record)
        if record["markdown"] is not None:
            record["content_generation"] = self.config.generation
        sent = getattr(self._asked, "sent", None)
        if sent:
            self.validators.observe(origin_of(task.url), sent, record["status"], record["change"])
        self.writer.write(record, edges)
        state = "failed" if outcome == FAILED else "visited"
        done = TaskDone(
            self.worker_id, task.url, outcome, response.status if response else None, record["error"], record["bytes"]
        )
        try:
            won = self.claims.settle(task, state, claims)
        except Exception as exc:  # the record is on disk: crash() must not write another
            self.offered.forget(t.url for t in claims)  # not claimed: a later page sends them
            raise RecordWritten(done) from exc
        if won == FENCED:  # --redis: this machine stalled past its lease; the new holder fetches it
            log.warning("%s: recorded after this machine lost its shard's lease; the new holder owns it", task.url)
            self.offered.forget(t.url for t in claims)
            return done
        return dataclasses.replace(done, discovered=tuple(t for t, w in zip(claims, won) if w))

    def _fail(self, task: FetchTask, reason: str, response: Response | None) -> TaskDone:
        return self._finish(task, FAILED, response, {"error": reason}, ())

    def _redirect(self, task: FetchTask, response: Response, jar: http.cookiejar.CookieJar) -> TaskDone:
        """Record the redirect and claim its target as a task that carries the chain's
        cookies (``jar``'s; with ``--cookies`` none: the target reads the store)."""
        assert response.location is not None  # _run() sends only a redirect here
        sent = request_url(response.location, response.url)
        if sent is None:
            return self._fail(task, "bad redirect location", response)
        target = key_of(sent)
        chain = task.redirect_chain + (task.url,)
        in_scope = target in self.scope
        edges = [(task.url, target, REDIRECT_EDGE, in_scope)]
        fields = {"final_url": target}
        if target in chain:
            return self._finish(task, FAILED, response, {**fields, "error": "redirect loop"}, edges)
        if len(chain) > self.config.max_redirects:
            return self._finish(task, FAILED, response, {**fields, "error": "too many redirects"}, edges)
        cookies = cookie_tuples(jar) if self.cookie_store is None else ()
        claims = (
            (FetchTask(target, task.depth, task.url, chain, _unless_key(sent, target), cookies=cookies),)
            if in_scope
            else ()
        )
        return self._finish(task, REDIRECT, response, fields, edges, claims)

    def _unchanged(self, task: FetchTask, response: Response, before: dict) -> TaskDone:
        """A 304 to a recrawl's conditional request: the stored record carried forward
        (its Markdown stays in the record of its ``content_generation``), its stored
        links followed and written again as this generation's edges."""
        fields = {name: before.get(name) for name in _CARRIED}
        fields.update(
            markdown=None,
            change=UNCHANGED,
            content_generation=before.get("content_generation"),
            etag=response.etag or before.get("etag"),
            last_modified=response.last_modified or before.get("last_modified"),
        )
        edges, claims = [], []
        depth = task.depth + 1
        follow = self.config.max_depth is None or depth <= self.config.max_depth
        assert self.prior is not None  # a 304 answers only a recrawl's validators
        for link, _was_in_scope in self.prior.links(task.url):
            in_scope = link in self.scope
            edges.append((task.url, link, LINK, in_scope))
            if in_scope and follow and link != task.url:
                claims.append(FetchTask(link, depth, task.url))
        page = before.get("fingerprint") is not None
        registered: tuple[int, int] | None = None
        if page and before.get("simhash"):  # a duplicate is counted as one, as in _page
            registered = (int(before["fingerprint"], 16), int(before["simhash"], 16))
            try:  # later pages of this generation are compared with it too
                self.claims.register_content(registered[0], registered[1], task.url)
            except Exception:  # the table failed: settle() reports it
                registered = None
        done = self._finish(task, PAGE if page else NON_HTML, response, fields, edges, claims)
        return dataclasses.replace(
            done,
            duplicate=bool(before.get("duplicate_of")),
            near_duplicate=bool(before.get("near_duplicate_of")),
            content=registered,
        )

    def _page(self, task: FetchTask, response: Response) -> TaskDone:
        text, _encoding = decode_html(response.body, response.content_type)
        root = parse(text)  # the one parse: read for links first, then changed by main content
        page = links_of(root)
        base = effective_base(response.url, page)
        conversion, content, fallback = (
            (None, None, None)
            if self.mapping
            else page_markdown(
                text,
                base,
                self.config.keep_boilerplate,
                self.config.converter,
                root,
                origin_of(task.url),
                self.site_blocks,
            )
        )
        markdown = None if conversion is None else conversion.markdown
        edges, claims = [], []
        depth = task.depth + 1
        follow = self.config.max_depth is None or depth <= self.config.max_depth
        for link, sent in link_targets(response.url, page, self.request_urls):
            in_scope = link in self.scope
            edges.append((task.url, link, LINK, in_scope))
            if in_scope and follow and link != task.url:
                claims.append(FetchTask(link, depth, task.url, (), _unless_key(sent, link)))
        fingerprint = near_hash = None
        if not self.mapping:
            assert markdown is not None  # page_markdown()'s
            fingerprint, near_hash = markdown_fingerprint(markdown), simhash(markdown)
        fields = {
            "title": page.title,
            "markdown": markdown,
            "fingerprint": fingerprint,
            "canonical": None,
            "duplicate_of": None,
            "content": content,
            "converter": None if conversion is None else conversion.converter,
            "fallback_error": fallback,
            "simhash": None if near_hash is None else f"{near_hash:016x}",
            **self._map_fields(PAGE, response),
        }
        if page.canonical is not None:
            fields["canonical"] = normalize(page.canonical, base)
        registered: tuple[int, int] | None = None
        if markdown:  # an exact duplicate is recorded, its Markdown not written twice
            assert fingerprint is not None and near_hash is not None  # not mapping: set above
            registered = (int(fingerprint, 16), near_hash)
            try:
                first, near, distance = self.claims.register_content(registered[0], near_hash, task.url)
            except Exception:  # the table failed: keep the page; settle() reports it
                first = near = distance = None
            if first is not None:
                fields.update(markdown=None, duplicate_of=first)
            elif near is not None:  # flagged, not dropped: its Markdown is kept
                fields.update(near_duplicate_of=near, near_duplicate_distance=distance)
        done = self._finish(task, PAGE, response, fields, edges, claims)
        return dataclasses.replace(
            done,
            duplicate=fields["duplicate_of"] is not None,
            near_duplicate=fields.get("near_duplicate_of") is not None,
            content=registered,
            fallback=fields["fallback_error"] is not None,
        )

    def crash(self, task: FetchTask, exc: BaseException) -> TaskDone:
        """Record an unexpected exception as a failure of ``task``; best effort."""
        if isinstance(exc, RecordWritten):  # the page is recorded; its links are lost
            log.warning("visited table failed after %s was recorded: %r", task.url, exc.__cause__)
            return dataclasses.replace(exc.done, table_failed=True)
        reason = f"internal error: {type(exc).__name__}"
        if task.kind in (KIND_ROBOTS, KIND_ROBOTS_REDIRECT, KIND_SITEMAP):  # no record, no table row
            log.warning("%s task %s failed: %r", task.kind, task.url, exc)
            return TaskDone(self.worker_id, task.url, SITEMAP if task.kind == KIND_SITEMAP else ROBOTS, None, reason)
        try:
            self.writer.write(self._record(task, None, error=f"{reason}: {exc}"), ())
            self.claims.fail_if_in_flight(task)
        except Exception:  # the table itself may be what broke; the dispatcher notices
            pass
        return TaskDone(self.worker_id, task.url, FAILED, None, reason)


#: The fields of a stored record that a 304 carries forward as they were.
_CARRIED = (
    "content_type",
    "title",
    "fingerprint",
    "canonical",
    "duplicate_of",
    "content",
    "converter",
    "fallback_error",
    "simhash",
    "near_duplicate_of",
    "near_duplicate_distance",
    "payload_digest",
    "warc_date",  # the response record holding the body is the earlier capture's
)


def _revisitable(record: dict | None) -> bool:
    """Whether a stored record is a 200 of its own URL (or a 304 that carried one
    forward), whose validators a recrawl sends. Not an exact duplicate's: the page whose
    record holds its Markdown may have changed since, so the duplicate is asked again
    in full and compared afresh."""
    return (
        record is not None
        and not record.get("duplicate_of")
        and record.get("status") in (200, 304)
        and not record.get("error")
        and record.get("final_url") == record.get("url")
        and bool(record.get("fetched_at"))
    )


def _unless_key(sent: str, key: str) -> str | None:
    """The request URL to carry in a task: ``None`` when it is the key itself."""
    return None if sent == key else sent


def _thread_loop(
    processor: PageProcessor, tasks: TaskChannel, results: ResultSender, warc: WarcWriter | None = None
) -> None:
    # with --warc every GET of this thread (pages, redirect hops, retries, robots.txt,
    # sitemaps) goes to the process's WARC file, from the client itself
    client = HttpClient.from_config(processor.config, warc.write_exchange if warc else None)
    try:
        while True:
            try:
                task = tasks.get()
            except EOFError:  # the channel closed: the dispatcher is gone
                return
            if task is STOP:
                return
            try:
                done = processor.run(task, client)
            except Exception as exc:  # a fetcher that raises never takes the crawl down
                done = processor.crash(task, exc)
            results.put(done)
    finally:
        client.close()


class ResultSender:
    """The write end of this fetcher's result pipe, shared by its threads (one send at a
    time: a Connection is not thread-safe)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()

    def put(self, message: TaskDone | Exchanged) -> None:
        """Send one message to the dispatcher (blocks while the pipe is full). A closed
        pipe means the dispatcher is gone: this process ends at once, as its lifeline
        would a moment later (:mod:`crawler.engine.lifeline`), without a traceback per thread."""
        with self._lock:
            try:
                self._connection.send(message)
            except (BrokenPipeError, ConnectionResetError):
                os._exit(PARENT_DIED_EXIT_CODE)


def fetcher_main(
    worker_id: int,
    config: CrawlConfig,
    tasks: TaskChannel,
    results: Connection,
    table: VisitedProxy | RedisCrawl,
    dispatcher_pid: int,
    cookie_store: CookieStoreProxy | None = None,
) -> None:
    """Entry point of a fetcher process (module level, so every start method can run it).

    Args:
        worker_id: fetcher number, names its output files.
        config: the frozen :class:`crawler.config.CrawlConfig`.
        tasks: this fetcher's :class:`crawler.engine.channel.TaskChannel`
            (:class:`FetchTask` or :data:`STOP`).
        results: write end of this fetcher's result pipe (:class:`TaskDone` messages).
        table: proxy of the manager-hosted visited table, or the
            :class:`crawler.engine.rediscrawl.RedisCrawl` with ``--redis``.
        dispatcher_pid: the dispatcher's pid: this process exits at once when it is
            gone (:func:`crawler.engine.lifeline.watch_parent`).
        cookie_store: with ``--cookies``, the proxy of the manager-hosted
            :class:`crawler.engine.cookiestore.CookieStore`; else None.
    """
    child_signals()  # SIGINT and SIGTERM are the dispatcher's: ignored here
    watch_parent(dispatcher_pid)  # a SIGKILLed dispatcher must not leave this running
    writer = RecordWriter(config.out_dir, worker_id, config.shard_bytes, config.compress)
    warc = WarcWriter.from_config(config, worker_id) if config.warc else None
    sender = ResultSender(results)
    processor = PageProcessor(worker_id, config, table, writer, sender.put, cookie_store)
    threads = [
        threading.Thread(
            target=_thread_loop, args=(processor, tasks, sender, warc), name=f"fetcher-{worker_id}-{n}", daemon=True
        )
        for n in range(config.threads)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    if warc is not None:
        warc.close()
