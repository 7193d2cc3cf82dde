"""Recrawl cost and correctness: a crawl of a documentation site, then two ``--recrawl``s.

Usage:
    .venv/bin/python bench/recrawl.py [--root /usr/share/doc/python3.11/html] [--rounds 1]
                                      [--workers 2] [--per-host N] [--share 0.05] [--seed 1]

Each round copies ``--root`` to a temporary folder (copied files keep their mtimes), serves
the copy with nginx (one worker, 127.0.0.1; it sends ``ETag`` and ``Last-Modified`` for
static files and answers conditional requests with 304) and logs, per request, the path,
status, ``$bytes_sent`` (headers included), ``$body_bytes_sent`` and the request's
``If-None-Match`` / ``If-Modified-Since``. Then, into one output folder, with the options
of ``bench/realsite.py`` (seed ``index.html``, ``--workers 2 --threads 4 --quiet``):

1. generation 1: the crawl;
2. generation 2: ``--recrawl`` of the unchanged site: every URL must be ``unchanged``
   through a 304; the issue's targets are at most 10 % of the crawl's bytes and 25 % of
   its wall time;
3. ``--share`` of the crawled HTML files (a seeded random choice) change: half of them
   are only touched (a new mtime: a new ETag and Last-Modified, the same content), the
   other half get ``<p>edited N</p>`` after the first ``</h1>`` of the main content
   (the Markdown changes). Generation 3: ``--recrawl``. ``changes-3.tsv`` must say
   ``changed`` for every edited file, ``unchanged`` for every touched file (asked with
   validators, answered 200: the same fingerprint) and ``unchanged`` for every other URL
   (answered 304).

Prints every mismatch (exit status 1 if any; ``summary.json``'s ``changes`` must also
match ``changes-G.tsv``) and a table of figures per generation: the 1-minute load average
before it (the machine may be shared), wall s, CPU s of the crawler's processes
(``summary.json``), requests, bytes sent (headers included), body bytes, 304s, 200s,
requests with validators, the ratios to the crawl, and ``summary.json``'s ``changes``;
then the median ratios against the targets (a missed target is printed, not an error).
Saves the runs to ``bench/results/recrawl.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

import nginx  # noqa: E402
from nginx import Nginx, nginx_binary  # noqa: E402

from crawler.output.shards import iter_records  # noqa: E402

#: The issue's targets for a recrawl of an unchanged site, as shares of the crawl's.
BYTES_TARGET, WALL_TARGET = 0.10, 0.25
#: One access-log line per request: tab-separated, header values unescaped.
LOG_FORMAT = (
    "log_format recrawl escape=none '$request_method\\t$request_uri\\t$status\\t$bytes_sent\\t"
    "$body_bytes_sent\\t$http_if_none_match\\t$http_if_modified_since';"
)
LOG_FIELDS = ("method", "uri", "status", "bytes_sent", "body_bytes_sent", "if_none_match", "if_modified_since")


class LoggedNginx(Nginx):
    """:class:`nginx.Nginx` whose access log has one :data:`LOG_FORMAT` line per request."""

    def __enter__(self) -> LoggedNginx:
        plain = "    access_log {tmp}/access.log;\n"
        assert plain in nginx.CONF, "bench/nginx.py's config changed: update LoggedNginx"
        conf_text = nginx.CONF.replace(plain, f"    {LOG_FORMAT}\n    access_log {{tmp}}/access.log recrawl;\n")
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(conf_text.format(tmp=self.tmp, port=self.port, root=self.root))
        self.process = subprocess.Popen([nginx_binary(), "-c", conf, "-p", self.tmp])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                self.entries()  # not the probe's
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def entries(self) -> list[dict]:
        """The requests logged since the previous call (each a dict of :data:`LOG_FIELDS`;
        a header not sent is None)."""
        path = os.path.join(self.tmp, "access.log")
        if not os.path.exists(path):
            return []
        found = []
        with open(path, encoding="utf-8", errors="replace") as f:
            f.seek(self._log_offset)
            for line in f:
                entry = dict(zip(LOG_FIELDS, line.rstrip("\n").split("\t"), strict=True))
                for name in ("status", "bytes_sent", "body_bytes_sent"):
                    entry[name] = int(entry[name])
                for name in ("if_none_match", "if_modified_since"):
                    entry[name] = entry[name] or None  # escape=none logs a header not sent as ""
                found.append(entry)
            self._log_offset = f.tell()
        return found


def crawl(seed: str, out: str, workers: int, recrawl: bool, per_host: int | None = None) -> float:
    """Run the crawler (the options of ``bench/realsite.py``); its wall seconds."""
    cmd = [sys.executable, "-m", "crawler", seed, "--out", out, "--workers", str(workers), "--threads", "4"]
    cmd += ["--quiet", *(["--recrawl"] if recrawl else []), *(["--per-host", str(per_host)] if per_host else [])]
    started = time.monotonic()
    result = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:])} failed ({result.returncode}): {result.stderr[-2000:]}")
    return wall


def request_path(url: str) -> str:
    """The path (and query) of ``url``, percent-decoded: how a log line is matched."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.unquote(parts.path) + (f"?{urllib.parse.unquote(parts.query)}" if parts.query else "")


def figures(entries: list[dict], wall: float, summary: dict) -> dict:
    statuses = collections.Counter(e["status"] for e in entries)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": summary.get("cpu_s"),  # the crawler's processes, as summary.json says
        "requests": len(entries),
        "bytes_sent": sum(e["bytes_sent"] for e in entries),
        "body_bytes_sent": sum(e["body_bytes_sent"] for e in entries),
        "statuses": {str(code): n for code, n in sorted(statuses.items())},
        "n304": statuses[304],
        "n200": statuses[200],
        "conditional": sum(1 for e in entries if e["if_none_match"] or e["if_modified_since"]),
        "if_none_match": sum(1 for e in entries if e["if_none_match"]),
        "if_modified_since": sum(1 for e in entries if e["if_modified_since"]),
        "generation": summary.get("generation"),
        "changes": {k: v for k, v in (summary.get("changes") or {}).items() if v},
    }


def read_changes(out: str, generation: int) -> dict[str, dict]:
    """``changes-G.tsv`` as ``{url: row}``."""
    with open(os.path.join(out, f"changes-{generation}.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header != ["url", "change", "previous_fingerprint", "fingerprint"]:
            raise ValueError(f"changes-{generation}.tsv: unexpected header {header}")
        rows = [dict(zip(header, line.rstrip("\n").split("\t"), strict=True)) for line in f]
    return {row["url"]: row for row in rows}


def records_of(out: str, generation: int) -> dict[str, dict]:
    """The page records of generation ``generation`` by URL (the last one of a URL)."""
    return {r["url"]: r for r in iter_records(out) if (r.get("generation") or 1) == generation}


def html_files(root: str, records: dict[str, dict]) -> dict[str, str]:
    """``{relative file path: record URL}`` of the crawled pages that are files under
    ``root`` (the record's URL path, a folder meaning its ``index.html``)."""
    files = {}
    for url, record in records.items():
        if record.get("error") or record.get("status") != 200 or record.get("final_url") != url:
            continue
        rel = urllib.parse.unquote(urllib.parse.urlsplit(url).path).lstrip("/")
        if rel == "" or rel.endswith("/"):
            rel += "index.html"
        if rel.endswith(".html") and os.path.isfile(os.path.join(root, rel)):
            if rel in files:
                raise ValueError(f"{rel} is the file of two URLs: {files[rel]} and {url}")
            files[rel] = url
    return files


def edit(path: str, number: int) -> None:
    """Insert ``<p>edited N</p>`` after the first ``</h1>`` of the main content (after the
    opening tag of the main content without one)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    main = text.find('role="main"')
    if main < 0:
        raise ValueError(f"{path}: no main content")
    end = text.find("</h1>", main)
    at = end + len("</h1>") if end >= 0 else text.index(">", main) + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{text[:at]}\n<p>edited {number}</p>\n{text[at:]}")


def change_site(root: str, files: dict[str, str], share: float, seed: int) -> tuple[dict, dict]:
    """Touch half of a seeded choice of ``share`` of ``files`` and edit the other half.
    Returns ``({url: file} touched, {url: file} edited)``."""
    chosen = random.Random(seed).sample(sorted(files), max(2, round(share * len(files))))
    touched, edited = {}, {}
    for number, rel in enumerate(chosen):
        path = os.path.join(root, rel)
        later = max(int(time.time()), int(os.stat(path).st_mtime) + 1)  # another second: a new ETag
        if number % 2 == 0:
            touched[files[rel]] = rel
        else:
            edit(path, number)
            edited[files[rel]] = rel
        os.utime(path, (later, later))
    return touched, edited


def check_generation(
    generation: int,
    changes: dict[str, dict],
    logged: dict[str, dict],
    before: dict[str, dict],
    touched: dict[str, str],
    edited: dict[str, str],
) -> tuple[list[str], dict[str, int]]:
    """Check ``changes-G.tsv`` and the log of generation ``generation`` against the site's
    changes: an edited file is ``changed`` (a 200, another fingerprint), a touched one
    ``unchanged`` through a 200 with the same fingerprint, every other URL ``unchanged``
    through a 304, except a URL whose earlier record was a 404 or 410 (Debian gzips
    ``whatsnew/changelog.html``): ``gone``, asked again without validators. A URL asked
    with validators must be sent its earlier record's (``before``): ``If-None-Match`` its
    ETag, if sent at all, and ``If-Modified-Since`` its Last-Modified. Returns the
    mismatches and the URLs checked per kind."""
    problems, checked = [], collections.Counter()
    for url in sorted((set(touched) | set(edited)) - set(changes)):
        problems.append(f"gen {generation} {url}: not in changes-{generation}.tsv")
    for url, row in sorted(changes.items()):
        entry = logged.get(request_path(url))
        status = entry["status"] if entry else None
        prior = before.get(url) or {}
        same = row["fingerprint"] == row["previous_fingerprint"]
        if prior.get("error") and prior.get("status") in (404, 410):
            what, want = "gone", f"gone via {prior['status']}, no validators"
            ok = row["change"] == "gone" and status == prior["status"] and not (entry and entry["if_modified_since"])
            ok = ok and not (entry and entry["if_none_match"])
        elif url in edited:
            what, want = "edited", "changed via 200"
            ok = row["change"] == "changed" and status == 200 and not same
        elif url in touched:
            what, want = "touched", "unchanged via 200, same fingerprint"
            ok = row["change"] == "unchanged" and status == 200 and same and bool(row["fingerprint"])
        else:
            what, want = "untouched", "unchanged via 304"
            ok = row["change"] == "unchanged" and status == 304
        checked[what] += 1
        if what != "gone":
            want += f", validators of generation {generation - 1}"
            inm, ims = (entry or {}).get("if_none_match"), (entry or {}).get("if_modified_since")
            ok = ok and bool(inm or ims)
            ok = ok and inm in (None, prior.get("etag")) and ims == prior.get("last_modified")
        if not ok:
            problems.append(
                f"gen {generation} {what} {url}: change {row['change']}, status {status}, fingerprint "
                f"{row['previous_fingerprint'] or '-'} -> {row['fingerprint'] or '-'} (want {want}); "
                f"stored etag {prior.get('etag')!r} last_modified {prior.get('last_modified')!r}; logged {entry}"
            )
    return problems, dict(sorted(checked.items()))


def by_path(entries: list[dict]) -> dict[str, dict]:
    """The last GET logged for each request path (percent-decoded)."""
    found = {}
    for entry in entries:
        if entry["method"] == "GET":
            found[request_path(entry["uri"])] = entry
    return found


def run_round(args: argparse.Namespace, round_no: int) -> tuple[dict, list[str]]:
    with tempfile.TemporaryDirectory(prefix="crawler-recrawl-") as tmp:
        os.chmod(tmp, 0o755)  # nginx's worker may run as another user (root starts it as nobody)
        root = os.path.join(tmp, "site")
        shutil.copytree(args.root, root)  # symlinks followed; mtimes kept
        out = os.path.join(tmp, "out")
        with LoggedNginx(root) as server:
            seed = server.url("/index.html")
            gens, problems = {}, []
            for generation in (1, 2, 3):
                if generation == 3:
                    files = html_files(root, records_of(out, 1))
                    touched, edited = change_site(root, files, args.share, args.seed + round_no)
                load = os.getloadavg()[0]  # the machine is shared: wall times vary with it
                wall = crawl(seed, out, args.workers, generation > 1, args.per_host)
                entries = server.entries()
                with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
                    summary = json.load(f)
                gens[generation] = {**figures(entries, wall, summary), "load_1min": round(load, 2)}
                if summary.get("generation", 1) != generation:
                    problems.append(f"gen {generation}: summary.json says generation {summary.get('generation')}")
                if generation == 1:
                    continue
                changes, before = read_changes(out, generation), records_of(out, generation - 1)
                if generation == 3:
                    gens[3].update(html_files=len(files), touched=len(touched), edited=len(edited))
                else:
                    touched = edited = {}
                found, checked = check_generation(generation, changes, by_path(entries), before, touched, edited)
                problems += found
                listed = collections.Counter(row["change"] for row in changes.values())
                if {k: v for k, v in listed.items() if v} != gens[generation]["changes"]:
                    problems.append(
                        f"gen {generation}: summary.json changes {summary.get('changes')} but "
                        f"changes-{generation}.tsv lists {dict(listed)}"
                    )
                gens[generation]["checked"] = checked
    first = gens[1]
    for generation in (2, 3):
        g = gens[generation]
        g["bytes_ratio"] = round(g["bytes_sent"] / first["bytes_sent"], 4)
        g["wall_ratio"] = round(g["wall_s"] / first["wall_s"], 4)
        g["cpu_ratio"] = round(g["cpu_s"] / first["cpu_s"], 4) if g["cpu_s"] and first["cpu_s"] else None
    return {"round": round_no, "generations": gens}, problems


def print_table(runs: list[dict]) -> None:
    print(
        f"\n{'round':>5} {'gen':>3} {'load':>4} {'wall s':>7} {'cpu s':>6} {'requests':>8} {'bytes sent':>11} "
        f"{'body bytes':>11} {'304s':>5} {'200s':>5} {'cond.':>5} {'x bytes':>7} {'x wall':>6} {'x cpu':>5}  "
        "changes (summary.json)"
    )
    for run in runs:
        for generation, g in run["generations"].items():
            if generation == 1:
                ratios = f"{'':>7} {'':>6} {'':>5}"
            else:
                cpu = f"{g['cpu_ratio']:>5.3f}" if g["cpu_ratio"] is not None else f"{'-':>5}"
                ratios = f"{g['bytes_ratio']:>7.3f} {g['wall_ratio']:>6.3f} {cpu}"
            print(
                f"{run['round']:>5} {generation:>3} {g['load_1min']:>4.1f} {g['wall_s']:>7.2f} {g['cpu_s'] or 0:>6.2f} "
                f"{g['requests']:>8} {g['bytes_sent']:>11,} {g['body_bytes_sent']:>11,} {g['n304']:>5} "
                f"{g['n200']:>5} {g['conditional']:>5} {ratios}  {json.dumps(g['changes'])}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--per-host",
        type=int,
        default=None,
        help="passed to every run (default: none, the crawler's adaptive throttle: one request in flight)",
    )
    parser.add_argument("--share", type=float, default=0.05, help="share of the crawled HTML files changed")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the choice (+ the round number)")
    args = parser.parse_args()
    if nginx_binary() is None:
        print("recrawl: nginx is not installed (apt-get install nginx-light)", file=sys.stderr)
        return 2
    runs, problems = [], []
    for round_no in range(args.rounds):
        run, found = run_round(args, round_no)
        runs.append(run)
        problems += found
        g = run["generations"]
        print(
            f"round {round_no}: crawl {g[1]['wall_s']:.2f} s, recrawl unchanged {g[2]['wall_s']:.2f} s, "
            f"recrawl after {g[3]['touched']} touched + {g[3]['edited']} edited of {g[3]['html_files']} "
            f"HTML files {g[3]['wall_s']:.2f} s; {len(found)} mismatches",
            flush=True,
        )
        for generation in (2, 3):
            print(f"  gen {generation} URLs checked: {json.dumps(g[generation]['checked'])}")
        for problem in found:
            print(f"  MISMATCH {problem}")
    print_table(runs)
    bytes_ratio = statistics.median(r["generations"][2]["bytes_ratio"] for r in runs)
    wall_ratio = statistics.median(r["generations"][2]["wall_ratio"] for r in runs)
    cpu_ratios = [r["generations"][2]["cpu_ratio"] for r in runs if r["generations"][2]["cpu_ratio"] is not None]
    cpu_ratio = statistics.median(cpu_ratios) if cpu_ratios else None
    verdict = {
        "bytes_ratio_median": bytes_ratio,
        "bytes_target": BYTES_TARGET,
        "bytes_met": bytes_ratio <= BYTES_TARGET,
        "wall_ratio_median": wall_ratio,
        "wall_target": WALL_TARGET,
        "wall_met": wall_ratio <= WALL_TARGET,
        "cpu_ratio_median": cpu_ratio,
    }
    print(
        f"\nunchanged recrawl / crawl (median of {len(runs)}): bytes {bytes_ratio:.3f} "
        f"(target <= {BYTES_TARGET}: {'met' if verdict['bytes_met'] else 'MISSED'}), wall {wall_ratio:.3f} "
        f"(target <= {WALL_TARGET}: {'met' if verdict['wall_met'] else 'MISSED'}), crawler cpu "
        f"{'-' if cpu_ratio is None else f'{cpu_ratio:.3f}'}"
    )
    print(f"change checks: {len(problems)} mismatches" if problems else "change checks: all as expected")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "recrawl.json"), "w") as f:
        json.dump(
            {
                "root": args.root,
                "rounds": args.rounds,
                "workers": args.workers,
                "per_host": args.per_host,
                "share": args.share,
                "seed": args.seed,
                **verdict,
                "mismatches": problems,
                "runs": runs,
            },
            f,
            indent=1,
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
