"""Manager ceiling: page settles per second the visited-table manager serves, and its CPU per call.

Usage:
    PYTHONPATH=. .venv/bin/python bench/manager_ceiling.py [--rounds 2] [--clients 1 2 4 8 16 32]
        [--origins 10 1000 100000] [--origin-clients 32] [--new 2] [--seen 2] [--duration 4]
        [--modes settle page] [--mixes 1:0 2:2 2:10 1:42] [--mix-clients 8]

The manager is the product's (:func:`crawler.engine.visited.start_manager`, a
:class:`crawler.engine.visited.VisitedTable` of 64 shards behind its proxy), a fresh one per
measurement. Each client process (fork) does what a fetcher does per page, back to back
for ``--duration`` seconds after a common start:

* ``settle`` mode: ``table.settle(url, "visited", links)``, one round trip: the page
  ``url`` (a URL this client won earlier, so it is in flight) is marked visited and
  ``links`` are claimed: ``--new`` URLs nobody has claimed yet and ``--seen`` that this
  client claimed before (they lose, as most of a page's links do); a few links a call,
  as a fetcher sends them after its :class:`crawler.engine.visited.OfferedKeys` filter;
* ``page`` mode: the two round trips a real fetcher makes per page:
  ``register_content(fingerprint, simhash, url)`` (random 64-bit values: the exact and
  near-duplicate registry, which grows by one page per call) then the same ``settle``.

URLs are ``http://127.0.X.1:PORT/docs/section-S/page-N.html`` strings spread round robin
over ``--origins`` origins (nothing is fetched). Part 1 varies the clients at 1,000
origins; part 2 varies the origins at ``--origin-clients`` clients (``settle`` mode): the
table shards by fingerprint, so the origins should not matter, and this measures it.
Part 3 varies the links per call (``--mixes`` NEW:SEEN, ``page`` mode, ``--mix-clients``
clients): a fetcher sends every link it has not offered before, so early in a crawl (or
on a site whose pages link to many new URLs) a settle carries tens of links: 1:42 is a
python3.11-doc page (43 distinct links) whose links were all new to this fetcher.

Per measurement: calls/s (pages/s) and claims/s over all clients (each client's calls
over its own elapsed time, summed), manager CPU (psutil ``cpu_times`` of the manager
process from the start to the last client's end) per call, its reciprocal as the
manager's ceiling (it is one process; its Python work holds one GIL, so about one core
is what it can use), the clients' CPU per call (``time.process_time`` in each), and
``os.getloadavg()``: the machine (2 cores) is shared, and with many clients the clients
compete with the manager, so the wall rate here is not the ceiling.

Everything is saved to ``bench/results/manager_ceiling.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import random
import sys
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rounds  # noqa: E402  # bench/rounds.py, beside this script

from crawler.engine.visited import start_manager  # noqa: E402

RESULTS = os.path.join(HERE, "results")
FIRST_PORT, PORTS = 1024, 60_000
#: Won URLs a client keeps to settle later (the rest stay in flight in the table).
PENDING = 1000


def url_of(number: int, origins: int) -> str:
    index = number % origins
    return f"http://127.0.{index // PORTS}.1:{FIRST_PORT + index % PORTS}/docs/section-{number % 97}/page-{number}.html"


def client(
    table, cid: int, clients: int, origins: int, new: int, seen: int, mode: str, duration: float, ready, start, out
) -> None:
    """One fetcher's page calls, back to back for ``duration`` s after ``start`` is set."""
    rng = random.Random(cid)
    number = lambda n: n * clients + cid  # noqa: E731 (this client's n-th URL)
    made = 1
    first = url_of(number(0), origins)
    table.claim_many([first])  # connects, and puts the first page in flight
    pending = collections.deque([first])
    ready.put(cid)
    start.wait()
    began, cpu0 = time.monotonic(), time.process_time()
    end = began + duration
    calls = claims = won_total = 0
    while time.monotonic() < end:
        page = pending.popleft()
        links = [url_of(number(n), origins) for n in range(made, made + new)]
        links += [url_of(number(max(0, made - 1 - j)), origins) for j in range(seen)]
        made += new
        if mode == "page":
            table.register_content(rng.getrandbits(64), rng.getrandbits(64), page)
        won = table.settle(page, "visited", links)
        calls += 1
        claims += len(links)
        for link, w in zip(links, won):
            if w:
                won_total += 1
                if len(pending) < PENDING:
                    pending.append(link)
    out.put((cid, calls, claims, won_total, time.monotonic() - began, time.process_time() - cpu0))


def measure(ctx, clients: int, origins: int, mode: str, new: int, seen: int, duration: float) -> dict:
    """One measurement: a fresh manager, ``clients`` client processes for ``duration`` s."""
    load_before = [round(x, 2) for x in os.getloadavg()]
    manager = start_manager(ctx)
    try:
        table = manager.VisitedTable(64)
        ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(
                target=client, args=(table, cid, clients, origins, new, seen, mode, duration, ready, start, out)
            )
            for cid in range(clients)
        ]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=120)
        server = psutil.Process(manager._process.pid)
        cpu = server.cpu_times()
        began = time.monotonic()
        start.set()
        reports = [out.get(timeout=duration + 120) for _ in procs]
        wall = time.monotonic() - began
        cpu_after = server.cpu_times()
        for p in procs:
            p.join(30)
        stored = len(table)
    finally:
        manager.shutdown()
    calls = sum(r[1] for r in reports)
    manager_cpu = cpu_after.user + cpu_after.system - cpu.user - cpu.system
    return {
        "mode": mode,
        "clients": clients,
        "origins": origins,
        "new": new,
        "seen": seen,
        "duration_s": duration,
        "wall_s": round(wall, 3),
        "calls": calls,
        "claims": sum(r[2] for r in reports),
        "won": sum(r[3] for r in reports),
        "stored": stored,
        "calls_per_s": round(sum(r[1] / r[4] for r in reports)),
        "claims_per_s": round(sum(r[2] / r[4] for r in reports)),
        "manager_cpu_s": round(manager_cpu, 3),
        "manager_busy": round(manager_cpu / wall, 3),
        "manager_us_per_call": round(1e6 * manager_cpu / calls, 2),
        "manager_ceiling_calls_per_s": round(calls / manager_cpu),
        "clients_us_per_call": round(1e6 * sum(r[5] for r in reports) / calls, 2),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


FIELDS = (
    "calls_per_s",
    "claims_per_s",
    "manager_us_per_call",
    "manager_ceiling_calls_per_s",
    "manager_busy",
    "clients_us_per_call",
)


def summarize(runs: list[dict]) -> list[dict]:
    return rounds.summarize(runs, ["part", "mode", "origins", "clients", "new", "seen"], FIELDS)


def print_table(rows: list[dict]) -> None:
    head = [
        "part",
        "mode",
        "origins",
        "clients",
        "links new:seen",
        "calls/s",
        "claims/s",
        "manager us/call",
        "manager ceiling calls/s",
        "manager busy",
        "clients us/call",
        "load",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["part"], r["mode"], f"{r['origins']:,}", str(r["clients"]), f"{r['new']}:{r['seen']}"]
        cells += [rounds.span([r[f]["min"], r[f]["max"]]) for f in FIELDS + ("load_1min",)]
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--origins", type=int, nargs="+", default=[10, 1000, 100_000])
    parser.add_argument("--origin-clients", type=int, default=32)
    parser.add_argument("--new", type=int, default=2, help="new links per settle")
    parser.add_argument("--seen", type=int, default=2, help="links already claimed per settle")
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per measurement")
    parser.add_argument("--modes", nargs="+", default=["settle", "page"], choices=["settle", "page"])
    parser.add_argument(
        "--mixes", nargs="*", default=["1:0", "2:2", "2:10", "1:42"], help="NEW:SEEN links per call of part 3"
    )
    parser.add_argument("--mix-clients", type=int, default=8)
    parser.add_argument(
        "--append", action="store_true", help="add these rounds to those already in bench/results/manager_ceiling.json"
    )
    args = parser.parse_args()
    ctx = multiprocessing.get_context("fork")
    path = os.path.join(RESULTS, "manager_ceiling.json")
    runs = json.load(open(path))["runs"] if args.append and os.path.exists(path) else []
    first = 1 + max((r["round"] for r in runs), default=-1)
    for round_no in range(first, first + args.rounds):
        plan = [("clients", mode, 1000, n, args.new, args.seen) for mode in args.modes for n in args.clients]
        plan += [("origins", "settle", n, args.origin_clients, args.new, args.seen) for n in args.origins]
        plan += [("links", "page", 1000, args.mix_clients, *map(int, mix.split(":"))) for mix in args.mixes]
        for part, mode, origins, clients, new, seen in plan:
            run = measure(ctx, clients, origins, mode, new, seen, args.duration)
            run.update(part=part, round=round_no)
            runs.append(run)
            print(
                f"round {round_no} {part:<7} {mode:<6} origins {origins:>7} clients {clients:>3} "
                f"links {new}:{seen}: "
                f"{run['calls_per_s']:>6} calls/s, {run['claims_per_s']:>6} claims/s, manager "
                f"{run['manager_us_per_call']:>6.1f} us/call (ceiling {run['manager_ceiling_calls_per_s']}/s, "
                f"busy {run['manager_busy']}), clients {run['clients_us_per_call']:.1f} us/call, "
                f"load {run['load_before'][0]}-{run['load_after'][0]}",
                flush=True,
            )
    rows = summarize(runs)
    print_table(rows)
    os.makedirs(RESULTS, exist_ok=True)
    with open(path, "w") as f:
        json.dump({"settings": vars(args), "summary": rows, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
