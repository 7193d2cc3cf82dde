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
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time

import psutil

from crawler.visited import start_manager

BATCH = 50


def urls(prefix: str, count: int) -> list[str]:
    return [f"http://bench.invalid/{prefix}/page-{n}.html?id={n}" for n in range(count)]


def client(table, share: list[str], batched: bool, start, done) -> None:
    start.wait()
    if batched:
        for i in range(0, len(share), BATCH):
            table.claim_many(share[i:i + BATCH])
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
        procs = [ctx.Process(target=client, args=(table, share, batched, start, done))
                 for share in shares]
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
    parser.add_argument("--claims", type=int, default=20000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    args = parser.parse_args()
    ctx = multiprocessing.get_context("fork")
    print(f"{'mode':<22} {'clients':>7} {'claims/s':>10} {'us/claim/client':>16}")
    for batched in (False, True):
        for clients in args.clients:
            rate, micros = claims_per_second(ctx, clients, args.claims, batched)
            mode = f"claim_many({BATCH})" if batched else "claim (one by one)"
            print(f"{mode:<22} {clients:>7} {rate:>10.0f} {micros:>16.1f}")
    for size in args.sizes:
        print(f"manager memory: {bytes_per_url(ctx, size):.1f} bytes per URL at {size} URLs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
