"""One crawl on 1, 2 and 3 "machines" through one Redis, against the embedded default.

Usage:
    .venv/bin/python bench/scale_out.py [--origins 8] [--pages 400] [--rounds 1]
                                        [--memory-urls 10000000]
    (BENCH_QUICK=1: --memory-urls 1000000)

Needs nginx (apt-get install nginx-light) and redis-server (apt-get install redis-server);
everything runs on 127.0.0.1. ``--origins`` nginx servers (one worker each) serve one
generated site of ``--pages`` pages of about 1 KB each, so the crawl has that many
origins. For m = 1, 2, 3 it runs, alternately, the embedded crawl with ``--workers m``
and m machines (separate crawler processes, ``--workers 1`` each, their own ``--out``)
sharing a fresh crawl in one redis-server; every fetcher has 4 threads. Per run: pages,
wall s (first start to last exit), pages/s, the CPU seconds of the crawler processes
(``RUSAGE_CHILDREN``) and, with Redis, Redis's own CPU, commands and network bytes per
page (``INFO``).

Then the visited table's memory in Redis: ``--memory-urls`` URL fingerprints claimed in
the crawl's layout (``used_memory`` before and after, bytes per URL), against
scrapy-redis's layout (one set of 40-character SHA-1 hex strings), and the bytes of a
frontier entry while it waits (200,000 of them). ``--memory-only`` skips the crawls.
Results go to ``bench/results/scale_out.json`` (``scale_out_memory.json`` with
``--memory-only``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from nginx import Nginx, nginx_binary  # noqa: E402
from throttle import tiny_site  # noqa: E402

from crawler.engine.messages import FetchTask  # noqa: E402
from crawler.engine.rediscrawl import RedisCrawl, connect, encode_task  # noqa: E402
from tests.helpers.redisserver import RedisServer  # noqa: E402


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def redis_stats(client) -> dict[str, float]:
    info = client.info()
    return {
        "commands": info["total_commands_processed"],
        "bytes_in": info["total_net_input_bytes"],
        "bytes_out": info["total_net_output_bytes"],
        "cpu_s": info["used_cpu_user"] + info["used_cpu_sys"],
    }


def run(seeds: str, machines: int, redis_url: str | None, name: str, work: str) -> dict:
    """One crawl: ``machines`` processes with Redis, or one with ``--workers machines``."""
    common = ["--seeds", seeds, "--threads", "4", "--quiet"]
    if redis_url is None:
        commands = [[sys.executable, "-m", "crawler", *common, "--out", f"{work}/{name}", "--workers", str(machines)]]
    else:
        commands = [
            [sys.executable, "-m", "crawler", *common, "--out", f"{work}/{name}-{i}", "--workers", "1"]
            + ["--redis", redis_url, "--crawl-name", name, "--machine", f"m{i}"]
            for i in range(machines)
        ]
    before_cpu = children_cpu_s()
    client = connect(redis_url) if redis_url else None
    before = redis_stats(client) if client else None
    started = time.monotonic()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in commands]
    for proc in procs:
        _out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"scale_out: a crawl failed: {err[-2000:]}")
    wall = time.monotonic() - started
    pages = 0
    outs = [f"{work}/{name}"] if redis_url is None else [f"{work}/{name}-{i}" for i in range(machines)]
    for out in outs:
        with open(os.path.join(out, "summary.json")) as f:
            pages += json.load(f)["pages"]
    row = {
        "setup": f"{machines} machine(s) x 1 fetcher, Redis" if redis_url else f"embedded, {machines} fetcher(s)",
        "pages": pages,
        "wall_s": round(wall, 2),
        "pages_per_s": round(pages / wall, 1),
        "crawler_cpu_ms_per_page": round(1000 * (children_cpu_s() - before_cpu) / pages, 2),
    }
    if client is not None:
        after = redis_stats(client)
        delta = {k: after[k] - before[k] for k in after}
        row.update(
            redis_commands_per_page=round(delta["commands"] / pages, 1),
            redis_bytes_in_per_page=round(delta["bytes_in"] / pages),
            redis_bytes_out_per_page=round(delta["bytes_out"] / pages),
            redis_cpu_ms_per_page=round(1000 * delta["cpu_s"] / pages, 3),
        )
    return row


def memory_per_url(redis_url: str, urls: int) -> dict:
    """Bytes per URL of the visited table (this crawl's layout) and of scrapy-redis's set."""
    client = connect(redis_url)
    client.flushall()
    base = client.info("memory")["used_memory"]
    crawl = RedisCrawl(redis_url, "memory")
    pipe = client.pipeline(transaction=False)
    for n in range(urls):
        bucket, field = crawl._slot(f"http://host{n % 1000}.example/page/{n}")
        pipe.hsetnx(bucket, field, "2")
        if n % 10000 == 9999:
            pipe.execute()
    pipe.execute()
    ours = client.info("memory")["used_memory"] - base
    encodings = {client.object("encoding", crawl._slot(f"http://host{n}.example/page/{n}")[0]) for n in range(20)}
    client.flushall()
    base = client.info("memory")["used_memory"]
    for n in range(urls):
        url = f"http://host{n % 1000}.example/page/{n}"
        pipe.sadd("dupefilter", hashlib.sha1(url.encode()).hexdigest())
        if n % 10000 == 9999:
            pipe.execute()
    pipe.execute()
    theirs = client.info("memory")["used_memory"] - base
    client.flushall()
    # a frontier entry while it waits (deleted once its URL is settled)
    waiting = min(urls, 200_000)
    base = client.info("memory")["used_memory"]
    for n in range(waiting):
        url = f"http://host{n % 1000}.example/docs/section-{n % 37}/page-{n}.html"
        task = FetchTask(url, 3, f"http://host{n % 1000}.example/docs/section-{n % 37}/index.html")
        pipe.xadd(crawl.stream_key(crawl.frontier_shard(url)), {"t": encode_task(task)})
        if n % 10000 == 9999:
            pipe.execute()
    pipe.execute()
    stream = client.info("memory")["used_memory"] - base
    client.flushall()
    return {
        "urls": urls,
        "visited_table_bytes_per_url": round(ours / urls, 1),
        "bucket_encodings": sorted(encodings),
        "scrapy_redis_set_bytes_per_url": round(theirs / urls, 1),
        "waiting_tasks": waiting,
        "stream_bytes_per_waiting_task": round(stream / waiting, 1),
        "task_payload_bytes": len(encode_task(task)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=8)
    parser.add_argument("--pages", type=int, default=400, help="pages per origin")
    parser.add_argument("--rounds", type=int, default=1)
    quick = bool(os.environ.get("BENCH_QUICK"))
    parser.add_argument("--memory-urls", type=int, default=10**6 if quick else 10**7)
    parser.add_argument("--memory-only", action="store_true", help="only the memory figures")
    args = parser.parse_args()
    if nginx_binary() is None:
        print("scale_out: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work:
        os.chmod(work, 0o755)  # nginx's worker runs as nobody
        site = os.path.join(work, "site")
        os.makedirs(site)
        tiny_site(site, args.pages)
        os.makedirs(os.path.join(work, "redis"))
        servers = [Nginx(site) for _ in range(args.origins)]
        for server in servers:
            server.__enter__()
        try:
            seeds = os.path.join(work, "seeds.txt")
            with open(seeds, "w") as f:
                f.writelines(server.url("/p0.html") + "\n" for server in servers)
            rows = []
            with RedisServer(os.path.join(work, "redis")) as redis_server:
                for round_ in range(0 if args.memory_only else args.rounds):
                    for machines in (1, 2, 3):
                        for use_redis in (False, True):
                            name = f"r{round_}-m{machines}-{'redis' if use_redis else 'embedded'}"
                            row = run(seeds, machines, redis_server.url if use_redis else None, name, work)
                            row["round"] = round_
                            rows.append(row)
                            print(json.dumps(row), flush=True)
                memory = memory_per_url(redis_server.url, args.memory_urls)
                print(json.dumps(memory), flush=True)
        finally:
            for server in servers:
                server.__exit__(None, None, None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout
    results = {"commit": commit.strip(), "origins": args.origins, "pages_per_origin": args.pages, "runs": rows}
    results["memory"] = memory
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    name = "scale_out_memory.json" if args.memory_only else "scale_out.json"
    with open(os.path.join(HERE, "results", name), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
