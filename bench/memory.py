"""Memory over time: resident memory of every crawler process during a large crawl.

Usage:
    .venv/bin/python bench/memory.py [--pages 100000] [--links 20] [--workers 2] [--threads 4]
                                     [--interval 1.0]
    (BENCH_QUICK=1 changes nothing: this benchmark is a single run anyway; 100,000 pages
    took about 4 minutes on 2 busy cores, 3.5 of them the crawl itself)

A site of ``--pages`` small HTML pages is generated into a temporary folder (on /dev/shm
when it is writable: 100,000 files in seconds; removed at the end) (page i links
to page i+1, so every page is reachable from ``/p0.html``, plus ``--links - 1`` others
drawn with a fixed random seed) and served by nginx (``bench/nginx.py``, one worker) on
127.0.0.1; nginx is a sibling of the crawler, not in its process tree, and no other address
is ever contacted. The crawler runs as a subprocess::

    python -m crawler http://127.0.0.1:PORT/p0.html --out DIR --workers 2 --threads 4 \\
        --progress-interval 1

What is measured, every ``--interval`` seconds (psutil, from this process, which is not in
the crawler's tree):
  * RSS of every process of the crawler's tree, and USS (``memory_full_info``, read from
    ``/proc/PID/smaps_rollup``). RSS of a forked child also counts the pages it still shares
    with the dispatcher (copy-on-write); USS counts only its private pages. The table and
    the slopes are RSS; USS is in the JSON and dashed on the plot.
  * URLs done: lines of ``DIR/pages-*.jsonl`` (one record per finished URL; the crawl
    runs without ``--compress``, so every shard stays plain), read incrementally; and, from
    the crawler's progress line on stderr (every second), the frontier size and the URLs in
    flight, so URLs claimed = done + frontier + in flight.
Roles (dispatcher, manager, fetcher, other) come from ``DIR/summary.json`` (``processes``)
after the crawl.

Slopes: least-squares fits of RSS against URLs done over the steady part of the crawl
(from 5% of the URLs done to the end of the crawl loop), its late part (from 50%) and the
part after 95% of the URLs were claimed, and of RSS against URLs claimed over the crawl
loop (claims run far ahead of the crawl on a site with many links per page). The finish
phase, when the dispatcher loads the link graph to write ``edges.tsv`` and ``tree.txt``, is
reported separately. Expected bytes per URL come from the crawler's own structures (the
visited table, the frontier, the set of fetched URLs, a fetcher's OfferedKeys if the code
has it, the finish phase's link graph and tree) built in this process under tracemalloc
with URLs spelled like the crawl's: Python allocations, not RSS, so allocator rounding is
not in them. The script prints the table, the model and where memory grows.

Output files:
    bench/results/memory.json   the settings, the run, every sample (t, URLs done/claimed,
                                frontier, per pid: role, rss, uss), the model and the fits
    bench/results/memory.png    RSS (MiB) of each process over time, labelled by role, and
                                URLs done / claimed / in the frontier below
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from nginx import Nginx, nginx_binary  # noqa: E402

import crawler.engine.visited  # noqa: E402
from crawler.engine.frontier import MemoryFrontier  # noqa: E402
from crawler.engine.messages import FetchTask  # noqa: E402
from crawler.engine.visited import VisitedTable  # noqa: E402
from crawler.output.graph import LinkGraph, write_tree  # noqa: E402

MIB = 2**20
#: The crawler's progress line (crawler/engine/dispatcher.py, Dispatcher._progress).
PROGRESS = re.compile(r"done (\d+) \(pages \d+, failed \d+\) \| frontier (\d+) \| in flight (\d+)")
#: The steady part of the crawl starts when this fraction of the URLs is done.
STEADY_FROM = 0.05
#: The late part of the crawl starts when this fraction of the URLs is done.
LATE_FROM = 0.5
#: A process whose steady slope is below this many bytes per URL is called flat.
FLAT_B_PER_URL = 10


# -- the site ----------------------------------------------------------------------------
def generate_site(root: str, pages: int, links: int, seed: int = 1) -> int:
    """Write ``pages`` HTML files ``p0.html`` ... into ``root``; returns the bytes written.

    Page i links to i+1 (the last one to 0) and to ``links - 1`` pages drawn at random.
    """
    rng = random.Random(seed)
    population = range(pages)
    total = 0
    for i in range(pages):
        targets = [(i + 1) % pages, *rng.sample(population, min(links - 1, pages))]
        body = "".join(
            f'<p>Paragraph {j} of page {i}. <a href="/p{t}.html">page {t}</a></p>\n' for j, t in enumerate(targets)
        )
        data = (
            f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Page {i}</title>"
            f"</head>\n<body><h1>Page {i}</h1>\n{body}</body></html>\n"
        ).encode()
        fd = os.open(os.path.join(root, f"p{i}.html"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        total += len(data)
    return total


# -- the model: bytes per entry of the crawler's growing structures ------------------------
def _traced(build):
    """Python bytes allocated by ``build()`` and still held by what it returns."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def model(base_url: str, n: int, links: int) -> dict:
    """Bytes per entry of each structure that grows with the crawl, built with the crawl's
    URL spelling (``base_url`` + ``pN.html``) and the crawler's own classes.

    Each URL string is made fresh (as unpickling a message makes it in the crawler).
    """
    n = max(n, 1000)

    def urls():
        return [f"{base_url}p{i}.html" for i in range(n)]

    url_str = _traced(urls) / n

    def fetched():  # Dispatcher.fetched: a set of URL strings (strings counted above)
        return set(urls())

    set_slot = _traced(fetched) / n - url_str

    def visited():  # the manager's VisitedTable: shard dicts of fingerprint -> state
        items = urls()
        table = VisitedTable(64)
        for k in range(0, n, links):  # one claim_many per page's links, as settle does
            table.claim_many(items[k : k + links])
        return table  # the URL strings are freed: only the int keys and dict slots stay

    visited_entry = _traced(visited) / n

    def frontier():  # MemoryFrontier of FetchTasks; a page's won links share its parent string
        f = MemoryFrontier()
        parent = f"{base_url}p0.html"
        for i in range(n):
            if i % (links - 1) == 0:
                parent = f"{base_url}p{i}.html"
            f.push(FetchTask(f"{base_url}p{i}.html", 2, parent))
        return f

    frontier_entry = _traced(frontier) / n

    offered_entry = offered_limit = None
    offered_keys = getattr(crawler.engine.visited, "OfferedKeys", None)
    if offered_keys is not None:  # a fetcher's filter of keys it already offered, if present

        def offered():
            keys = offered_keys()
            for url in urls():
                keys.first_offer(url)
            return keys

        offered_entry = round(_traced(offered) / n, 1)
        offered_limit = getattr(offered_keys(), "limit", None)

    finish = finish_model(base_url, max(1000, min(n, 200_000 // links)), links)
    return {
        "urls": n,
        "url_str": round(url_str, 1),
        "fetched_set_entry": round(url_str + set_slot, 1),
        "fetched_set_slot": round(set_slot, 1),
        "visited_entry": round(visited_entry, 1),
        "frontier_entry": round(frontier_entry, 1),
        "offered_entry": offered_entry,
        "offered_limit": offered_limit,
        **finish,
    }


def finish_model(base_url: str, pages: int, links: int) -> dict:
    """Python bytes per edge of the dispatcher's finish phase (crawler/api.py finish_outputs)
    on a synthetic graph shaped like the site (``pages`` x ``links`` edges): the graph as
    loaded (``graph_edge``), and the peak while it is loaded, written sorted and the tree
    derived from it (``finish_peak_per_edge``)."""
    tmp = tempfile.mkdtemp(prefix="crawler-memory-model-")
    try:
        rng = random.Random(2)
        edges = 0
        with open(os.path.join(tmp, "edges-00.tsv"), "w") as f:
            for i in range(pages):
                for t in dict.fromkeys([(i + 1) % pages, *rng.sample(range(pages), links - 1)]):
                    f.write(f"{base_url}p{i}.html\t{base_url}p{t}.html\tlink\t1\n")
                    edges += 1
        fetched = {f"{base_url}p{i}.html" for i in range(pages)}
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            graph = LinkGraph.load(tmp)  # finish_outputs, in order
            loaded = tracemalloc.get_traced_memory()[0] - before
            graph.write_tsv(os.path.join(tmp, "edges.tsv"))
            sources = {source for source, _ in graph.edges}
            tree = graph.tree((f"{base_url}p0.html",), fetched | set())
            write_tree(tree, os.path.join(tmp, "tree.txt"))
            graph.redirect_cycles(fetched)
            peak = tracemalloc.get_traced_memory()[1] - before
            del graph, sources, tree
        finally:
            tracemalloc.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "graph_edge": round(loaded / edges, 1),
        "finish_peak_per_edge": round(peak / edges, 1),
        "graph_edges_modelled": edges,
    }


# -- the run -----------------------------------------------------------------------------
class Progress:
    """Reads the crawler's stderr in a thread; keeps the last progress line's numbers."""

    def __init__(self, stream) -> None:
        self.done = self.frontier = self.in_flight = None
        self.other: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            m = PROGRESS.search(line)
            if m:
                self.done, self.frontier, self.in_flight = map(int, m.groups())
            elif line.strip():
                self.other.append(line.rstrip("\n"))

    def join(self) -> None:
        self._thread.join(5)


class RecordCounter:
    """Counts the lines of ``out/pages-*.jsonl`` incrementally (new bytes only)."""

    def __init__(self, out: str) -> None:
        self.out = out
        self._offsets: dict[str, int] = {}
        self.lines = 0

    def count(self) -> int:
        for path in glob.glob(os.path.join(self.out, "pages-*.jsonl")):
            with open(path, "rb") as f:
                f.seek(self._offsets.get(path, 0))
                while chunk := f.read(1 << 20):
                    self.lines += chunk.count(b"\n")
                self._offsets[path] = f.tell()
        return self.lines


def sample_tree(root: psutil.Process) -> list[dict]:
    """RSS and USS of ``root`` and every descendant now."""
    rows = []
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return rows
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except psutil.Error:  # exited between listing and reading
            continue
        rows.append({"pid": proc.pid, "rss": info.rss, "uss": info.uss})
    return rows


def run_crawl(seed: str, out: str, workers: int, threads: int, interval: float) -> dict:
    """Run the crawler as a subprocess and sample its tree every ``interval`` seconds."""
    cmd = [
        sys.executable,
        "-m",
        "crawler",
        seed,
        "--out",
        out,
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--progress-interval",
        str(interval),
    ]
    stdout_path = out + ".stdout"
    samples = []
    sampling_s = 0.0
    with open(stdout_path, "w") as stdout:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=os.path.dirname(HERE))
        root = psutil.Process(proc.pid)
        progress = Progress(proc.stderr)
        counter = RecordCounter(out)
        tick = started
        while proc.poll() is None:
            t0 = time.monotonic()
            procs = sample_tree(root)
            done = counter.count()
            sampling_s += time.monotonic() - t0
            if procs:
                claimed = None
                if progress.done is not None:
                    claimed = progress.done + progress.frontier + progress.in_flight
                samples.append(
                    {
                        "t": round(t0 - started, 3),
                        "urls_done": done,
                        "progress_done": progress.done,
                        "frontier": progress.frontier,
                        "in_flight": progress.in_flight,
                        "claimed": claimed,
                        "processes": procs,
                    }
                )
            tick += interval
            time.sleep(max(0.0, tick - time.monotonic()))
        wall = time.monotonic() - started
        progress.join()
    with open(stdout_path) as f:
        stdout_text = f.read()
    os.remove(stdout_path)
    if proc.returncode != 0:
        raise RuntimeError(f"crawler exited {proc.returncode}: {' '.join(progress.other[-5:])}")
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return {
        "cmd": cmd,
        "interval": interval,
        "wall_s": round(wall, 2),
        "samples": samples,
        "summary": summary,
        "stdout": stdout_text.strip(),
        "stderr_other": progress.other[-20:],
        "sampling_s_per_sample": round(sampling_s / max(len(samples), 1), 4),
        "root_pid": proc.pid,
    }


# -- analysis ----------------------------------------------------------------------------
def assign_roles(run: dict) -> dict[int, str]:
    """pid -> role from summary.json; fetchers numbered in pid order ("fetcher 0")."""
    roles = {run["root_pid"]: "dispatcher"}
    for role, row in run["summary"].get("processes", {}).items():
        pids = sorted(row.get("pids", []))
        for k, pid in enumerate(pids):
            roles[pid] = f"fetcher {k}" if role == "fetcher" else role
    for sample in run["samples"]:
        for p in sample["processes"]:
            p["role"] = roles.setdefault(p["pid"], "other")
    return roles


def least_squares(xs, ys) -> float | None:
    """Slope of the least-squares line through (xs, ys), or None with fewer than 3 points."""
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def analyse(run: dict, roles: dict[int, str]) -> dict:
    """Per process: start / peak / end RSS and the least-squares slopes."""
    samples = run["samples"]
    total = run["summary"]["visited"] + run["summary"]["failed"]
    # The crawl loop ends as the last record is written: samples from then on are the
    # finish phase (outputs derived from the edges). The start is the first sample with a
    # record written (the processes are up, imports done).
    crawl_end = next((s["t"] for s in samples if s["urls_done"] >= total), samples[-1]["t"] + 1)
    crawl_start = next((s["t"] for s in samples if s["urls_done"] > 0), 0.0)
    steady_from = STEADY_FROM * total
    claimed_at = [(s["t"], s["urls_done"], s["claimed"]) for s in samples if s["claimed"] is not None]
    saturated = next(((t, d) for t, d, c in claimed_at if c >= 0.95 * total), (None, None))
    series: dict[int, list] = collections.defaultdict(list)
    for s in samples:
        for p in s["processes"]:
            series[p["pid"]].append((s, p))

    def slope(points, x="urls_done", y="rss"):
        points = [(s, p) for s, p in points if s[x] is not None]
        return least_squares([s[x] for s, _ in points], [p[y] for _, p in points])

    rows = {}
    for pid, points in series.items():
        crawl = [(s, p) for s, p in points if crawl_start <= s["t"] < crawl_end] or points
        steady = [(s, p) for s, p in crawl if s["urls_done"] >= steady_from]
        flat = [(s, p) for s, p in crawl if saturated[0] is not None and s["t"] >= saturated[0]]
        late = [(s, p) for s, p in crawl if s["urls_done"] >= LATE_FROM * total]
        start, end = crawl[0][1], crawl[-1][1]
        finish = [p["rss"] for s, p in points if s["t"] >= crawl_end]
        rows[pid] = {
            "role": roles.get(pid, "other"),
            "pid": pid,
            "start_rss": start["rss"],
            "end_rss": end["rss"],
            "peak_rss_crawl": max(p["rss"] for _, p in crawl),
            "peak_rss_finish": max(finish) if finish else None,
            "peak_rss": max(p["rss"] for _, p in points),
            "start_uss": start["uss"],
            "end_uss": end["uss"],
            "steady_start_rss": steady[0][1]["rss"] if steady else None,
            "slope_rss_per_url_done": slope(steady),
            "slope_uss_per_url_done": slope(steady, y="uss"),
            "slope_rss_per_url_done_late": slope(late),
            "slope_rss_per_url_done_after_claims": slope(flat),
            "slope_rss_per_url_claimed": slope(crawl, x="claimed"),
            "growth_per_url_done": (end["rss"] - start["rss"])
            / max(crawl[-1][0]["urls_done"] - crawl[0][0]["urls_done"], 1),
            "samples": len(points),
            "steady_samples": len(steady),
            "flat_samples": len(flat),
        }
    frontier = [s["frontier"] for s in samples if s["frontier"] is not None]
    return {
        "urls": total,
        "crawl_start_s": crawl_start,
        "crawl_end_s": crawl_end,
        "steady_from_urls": steady_from,
        "peak_frontier": max(frontier) if frontier else None,
        "claims_95pct_at_s": saturated[0],
        "urls_done_when_95pct_claimed": saturated[1],
        "processes": rows,
    }


def plot(run: dict, result: dict, path: str) -> bool:
    """RSS per process over time (whole run, then the crawl loop zoomed) and the URL counts."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("memory: matplotlib is not installed (pip install -e '.[bench]'): no plot", file=sys.stderr)
        return False
    samples = run["samples"]
    fig, (whole, zoom, urls) = plt.subplots(
        3, 1, figsize=(11, 11), sharex=True, gridspec_kw={"height_ratios": [2, 3, 2]}
    )
    by_pid: dict[int, list] = collections.defaultdict(list)
    for s in samples:
        for p in s["processes"]:
            by_pid[p["pid"]].append((s["t"], p["rss"] / MIB, p["uss"] / MIB, p["role"]))
    for pid in sorted(by_pid, key=lambda pid: (by_pid[pid][0][3], pid)):
        pts = by_pid[pid]
        t = [x[0] for x in pts]
        for ax in (whole, zoom):
            (line,) = ax.plot(t, [x[1] for x in pts], label=f"{pts[0][3]} (pid {pid}) RSS")
            ax.plot(t, [x[2] for x in pts], "--", color=line.get_color(), linewidth=0.8, label=f"{pts[0][3]} USS")
    crawl_peak = max(r["peak_rss_crawl"] for r in result["processes"].values()) / MIB
    zoom.set_ylim(0, crawl_peak * 1.15)
    whole.set_title(
        f"crawler memory per process, {result['urls']:,} URLs, {run['summary']['workers']} "
        f"fetchers x {run['summary']['threads']} threads (sampled every "
        f"{run['interval']:g} s)"
    )
    whole.set_ylabel("MiB (whole run)")
    zoom.set_ylabel("MiB (crawl loop, zoomed)")
    zoom.legend(fontsize=7, ncol=2, loc="lower right")
    t = [s["t"] for s in samples]
    urls.plot(t, [s["urls_done"] for s in samples], label="URLs done (records written)")
    urls.plot(t, [s["claimed"] for s in samples], label="URLs claimed (done + frontier + in flight)")
    urls.plot(t, [s["frontier"] for s in samples], label="frontier (claimed, not dispatched)")
    urls.set_xlabel("seconds since the crawler started")
    urls.set_ylabel("URLs")
    urls.legend(fontsize=8, loc="center left")
    for ax in (whole, zoom, urls):
        ax.axvline(result["crawl_end_s"], color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    whole.text(
        result["crawl_end_s"],
        whole.get_ylim()[1] * 0.95,
        "crawl loop ends: edges loaded, outputs written ",
        fontsize=8,
        va="top",
        ha="right",
        color="grey",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def fmt_mib(b: int | None) -> str:
    return f"{b / MIB:7.1f}" if b is not None else f"{'-':>7}"


def fmt_slope(v: float | None, width: int = 8) -> str:
    return f"{v:{width}.1f}" if v is not None else f"{'-':>{width}}"


def report(result: dict, mdl: dict, run: dict) -> None:
    """Print the table and what explains each slope."""
    rows = sorted(result["processes"].values(), key=lambda r: (r["role"], r["pid"]))
    n = result["urls"]
    print(
        f"\nRSS per process (MiB; start = first sample with a record written, end = last sample of "
        f"the crawl loop, {result['crawl_end_s']:.0f} s; finish = the outputs written after it)"
    )
    print(
        "slopes in bytes of RSS per URL done, least squares: 'steady' from "
        f"{STEADY_FROM:.0%} of URLs done to the end of the crawl loop, 'late' from {LATE_FROM:.0%}, "
        "'claims done' from when 95% "
        f"of the URLs were claimed ({result['claims_95pct_at_s']} s); 'per claimed' is RSS against "
        "URLs claimed over the crawl loop"
    )
    print(
        f"{'process':<12} {'pid':>7} {'start':>7} {'peak':>7} {'end':>7} {'finish':>7} "
        f"{'steady':>8} {'late':>8} {'claims done':>11} {'per claimed':>11}"
    )
    for r in rows:
        print(
            f"{r['role']:<12} {r['pid']:>7} {fmt_mib(r['start_rss'])} {fmt_mib(r['peak_rss_crawl'])} "
            f"{fmt_mib(r['end_rss'])} {fmt_mib(r['peak_rss_finish'])} "
            f"{fmt_slope(r['slope_rss_per_url_done'])} {fmt_slope(r['slope_rss_per_url_done_late'])} "
            f"{fmt_slope(r['slope_rss_per_url_done_after_claims'], 11)} "
            f"{fmt_slope(r['slope_rss_per_url_claimed'], 11)}"
        )
    fetchers = [r for r in rows if r["role"].startswith("fetcher")]

    def worst(key):
        values = [r[key] for r in fetchers if r[key] is not None]
        return max(values, key=abs) if values else None

    if fetchers:
        print(
            f"{'fetcher max':<12} {'':>7} {fmt_mib(max(r['start_rss'] for r in fetchers))} "
            f"{fmt_mib(max(r['peak_rss_crawl'] for r in fetchers))} "
            f"{fmt_mib(max(r['end_rss'] for r in fetchers))} {'':>7} "
            f"{fmt_slope(worst('slope_rss_per_url_done'))} {fmt_slope(worst('slope_rss_per_url_done_late'))} "
            f"{fmt_slope(worst('slope_rss_per_url_done_after_claims'), 11)} "
            f"{fmt_slope(worst('slope_rss_per_url_claimed'), 11)}"
        )
    summary = run["summary"]
    print(
        f"\nsummary.json says peak_rss_bytes {summary['peak_rss_bytes'] / MIB:.0f} MiB (all processes); "
        f"measured here: {sum(r['peak_rss_crawl'] for r in rows) / MIB:.0f} MiB summed per-process peaks "
        f"in the crawl loop, dispatcher alone {max(r['peak_rss'] for r in rows) / MIB:.0f} MiB in the "
        "finish phase, which the crawler's own last sample (crawler/engine/dispatcher.py run: "
        "self.monitor.sample() before finish_outputs) does not see."
    )
    print(
        f"Claims run ahead of the crawl: 95% of the {n:,} URLs were claimed when "
        f"{result['urls_done_when_95pct_claimed']} were done; the frontier peaked at "
        f"{result['peak_frontier']} tasks."
    )
    print(
        "\nModel (this process, tracemalloc: Python allocations, no allocator overhead; the "
        "crawler's own classes, URLs spelled like the crawl's):"
    )
    print(
        f"  visited table, manager    {mdl['visited_entry']:6.1f} B per claimed URL   crawler/engine/visited.py "
        "claim_many: shard[fp] = IN_FLIGHT (64-bit int key + dict slot)"
    )
    print(
        f"  Dispatcher.fetched        {mdl['fetched_set_entry']:6.1f} B per done URL      "
        f"crawler/engine/dispatcher.py _handle: self.fetched.add(message.url) ({mdl['url_str']:.0f} B string "
        f"+ {mdl['fetched_set_slot']:.0f} B set slot; only without a state store)"
    )
    print(
        f"  frontier, dispatcher      {mdl['frontier_entry']:6.1f} B per waiting URL   "
        "crawler/engine/frontier.py MemoryFrontier push: FetchTask + URL string + deque slot (the crawl "
        "itself uses the disk frontier: a window of these)"
    )
    print(
        f"  link graph, finish phase  {mdl['graph_edge']:6.1f} B per edge loaded,  "
        f"{mdl['finish_peak_per_edge']:.1f} B per edge at the peak   crawler/api.py finish_outputs: "
        "LinkGraph.load (crawler/output/graph.py: interned URLs, edge id arrays), write_tsv, tree()"
    )
    print("\nWhere memory grows:")
    man = next((r for r in rows if r["role"] == "manager"), None)
    disp = next((r for r in rows if r["role"] == "dispatcher"), None)
    if man:
        print(
            f"  manager: {(man['end_rss'] - man['start_rss']) / MIB:.1f} MiB over the crawl, "
            f"{fmt_slope(man['slope_rss_per_url_claimed']).strip()} B per URL claimed (model "
            f"{mdl['visited_entry']:.0f} B + allocator rounding): it grows with claims, which run "
            f"ahead of the crawl, and is flat once every URL is claimed "
            f"({fmt_slope(man['slope_rss_per_url_done_after_claims']).strip()} B per URL done after 95% "
            "were claimed)."
        )
    if disp:
        print(
            f"  dispatcher, crawl loop: {disp['start_rss'] / MIB:.1f} -> {disp['peak_rss_crawl'] / MIB:.1f} "
            f"MiB, {fmt_slope(disp['slope_rss_per_url_claimed']).strip()} B per URL claimed, then "
            f"{fmt_slope(disp['slope_rss_per_url_done_after_claims']).strip()} B per URL done once the "
            "claims are in. The frontier is on disk (crawler/engine/statestore.py DiskFrontier: at most 1,000 "
            "tasks per origin in memory) and the URLs done are not kept in memory (read back from "
            "state.sqlite at the end), so what grows is SQLite's page cache, capped at 16 MiB "
            "(crawler/engine/statestore.py CACHE_KIB), while the state file grows; then it is flat. (The "
            f"in-memory model of the older design: frontier peak {result['peak_frontier']} tasks x "
            f"{mdl['frontier_entry']:.0f} B, fetched set ~{mdl['fetched_set_slot']:.0f} B per URL.)"
        )
        edges = summary.get("edges") or 0
        if disp["peak_rss_finish"] is not None and edges:
            grown = disp["peak_rss_finish"] - disp["end_rss"]
            print(
                f"  dispatcher, finish phase: +{grown / MIB:.0f} MiB to {disp['peak_rss_finish'] / MIB:.0f} MiB "
                f"for {edges:,} edges = {grown / edges:.0f} B per edge, {grown / n:.0f} B per URL "
                f"(model {mdl['finish_peak_per_edge']:.0f} B per edge at the peak, "
                f"{edges * mdl['finish_peak_per_edge'] / MIB:.0f} MiB): every edge of edges-NN.tsv is "
                "loaded into compact arrays (crawler/output/graph.py: URLs interned once, edges as integer "
                "ids) to de-duplicate and sort them and to derive the tree, and the set of URLs done "
                "is read back from state.sqlite; this, not the crawl, sets the dispatcher's peak."
            )
    if fetchers:
        grown = max(r["end_rss"] - r["start_rss"] for r in fetchers)
        warm = max((r["steady_start_rss"] or r["end_rss"]) - r["start_rss"] for r in fetchers)
        steady, late = worst("slope_rss_per_url_done"), worst("slope_rss_per_url_done_late")
        flat = late is not None and abs(late) < FLAT_B_PER_URL
        print(
            f"  fetchers: {fmt_mib(min(r['start_rss'] for r in fetchers)).strip()} -> "
            f"{fmt_mib(max(r['end_rss'] for r in fetchers)).strip()} MiB; {fmt_slope(steady).strip()} B "
            f"per URL done in the steady part, {fmt_slope(late).strip()} B in the late part: "
            + ("flat by the end" if flat else f"NOT flat (over {FLAT_B_PER_URL} B per URL late)")
            + f"; {warm / MIB:.1f} MiB of the {grown / MIB:.1f} MiB gained come before {STEADY_FROM:.0%} "
            "of the URLs are done."
        )
        if mdl.get("offered_entry") is not None:
            limit = mdl["offered_limit"] or n
            kept = min(n, limit)
            print(
                f"    What grows: OfferedKeys (crawler/engine/visited.py; crawler/engine/worker.py _finish: "
                f"self.offered.first_offer) keeps the fingerprint of every distinct link a fetcher has "
                f"offered, {mdl['offered_entry']:.0f} B each (model), bounded at {limit:,} keys "
                f"({limit * mdl['offered_entry'] / MIB:.1f} MiB) after which it is emptied. Here a "
                f"fetcher sees links to nearly all {n:,} URLs: {kept:,} x {mdl['offered_entry']:.0f} B = "
                f"{kept * mdl['offered_entry'] / MIB:.1f} MiB expected, {grown / MIB:.1f} MiB measured; "
                "it fills like the claims (fast early, saturating), so bounded, not flat."
            )
        else:
            print(
                "    No per-URL state in a fetcher: tasks come from the bounded queue, records are "
                "written and dropped; the early gain is warm-up (allocator pools, caches, connections)."
            )
    in_flight = [s["in_flight"] for s in run["samples"] if s["in_flight"] is not None]
    if in_flight:
        print(
            f"  task queue: at most {max(in_flight)} URLs in flight in any progress line (the dispatcher "
            "puts tasks only while in flight < queue bound + fetcher threads), so the queue and "
            "Dispatcher.in_flight stay bounded."
        )


def source_state() -> dict:
    """Which crawler code ran: the package folder, and the git commit with the paths under
    crawler/ that differ from it (None outside a git checkout)."""
    root = os.path.dirname(HERE)
    state = {"crawler_dir": os.path.join(root, "crawler"), "commit": None, "crawler_changes": None}
    try:
        state["commit"] = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        state["crawler_changes"] = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--", "crawler"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        pass
    return state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    if nginx_binary() is None:
        print("memory: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    # tmpfs when there is one: 100,000 small files are written in seconds, not tens of seconds
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    site = tempfile.mkdtemp(prefix="crawler-memory-site-", dir=shm)
    os.chmod(site, 0o755)  # nginx's worker runs as another user
    out_parent = tempfile.mkdtemp(prefix="crawler-memory-out-")
    try:
        t0 = time.monotonic()
        site_bytes = generate_site(site, args.pages, args.links)
        gen_s = time.monotonic() - t0
        print(f"generated {args.pages:,} pages ({site_bytes / MIB:.1f} MiB) in {gen_s:.1f} s", flush=True)
        with Nginx(site) as server:
            base = server.url("/")
            t0 = time.monotonic()
            mdl = model(base, args.pages, args.links)
            print(f"model built in {time.monotonic() - t0:.1f} s: {mdl}", flush=True)
            server.requests()
            out = os.path.join(out_parent, "crawl")
            run = run_crawl(server.url("/p0.html"), out, args.workers, args.threads, args.interval)
            hits = server.requests()
        roles = assign_roles(run)
        result = analyse(run, roles)
    finally:
        shutil.rmtree(site, ignore_errors=True)
        shutil.rmtree(out_parent, ignore_errors=True)
    summary = run["summary"]
    print(
        f"crawl: {summary['visited']} visited, {summary['failed']} failed, reconciled "
        f"{summary['reconciled']}, {run['wall_s']:.1f} s wall ({summary['urls_per_s']} URLs/s), "
        f"{len(run['samples'])} samples ({run['sampling_s_per_sample'] * 1000:.1f} ms each); nginx "
        f"logged {sum(hits.values())} requests, {sum(hits.values()) - len(hits)} duplicates"
    )
    if summary["visited"] != args.pages:
        print(f"memory: WARNING: {summary['visited']} pages visited, {args.pages} generated", file=sys.stderr)
    report(result, mdl, run)
    os.makedirs(args.results, exist_ok=True)
    png = os.path.join(args.results, "memory.png")
    plotted = plot(run, result, png)
    keep = {k: v for k, v in run.items() if k != "samples"}
    with open(os.path.join(args.results, "memory.json"), "w") as f:
        json.dump(
            {
                "settings": vars(args),
                "source": source_state(),
                "site_bytes": site_bytes,
                "generate_s": round(gen_s, 2),
                "run": keep,
                "model_bytes": mdl,
                "result": result,
                "nginx_requests": sum(hits.values()),
                "nginx_duplicates": sum(hits.values()) - len(hits),
                "samples": run["samples"],
            },
            f,
            indent=None,
            separators=(",", ":"),
        )
    print(f"\nwrote {os.path.join(args.results, 'memory.json')}" + (f" and {png}" if plotted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
