"""The page record's schema: every field a crawl writes and its type, in one place.

JSON Lines carry no schema, so a reader that infers one from the first shard fails when a
later shard has a value where the first had only nulls (a failure's ``error``, a
``canonical``): Hugging Face ``datasets`` raises ``Couldn't cast array of type string to
null``. The dataset card (:mod:`crawler.output.card`) declares these types to
``datasets``, and the Parquet export (:mod:`crawler.output.export`) writes them as its
Arrow schema. docs/outputs.md says what each field means.

Types: ``string``, ``int64``, ``float64``, ``bool`` and ``list<string>``; every field may be
null except ``url``.
"""

from __future__ import annotations

from typing import Any

#: ``(field, type)`` of a crawl's page record, in the order records are written.
RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("url", "string"),
    ("request_url", "string"),
    ("final_url", "string"),
    ("status", "int64"),
    ("content_type", "string"),
    ("depth", "int64"),
    ("parent", "string"),
    ("redirect_chain", "list<string>"),
    ("title", "string"),
    ("markdown", "string"),
    ("fingerprint", "string"),
    ("canonical", "string"),
    ("duplicate_of", "string"),
    ("content", "string"),
    ("converter", "string"),
    ("fallback_error", "string"),
    ("simhash", "string"),
    ("near_duplicate_of", "string"),
    ("near_duplicate_distance", "int64"),
    ("fetched_at", "string"),
    ("elapsed_ms", "float64"),
    ("bytes", "int64"),
    ("truncated", "bool"),
    ("attempts", "int64"),
    ("error", "string"),
    ("etag", "string"),
    ("last_modified", "string"),
    ("payload_digest", "string"),
    ("generation", "int64"),
    ("change", "string"),
    ("content_generation", "int64"),
    ("conditional", "list<string>"),
    ("warc_date", "string"),
)


def hf_features(fields: tuple[tuple[str, str], ...] = RECORD_FIELDS) -> list[dict[str, str]]:
    """``dataset_info.features`` of a Hugging Face dataset card (``datasets`` 4 and 5:
    ``{"name", "dtype"}``, or ``{"name", "list"}`` for a list)."""
    out = []
    for name, kind in fields:
        if kind.startswith("list<"):
            out.append({"name": name, "list": kind[len("list<") : -1]})
        else:
            out.append({"name": name, "dtype": kind})
    return out


def arrow_schema(fields: tuple[tuple[str, str], ...] = RECORD_FIELDS) -> Any:
    """The ``pyarrow.Schema`` of ``fields`` (``url`` not nullable)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    columns = []
    for name, kind in fields:
        arrow = pa.list_(types[kind[len("list<") : -1]]) if kind.startswith("list<") else types[kind]
        columns.append(pa.field(name, arrow, nullable=name != "url"))
    return pa.schema(columns)
