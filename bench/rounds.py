"""Summaries of a benchmark's repeated rounds: the spread (min and max) of each figure
over the rounds of one case, as the benchmark pages report them."""

from __future__ import annotations


def span(values) -> str:
    """``"lo-hi"`` of ``values`` (``"v"`` when all are equal), in ``%g`` form."""
    lo, hi = min(values), max(values)
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


def summarize(runs: list[dict], keys: list[str], fields) -> list[dict]:
    """One row per case (the runs sharing the values of ``keys``, in first-seen order):
    those values, ``rounds``, ``{"min", "max"}`` of each of ``fields``, and
    ``load_1min`` from the first round's ``load_before`` to the last's ``load_after``."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(tuple(run[k] for k in keys), []).append(run)
    rows = []
    for key, group in groups.items():
        row: dict = dict(zip(keys, key))
        row["rounds"] = len(group)
        for field in fields:
            values = [r[field] for r in group]
            row[field] = {"min": min(values), "max": max(values)}
        row["load_1min"] = {
            "min": min(r["load_before"][0] for r in group),
            "max": max(r["load_after"][0] for r in group),
        }
        rows.append(row)
    return rows
