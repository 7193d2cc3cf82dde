"""Visited-table benchmark: claims per second through the manager, and manager memory
per stored URL.

Usage:
    .venv/bin/python bench/visited_table.py [--claims 20000] [--clients 1 2 4]
                                            [--sizes 100000 1000000]

Part 1: each of ``--clients`` processes claims its share of ``--claims`` distinct URLs
(plus the same share again, already claimed, as a fetcher re-finding links does), one
``claim`` call per URL, then in ``claim_many`` batches of 50. Prints claims/s over all
clients and microseconds of wall time per claim per client.
Part 2: resident memory of the manager process (psutil) before and after storing
``--sizes`` URLs through ``claim_many``; prints bytes per URL.
Part 3: the table's share of a page: a fetcher makes two round trips per page (``settle``
with the few links left after its :class:`crawler.engine.visited.OfferedKeys` filter, and
``first_content``), so the cost per page is about two one-URL round trips, compared with
``--page-ms`` (CPU per page of a whole crawl, default the measured 42.5 ms).

Everything is saved to ``bench/results/visited_table.json``. ``BENCH_QUICK=1``: 10,000
claims and 100,000 URLs only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time

import psutil

from crawler.engine.visited import start_manager

BATCH = 50


def urls(prefix: str, count: int) -> list[str]:
    return [f"http://bench.invalid/{prefix}/page-{n}.html?id={n}" for n in range(count)]


def client(table, share: list[str], batched: bool, start, done) -> None:
    start.wait()
    if batched:
        for i in range(0, len(share), BATCH):
            table.claim_many(share[i : i + BATCH])
    else:
        for url in share:
            table.claim(url)
    done.put(len(share))


def claims_per_second(ctx, clients: int, total: int, batched: bool) -> tuple[float, float]:
    manager = start_manager(ctx)
    try:
        table = manager.VisitedTable(64)
        every = urls("c", total // 2)
        shares = [(every[k::clients] * 2) for k in range(clients)]  # each URL twice
        start, done = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=client, args=(table, share, batched, start, done)) for share in shares]
        for p in procs:
            p.start()
        time.sleep(0.5)  # let every client connect before the clock starts
        began = time.perf_counter()
        start.set()
        claimed = sum(done.get(timeout=600) for _ in procs)
        elapsed = time.perf_counter() - began
        for p in procs:
            p.join(30)
        assert len(table) == len(every), "every URL stored once"
    finally:
        manager.shutdown()
    rate = claimed / elapsed
    return rate, 1e6 * elapsed * clients / claimed


def bytes_per_url(ctx, size: int) -> float:
    manager = start_manager(ctx)
    try:
        table = manager.VisitedTable(64)
        proc = psutil.Process(manager._process.pid)
        before = proc.memory_info().rss
        batch = 1000
        for i in range(0, size, batch):
            table.claim_many([f"http://bench.invalid/m/page-{n}.html" for n in range(i, min(size, i + batch))])
        after = proc.memory_info().rss
        assert len(table) == size
    finally:
        manager.shutdown()
    return (after - before) / size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick = bool(os.environ.get("BENCH_QUICK"))
    parser.add_argument("--claims", type=int, default=10000 if quick else 20000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000] if quick else [100_000, 1_000_000])
    parser.add_argument(
        "--page-ms", type=float, default=42.5, help="CPU ms per page of a whole crawl (bench/profile_crawl.py)"
    )
    args = parser.parse_args()
    ctx = multiprocessing.get_context("fork")
    results = {"claims": [], "memory": [], "page_ms": args.page_ms}
    print(f"{'mode':<22} {'clients':>7} {'claims/s':>10} {'us/claim/client':>16}")
    for batched in (False, True):
        for clients in args.clients:
            rate, micros = claims_per_second(ctx, clients, args.claims, batched)
            mode = f"claim_many({BATCH})" if batched else "claim (one by one)"
            print(f"{mode:<22} {clients:>7} {rate:>10.0f} {micros:>16.1f}")
            results["claims"].append(
                {
                    "mode": mode,
                    "clients": clients,
                    "claims_per_s": round(rate),
                    "us_per_claim_per_client": round(micros, 2),
                }
            )
    for size in args.sizes:
        per_url = bytes_per_url(ctx, size)
        print(f"manager memory: {per_url:.1f} bytes per URL at {size} URLs (target < 120)")
        results["memory"].append({"urls": size, "bytes_per_url": round(per_url, 1)})
    round_trip_us = next(
        r["us_per_claim_per_client"] for r in results["claims"] if r["mode"].startswith("claim (") and r["clients"] == 1
    )
    share = 2 * round_trip_us / 1000 / args.page_ms
    results.update(round_trip_us=round_trip_us, table_share_of_page=round(share, 4))
    print(
        f"per page: 2 round trips x {round_trip_us:.0f} us = {2 * round_trip_us / 1000:.2f} ms, "
        f"{100 * share:.2f}% of {args.page_ms} ms per page (target < 2%)"
    )
    os.makedirs(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "visited_table.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
