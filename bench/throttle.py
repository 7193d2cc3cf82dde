"""Single-site speed of the adaptive throttle (the default) against ``--per-host 8``.

Usage:
    .venv/bin/python bench/throttle.py [--root /usr/share/doc/python3.11/html] [--rounds 3]
                                       [--workers 2] [--tiny 3000]
    (BENCH_QUICK=1 runs one round)

nginx (one worker) serves each site on 127.0.0.1; it answers in about a millisecond.
Sites: ``--root`` (real pages: the page work, about 36 ms per page, bounds the crawl) and
a generated site of ``--tiny`` pages of 1 KB in a chain of small link lists (the page work
is tiny, so the round trip of one request at a time is what shows). The two settings run
alternately in rounds (A B A B ...), each a whole crawl from the home page with
``--workers`` fetchers of 4 threads. For each run: pages, wall s, pages/s; at the end the
median pages/s per setting and site and the ratio adaptive / per-host 8. Results go to
``bench/results/throttle.json``. The issue's floor: the ratio on the real site is at
least 0.90.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from nginx import Nginx, nginx_binary  # noqa: E402

SETTINGS = {"adaptive": [], "per-host 8": ["--per-host", "8"]}


def tiny_site(root: str, pages: int, fanout: int = 10) -> None:
    """``pages`` pages of about 1 KB: page i links to pages i*fanout+1 .. i*fanout+fanout."""
    filler = "<p>" + "lorem ipsum dolor sit amet " * 30 + "</p>"
    for i in range(pages):
        links = "".join(
            f'<li><a href="p{j}.html">p{j}</a></li>' for j in range(i * fanout + 1, min(pages, i * fanout + fanout + 1))
        )
        with open(os.path.join(root, f"p{i}.html"), "w") as f:
            f.write(f"<!doctype html><title>p{i}</title><main><h1>p{i}</h1>{filler}<ul>{links}</ul></main>")


def crawl(seed: str, out: str, workers: int, extra: list[str]) -> dict:
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
        "4",
        "--quiet",
        *extra,
    ]
    started = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    wall = time.monotonic() - started
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return {"pages": summary["pages"], "wall_s": round(wall, 2), "pages_per_s": round(summary["pages"] / wall, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=1 if os.environ.get("BENCH_QUICK") else 3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tiny", type=int, default=3000, help="pages of the generated site (0: none)")
    args = parser.parse_args()
    if nginx_binary() is None:
        print("throttle: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        sites = {"real": (args.root, "/index.html")}
        if args.tiny:
            os.chmod(tmp, 0o755)  # nginx's worker runs as nobody
            tiny = os.path.join(tmp, "tiny")
            os.makedirs(tiny)
            tiny_site(tiny, args.tiny)
            sites["tiny"] = (tiny, "/p0.html")
        for site, (root, home) in sites.items():
            with Nginx(root) as server:
                for round_no in range(args.rounds):
                    for name, extra in SETTINGS.items():
                        out = os.path.join(tmp, f"{site}-{name}-{round_no}".replace(" ", "_"))
                        run = {
                            "site": site,
                            "setting": name,
                            "round": round_no,
                            **crawl(server.url(home), out, args.workers, extra),
                        }
                        runs.append(run)
                        print(
                            f"{site:<5} round {round_no} {name:<11} {run['pages']:>5} pages "
                            f"{run['wall_s']:7.2f} s {run['pages_per_s']:7.1f}/s",
                            flush=True,
                        )
    print(f"\n{'site':<5} {'setting':<11} {'pages/s median (min-max)':>26} {'ratio':>6}")
    summary = {}
    for site in dict.fromkeys(r["site"] for r in runs):
        rates = {
            name: [r["pages_per_s"] for r in runs if r["site"] == site and r["setting"] == name] for name in SETTINGS
        }
        medians = {name: statistics.median(rates[name]) for name in SETTINGS}
        for name in SETTINGS:
            print(
                f"{site:<5} {name:<11} {medians[name]:>10.1f} ({min(rates[name]):.1f}-"
                f"{max(rates[name]):.1f}){'':>7} {medians[name] / medians['per-host 8']:>6.2f}"
            )
        summary[site] = {
            "median_pages_per_s": medians,
            "ratio_adaptive_to_per_host_8": round(medians["adaptive"] / medians["per-host 8"], 3),
        }
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "throttle.json"), "w") as f:
        json.dump(
            {"root": args.root, "workers": args.workers, "rounds": args.rounds, "summary": summary, "runs": runs},
            f,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
