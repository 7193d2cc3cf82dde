"""The command line: exit codes and one-line errors, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.helpers.siteserver import Route, SiteServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(*args: str, timeout: float = 120, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crawler", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crawler: error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "seed", ["not a url", "ftp://127.0.0.1/x", "http://", "/relative/path", "http://127.0.0.1:99999/"]
)
def test_invalid_seed_is_a_one_line_error(seed, tmp_path):
    assert_one_line_error(run_cli(seed, "--out", str(tmp_path)), "invalid seed URL")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--workers", "0"], "--workers"),
        (["--shards", "48"], "power of two"),
        (["--max-pages", "x"], "--max-pages"),
        (["--include", "("], "bad regex"),
        (["--read-timeout", "nan"], "finite number"),
        (["--max-depth", "-1"], "at least 0"),
        (["--max-path-repeats", "0"], "--max-path-repeats"),
        (["--max-path-segments", "x"], "--max-path-segments"),
    ],
)
def test_bad_option_is_a_one_line_error(args, fragment, tmp_path):
    assert_one_line_error(run_cli("http://127.0.0.1:1/", "--out", str(tmp_path), *args), fragment)


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert_one_line_error(
        run_cli("http://127.0.0.1:1/", "--out", str(blocker / "out")), "cannot write to output folder"
    )


def test_an_output_folder_that_is_a_file_is_named_so(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = run_cli("http://127.0.0.1:1/", "--out", str(blocker))
    assert_one_line_error(result, f"cannot write to output folder '{blocker}': it is a file, not a folder")
    assert blocker.read_text() == "not a folder"


def test_unreachable_seed(tmp_path):
    port = closed_port()
    result = run_cli(
        f"http://127.0.0.1:{port}/", "--out", str(tmp_path / "out"), "--quiet", "--ignore-robots", "--retries", "0"
    )
    assert_one_line_error(result, "could not be crawled (connection)")
    with open(tmp_path / "out" / "summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["failed_by_reason"] == {"connection": 1} and summary["reconciled"]


def test_unreachable_seed_host_robots_txt_first(tmp_path):
    port = closed_port()
    result = run_cli(f"http://127.0.0.1:{port}/", "--out", str(tmp_path / "out"), "--quiet", "--retries", "1")
    assert_one_line_error(result, "could not be crawled (robots.txt unreachable (connection))")
    with open(tmp_path / "out" / "summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["skipped_by_reason"] == {"robots.txt unreachable (connection)": 1}
    assert (summary["robots_fetches"], summary["claimed"], summary["reconciled"]) == (2, 1, True)


def test_seed_that_404s_is_an_error(tmp_path):
    with SiteServer({}) as server:
        result = run_cli(server.url("/missing"), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, "could not be crawled (http 404)")


def test_successful_crawl_prints_summary_and_exits_zero(tmp_path):
    with SiteServer({"/": Route('<title>T</title><a href="/x">x</a>'), "/x": Route("<p>x</p>")}) as server:
        result = run_cli(server.url("/"), "--out", str(tmp_path / "out"), "--workers", "1", "--quiet")
        hits = dict(server.hits)
    assert result.returncode == 0, result.stderr
    assert hits == {"/robots.txt": 1, "/": 1, "/x": 1}
    summary = json.loads(result.stdout.splitlines()[0])
    assert (summary["pages"], summary["claimed"], summary["reconciled"]) == (2, 2, True)
    assert result.stdout.splitlines()[1] == f"output: {tmp_path / 'out'}"


def test_help_lists_every_option_with_default():
    result = run_cli("--help")
    assert result.returncode == 0
    for option in (
        "--out",
        "--workers",
        "--threads",
        "--queue-size",
        "--max-depth",
        "--max-pages",
        "--allow-domain",
        "--include",
        "--exclude",
        "--connect-timeout",
        "--read-timeout",
        "--total-timeout",
        "--max-bytes",
        "--max-redirects",
        "--user-agent",
        "--shards",
        "--start-method",
        "--progress-interval",
        "--quiet",
        "--max-path-repeats",
        "--max-path-segments",
    ):
        assert option in result.stdout
    assert "(default: 64)" in result.stdout
    help_text = " ".join(result.stdout.split())  # argparse wraps lines
    assert "/docs/docs/docs/ (default: 2)" in help_text
    assert "more than N segments (default: 20)" in help_text


def test_trap_guard_flags_reach_the_config(tmp_path):
    from crawler.cli import build_parser, config_from_args

    args = build_parser().parse_args(["http://127.0.0.1:1/", "--out", str(tmp_path)])
    defaults = config_from_args(args)
    assert (defaults.max_path_repeats, defaults.max_path_segments) == (2, 20)
    args = build_parser().parse_args(
        ["http://127.0.0.1:1/", "--out", str(tmp_path), "--max-path-repeats", "3", "--max-path-segments", "40"]
    )
    assert (config_from_args(args).max_path_repeats, config_from_args(args).max_path_segments) == (3, 40)


NEED = "need an absolute http:// or https:// URL"


@pytest.mark.parametrize(
    "content, line",
    [
        (b"# sites\n{seed}\n\nftp://x\n", " line 4: invalid seed URL 'ftp://x': " + NEED),
        (b"{seed}  # main\n{seed} {seed}\n", " line 2: one URL per line, found '{seed} {seed}'"),
        (b"{seed}\n# caf\xe9\n", " line 2: not UTF-8 text (byte 0xe9 at column 6)"),
        (b"\n# nothing\n", ": no seed URL in it (only blank lines and comments)"),
    ],
)
def test_bad_seed_file_is_a_one_line_error_before_anything_is_fetched(tmp_path, content, line):
    with SiteServer({"/": Route("<p>home</p>")}) as server:
        seed = server.url("/")
        path = tmp_path / "sites.txt"
        path.write_bytes(content.replace(b"{seed}", seed.encode()))
        result = run_cli(seed, "--seeds", str(path), "--out", str(tmp_path / "out"))
        hits = dict(server.hits)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"crawler: error: {path}{line.replace('{seed}', seed)}\n"
    assert hits == {} and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "missing.txt"], "cannot read seed file missing.txt: No such file or directory"),
        (["--seeds", "-"], "stdin: no seed URL in it (only blank lines and comments)"),
        ([], "no seed URL: give one or more URLs, or --seeds FILE"),
        (["map"], "no seed URL: give one or more URLs, or --seeds FILE"),
    ],
)
def test_no_seed_is_a_one_line_error(tmp_path, args, message):
    if args[:1] == ["map"]:
        args = ["map", "--out", str(tmp_path / "out")]
    result = run_cli(*args, "--out", str(tmp_path / "out"), stdin="# empty\n")
    assert (result.returncode, result.stderr) == (2, f"crawler: error: {message}\n")
    assert not (tmp_path / "out").exists()


def test_seeds_from_stdin_after_the_positional_ones(tmp_path):
    with (
        SiteServer({"/": Route("<p>a</p>"), "/x": Route("<p>a x</p>")}) as a,
        SiteServer({"/": Route("<p>b</p>")}) as b,
    ):
        stdin = f"# batch\n{a.url('/x')}\n{b.url('/')}  # site b\n{a.url('/')}\nHTTP://{b.url('/')[7:]}\n"
        result = run_cli(
            a.url("/"), "--seeds", "-", "--out", str(tmp_path / "out"), "--quiet", "--workers", "1", stdin=stdin
        )
        hits = (dict(a.hits), dict(b.hits))
    assert result.returncode == 0, result.stderr
    assert hits == ({"/robots.txt": 1, "/": 1, "/x": 1}, {"/robots.txt": 1, "/": 1})
    with open(tmp_path / "out" / "summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["seeds"] == [a.url("/"), a.url("/x"), b.url("/")]  # duplicates dropped
    assert (summary["pages"], summary["sites"], summary["sites_done"]) == (3, 2, 2)
    with open(tmp_path / "out" / "tree.txt", encoding="utf-8") as f:
        assert f.readline() == a.url("/") + "\n"  # the tree's root is the first seed
