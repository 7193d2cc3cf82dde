"""The dataset card: ``README.md`` in the output folder, so that the folder loads as a
dataset as it is (``datasets.load_dataset(OUT)``).

Its YAML header is what Hugging Face ``datasets`` reads from a local folder's card
(https://huggingface.co/docs/hub/datasets-manual-configuration):

- ``configs``: ``default``, every page shard of the folder (plain, gzip and Zstandard:
  ``datasets`` reads each by its extension), split ``train``; in a recrawled folder also
  ``generation-G`` per generation, naming that generation's shards;
- ``dataset_info.features``: every record field's type (:mod:`crawler.output.schema`), so
  that no reader infers a null type from a shard where a field happens to be null.

The header is written as YAML flow scalars (JSON strings are valid YAML 1.2), without a
YAML library. The card is the crawler's: it is rewritten at the end of every run and
says so on its first line after the header (:data:`MARKER`); a ``README.md`` without that
line is someone else's and is left alone (a warning is logged).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence

from crawler.output.schema import RECORD_FIELDS, hf_features

log = logging.getLogger("crawler")

#: The card's file name.
CARD_FILE = "README.md"
#: The line that marks a card as written by the crawler.
MARKER = "<!-- dataset card written by crawler: rewritten at the end of every run -->"
#: The shard name patterns of ``default`` (every compression a crawl may leave).
SHARD_PATTERNS = ("pages-*.jsonl", "pages-*.jsonl.gz", "pages-*.jsonl.zst")


def is_ours(path: str) -> bool:
    """Whether the file at ``path`` is a card this module wrote: :data:`MARKER` is the
    line right after its YAML header."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(1 << 20).split("\n")
    except OSError:
        return False
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        return False
    end = lines.index("---", 1)
    return len(lines) > end + 1 and lines[end + 1] == MARKER


def card_text(
    seeds: Sequence[str],
    counts: Mapping[str, object],
    generations: Mapping[int, Sequence[str]] | None = None,
    patterns: Sequence[str] = SHARD_PATTERNS,
    fields: tuple[tuple[str, str], ...] = RECORD_FIELDS,
    about: Sequence[str] = (),
) -> str:
    """The card's text. ``counts``: summary figures to show (name -> value);
    ``generations``: ``{generation: [shard file, ...]}`` of a recrawled folder;
    ``patterns`` and ``fields``: the files of ``default`` and their fields (an export's
    differ from a crawl's); ``about``: the lines that say what the files are (default:
    a crawl folder's)."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train", "    path:"]
    lines += [f"    - {json.dumps(pattern)}" for pattern in patterns]
    for number, files in sorted((generations or {}).items()):
        if files:
            lines += [f"- config_name: generation-{number}", "  data_files:", "  - split: train", "    path:"]
            lines += [f"    - {json.dumps(name)}" for name in files]
    lines.append("dataset_info:")  # one entry per config: datasets gives each config its own
    for config in ["default", *(f"generation-{n}" for n, files in sorted((generations or {}).items()) if files)]:
        lines += [f"- config_name: {json.dumps(config)}", "  features:"]
        for feature in hf_features(fields):
            lines.append(f"  - name: {json.dumps(feature['name'])}")
            lines += [f"    {key}: {json.dumps(value)}" for key, value in feature.items() if key != "name"]
    title = f"Crawl of {', '.join(seeds[:3])}{' ...' if len(seeds) > 3 else ''}" if seeds else "A crawled corpus"
    lines += ["---", MARKER, "", f"# {title}", ""]
    lines += list(about) or [
        "One JSON record per fetched URL in `pages-NN-SSSSS.jsonl` (`.gz`, `.zst` when compressed),",
        "written by crawler. Load it with `datasets.load_dataset(FOLDER)`; the types of the fields are",
        "declared above, so shards where a field is always null load too.",
    ]
    lines.append("")
    if generations:
        lines += [
            "The folder was recrawled: `default` holds every generation's records, `generation-G` one",
            "generation's. The current corpus (per URL its latest record) is written by",
            "`python -m crawler export-current FOLDER --to NEW`.",
            "",
        ]
    if counts:
        lines += ["| figure | value |", "| --- | --- |"]
        lines += [f"| {name} | {value} |" for name, value in counts.items()]
        lines.append("")
    lines += ["## Fields", "", "| field | type |", "| --- | --- |"]
    lines += [f"| `{name}` | {kind} |" for name, kind in fields]
    return "\n".join(lines) + "\n"


def write_card(
    out_dir: str,
    seeds: Sequence[str],
    counts: Mapping[str, object],
    generations: Mapping[int, Sequence[str]] | None = None,
    **layout: object,
) -> bool:
    """Write ``out_dir/README.md`` (atomically) unless a README.md that is not ours is
    there; returns whether it was written. ``layout``: ``patterns``, ``fields``,
    ``about`` of :func:`card_text`.

    Raises:
        OSError: the file cannot be written.
    """
    path = os.path.join(out_dir, CARD_FILE)
    if os.path.exists(path) and not is_ours(path):
        log.warning("%s is not a card written by the crawler: left as it is, no dataset card written", path)
        return False
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(card_text(seeds, counts, generations, **layout))  # type: ignore[arg-type]  # card_text's
    os.replace(path + ".tmp", path)
    return True
