"""Many origins (issue 11): N small sites on 127.0.0.1, every home page a seed, --delay 1.

Usage:
    .venv/bin/python bench/many_sites.py [--sites 100,1000,10000] [--delay 1] [--workers 2]
                                         [--threads 4] [--seed 1] [--robots-pad 0]
                                         [--stall 60] [--timeout S] [--keep]

For each N: ``tests/helpers/manysites.py`` serves N sites (one port each, one asyncio
process), and the crawler runs as its own command, ``python -m crawler URL... --out DIR
--delay D --workers W --threads T --quiet`` with every home page as a seed
(``manysites.seed_arguments``: ``--seeds FILE``), under ``tests/helpers/crawlwatch.py``: a crawl
whose server requests and CPU stop moving for ``--stall`` seconds is reported as *hung*
(every process dumps its stack with faulthandler, then the process group is killed), one
still running after ``--timeout`` (default: 300 s or three times the larger of the two
bounds below, with 10 ms of CPU per URL assumed) as *timeout*.

Figures per N:

* wall time of the command against the **politeness bound** (the busiest origin's
  requests, robots.txt included, ``--delay`` apart: no polite crawl is faster) and
  against the **CPU bound** (the crawl's own CPU, ``summary.json`` ``cpu_s``, over the
  cores: no crawl doing this work is faster); the larger of the two is the bound;
* dispatcher CPU per URL requested and per page, peak resident memory of each process
  role (``summary.json`` ``processes``) and peak open file descriptors of each role
  (sampled once a second; a fetcher thread's ``requests.Session`` keeps at most 10
  host pools, so a fetcher should stay near its base + 10 x threads sockets however
  many origins there are), and of the server (its N listening sockets plus one per
  client connection);
* from the server log: every expected URL requested exactly once and nothing else
  (``manysites.expected_crawl``), robots.txt once per origin, never two requests at once
  to one origin (overlapping [start, end] per port), the shortest gap from the end of
  one request to the start of the next to one origin (must be >= the delay) and how many
  gaps were shorter;
* the records (each expected URL exactly once) and ``summary.json`` reconciled; errors
  that say ``Too many open files`` (EMFILE) in the records or on stderr.

Prints a line per N and saves the settings, which crawler code ran and every run to
``bench/results/many_sites.json``; a hung run also keeps its stack dumps there. Exits 1
if any run hung, timed out or failed a check.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT]

from slow_server import crawler_source  # noqa: E402

from tests.helpers.crawlwatch import crawler_command, run_watched  # noqa: E402
from tests.helpers.manysites import ManySites, analyse_log, seed_arguments  # noqa: E402

#: CPU seconds per URL assumed for the default timeout (small pages cost 3-4 ms).
ASSUMED_CPU_S_PER_URL = 0.010
#: Characters of stack dumps kept in the JSON per run.
MAX_STACK_CHARS = 60_000


def _machine_busy_s() -> float:
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def _roles(summary: dict | None, root_pid: int) -> dict[int, str]:
    """pid -> role, from summary.json (else the root is the dispatcher, the rest 'child')."""
    roles = {root_pid: "dispatcher"}
    for role, row in (summary or {}).get("processes", {}).items():
        for pid in row["pids"]:
            roles[pid] = role
    return roles


def _records(out: str) -> tuple[dict[str, int], int]:
    """URL -> records, and how many records say 'Too many open files'."""
    from crawler.output.shards import iter_records

    counts: dict[str, int] = {}
    emfile = 0
    for record in iter_records(out):
        counts[record["url"]] = counts.get(record["url"], 0) + 1
        emfile += "Too many open files" in (record.get("error") or "")
    return counts, emfile


def run_one(sites: int, args, folder: str) -> dict:
    with ManySites(
        sites, args.seed, args.robots_pad, folder=os.path.join(folder, "server"), max_seconds=24 * 3600
    ) as server:
        expected = server.expected()
        bound_polite = expected.politeness_bound_s(args.delay)
        estimated_cpu = len(expected.fetched) * ASSUMED_CPU_S_PER_URL / (os.cpu_count() or 1)
        timeout = args.timeout or max(300.0, 3 * max(bound_polite, estimated_cpu))
        out = os.path.join(folder, "out")
        command = crawler_command(
            *seed_arguments(server.seeds_file, server.home_urls),
            "--out",
            out,
            "--delay",
            str(args.delay),
            "--workers",
            str(args.workers),
            "--threads",
            str(args.threads),
            "--quiet",
        )
        server_process = psutil.Process(server.proc.pid)
        server_fds = [server_process.num_fds()]

        def sample_server(_elapsed, _processes) -> None:
            server_fds.append(server_process.num_fds())

        busy_before = _machine_busy_s()
        run = run_watched(
            command,
            os.path.join(folder, "stderr.txt"),
            progress=server.count,
            timeout_s=timeout,
            stall_s=args.stall,
            on_sample=sample_server,
        )
        busy = _machine_busy_s() - busy_before
        requests = server.requests()
    log = analyse_log(requests, expected, args.delay)
    summary = None
    if run.outcome == "finished" and os.path.exists(os.path.join(out, "summary.json")):
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
    roles = _roles(summary, run.root_pid)
    by_role: dict[str, dict] = {}
    for pid, sample in run.processes.items():
        row = by_role.setdefault(
            roles.get(pid, "child"), {"processes": 0, "peak_fds": 0, "peak_rss_mib": 0.0, "cpu_s": 0.0}
        )
        row["processes"] += 1
        row["peak_fds"] = max(row["peak_fds"], sample.peak_fds)
        row["peak_rss_mib"] = max(row["peak_rss_mib"], round(sample.peak_rss_bytes / 2**20, 1))
        row["cpu_s"] = round(row["cpu_s"] + sample.cpu_s, 2)
    result = {
        "sites": sites,
        "outcome": run.outcome,
        "returncode": run.returncode,
        "command_wall_s": round(run.wall_s, 2),
        "timeout_s": round(timeout, 1),
        "expected_urls": len(expected.fetched),
        "expected_skipped": len(expected.skipped),
        "expected_failed_404": len(expected.failed),
        "busiest_origin_requests": max(expected.requests_by_port.values()),
        "politeness_bound_s": round(bound_polite, 2),
        "last_request_at_s": round(run.progress_at, 1),
        "server": {
            **{k: v for k, v in log.items() if k not in ("missing", "unexpected", "repeated", "robots_missing")},
            "robots_missing": len(log["robots_missing"]),
            "fds_listening": server_fds[0],
            "peak_fds": max(server_fds),
        },
        "missing": len(log["missing"]),
        "missing_sample": log["missing"][:10],
        "unexpected": log["unexpected"][:50],
        "repeated": dict(list(log["repeated"].items())[:50]),
        "sampled_by_role": by_role,
        "machine_busy_cores": round(busy / run.wall_s, 2) if run.wall_s else None,
        "emfile_on_stderr": "Too many open files" in run.stderr,
    }
    if summary is not None:
        cores = os.cpu_count() or 1
        done = summary["visited"] + summary["failed"]
        records, emfile = _records(out)
        cpu_bound = summary["cpu_s"] / cores
        result.update(
            {
                "crawl_wall_s": summary["wall_s"],
                "cpu_s": summary["cpu_s"],
                "cpu_bound_s": round(cpu_bound, 2),
                "bound_s": round(max(cpu_bound, bound_polite), 2),
                "wall_over_politeness_bound": round(run.wall_s / bound_polite, 2) if bound_polite else None,
                "wall_over_cpu_bound": round(run.wall_s / cpu_bound, 2) if cpu_bound else None,
                "urls_done": done,
                "pages": summary["pages"],
                "failed": summary["failed"],
                "failed_by_reason": summary["failed_by_reason"],
                "skipped_by_reason": summary["skipped_by_reason"],
                "robots_fetches": summary["robots_fetches"],
                "reconciled": summary["reconciled"],
                "cpu_ms_per_url_by_role": {
                    role: round(1000 * row["cpu_s"] / max(done, 1), 3) for role, row in summary["processes"].items()
                },
                "dispatcher_cpu_ms_per_page": round(
                    1000 * summary["processes"]["dispatcher"]["cpu_s"] / max(summary["pages"], 1), 3
                ),
                "peak_rss_mib_by_role": {
                    role: round(row["peak_rss_bytes"] / 2**20, 1) for role, row in summary["processes"].items()
                },
                "peak_rss_mib": round(summary["peak_rss_bytes"] / 2**20, 1),
                "records": sum(records.values()),
                "urls_recorded_twice": sum(1 for n in records.values() if n > 1),
                "records_match_expected": set(records) == expected.fetched,
                "emfile_records": emfile,
            }
        )
    else:
        result["stacks"] = run.stacks[:MAX_STACK_CHARS]
        result["stderr_tail"] = (
            run.stderr[: run.stderr.find("=== SIGABRT")][-4000:] if run.stacks else run.stderr[-4000:]
        )
    result["ok"] = bool(
        run.outcome == "finished"
        and run.returncode == 0
        and log["ok"]
        and summary
        and summary["reconciled"]
        and result["records_match_expected"]
        and not result["urls_recorded_twice"]
        and not result["emfile_records"]
    )
    return result


def _line(r: dict) -> str:
    s = r["server"]
    head = (
        f"{r['sites']:>6} sites  {r['outcome']:<8} wall {r['command_wall_s']:>7.1f} s  "
        f"requests {s['requests']} (robots {s['robots_requests']}, pages {s['page_requests']} "
        f"of {r['expected_urls']})  politeness bound {r['politeness_bound_s']} s"
    )
    if "cpu_s" not in r:
        return head + f"  last request at {r['last_request_at_s']} s"
    fds = {role: row["peak_fds"] for role, row in r["sampled_by_role"].items()}
    return (
        head + f" (x{r['wall_over_politeness_bound']})  cpu {r['cpu_s']} s, cpu bound "
        f"{r['cpu_bound_s']} s (x{r['wall_over_cpu_bound']})  dispatcher "
        f"{r['cpu_ms_per_url_by_role'].get('dispatcher')} ms/URL  peak MiB {r['peak_rss_mib_by_role']}  "
        f"peak fds {fds} (server {s['fds_listening']} -> {s['peak_fds']})  overlaps {s['overlaps']}  "
        f"min gap {s['min_gap_ms']} ms  "
        f"gaps < delay {s['gaps_under_delay']}  missing {r['missing']}  repeated {len(r['repeated'])}  "
        f"reconciled {r['reconciled']}  {'OK' if r['ok'] else 'FAIL'}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", default="100,1000,10000", help="comma-separated site counts")
    parser.add_argument("--delay", type=float, default=1.0, help="the crawler's --delay (s)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1, help="site generation seed")
    parser.add_argument("--robots-pad", type=int, default=0, help="bytes of comments in each robots.txt")
    parser.add_argument("--stall", type=float, default=60.0, help="seconds without progress that make a hang")
    parser.add_argument("--timeout", type=float, default=None, help="hard seconds per crawl (default: auto)")
    parser.add_argument("--keep", action="store_true", help="keep the crawl outputs and server logs")
    parser.add_argument("--results", default=os.path.join(HERE, "results", "many_sites.json"))
    args = parser.parse_args()
    counts = [int(n) for n in args.sites.split(",") if n]
    results = {
        "settings": {k: v for k, v in vars(args).items() if k != "results"},
        "sites": counts,
        "cpu_count": os.cpu_count(),
        "crawler": crawler_source(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": [],
    }
    top = tempfile.mkdtemp(prefix="many_sites-")
    ok = True
    try:
        for n in counts:
            folder = os.path.join(top, str(n))
            result = run_one(n, args, folder)
            result["folder"] = folder if args.keep else None
            results["runs"].append(result)
            ok &= result["ok"]
            print(_line(result), flush=True)
            if result.get("stacks"):
                print(result["stacks"][:6000], flush=True)
            os.makedirs(os.path.dirname(args.results), exist_ok=True)
            with open(args.results, "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(top, ignore_errors=True)
    print(f"saved {args.results}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
