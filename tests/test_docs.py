"""The documentation keeps up with the code: every command-line option is in
docs/options.md, README.md stays short, and every relative link in README.md and
docs/*.md points to a file that exists (and, with a #fragment, to a heading in it)."""

import re
import unicodedata
from pathlib import Path

import pytest

from crawler.cli import build_parser
from crawler.config import MODES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_BYTES = 12_288

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _option_strings(mode):
    parser = build_parser(mode)
    return {s for action in parser._actions for s in action.option_strings}


def _pages():
    return [README, *sorted(DOCS.glob("*.md"))]


def _links(text):
    text = FENCE.sub("", text)
    text = CODE_SPAN.sub("", text)
    return LINK.findall(text)


def _slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces
    to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = unicodedata.normalize("NFC", text.strip().lower())
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def _anchors(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen, anchors = {}, set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#* *$", text, re.M):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_parser_has_options():
    # The test below must have something to check: an empty set would pass it vacuously.
    assert {"--out", "--seeds", "--workers", "--help", "--version"} <= _option_strings("crawl")


@pytest.mark.parametrize("mode", MODES)
def test_every_option_is_in_options_md(mode):
    text = (DOCS / "options.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", text))
    missing = sorted(_option_strings(mode) - documented)
    assert not missing, f"options of `python -m crawler {mode}` not in docs/options.md: {missing}"


def test_every_command_is_in_options_md():
    text = (DOCS / "options.md").read_text(encoding="utf-8")
    for mode in MODES:
        assert f"python -m crawler {mode}" in text, mode


def test_readme_is_short():
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, more than {README_MAX_BYTES}"


def test_readme_links_every_docs_page():
    linked = {target.split("#")[0] for target in _links(README.read_text(encoding="utf-8"))}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages, "no docs/*.md pages"
    assert not pages - linked, f"docs pages README.md does not link: {sorted(pages - linked)}"


def test_relative_links_point_to_existing_files():
    broken = []
    for page in _pages():
        for target in _links(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_slug_matches_github():
    assert _slug("Command line and `make`") == "command-line-and-make"
    assert _slug("map.json") == "mapjson"
    assert _slug("Near duplicates: features and cost") == "near-duplicates-features-and-cost"
