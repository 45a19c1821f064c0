"""Comparing window results: as sets of bindings per window, numerics as doubles."""
from __future__ import annotations

from rsp_jobs.terms import NUMERIC_RANK


def canonical_value(term: dict):
    """A JSON results term → a comparable value: numbers as rounded doubles, others as text."""
    if term["type"] == "literal" and term.get("datatype") in NUMERIC_RANK:
        return round(float(term["value"]), 9)
    if term["type"] == "literal":
        return ("literal", term["value"], term.get("datatype"), term.get("xml:lang"))
    return (term["type"], term["value"])


def canonical_bindings(bindings: list[dict]) -> list[tuple]:
    """A multiset of bindings as a sorted list, each binding a sorted tuple of (var, value)."""
    rows = [tuple(sorted((var, canonical_value(term)) for var, term in b.items())) for b in bindings]
    return sorted(rows, key=repr)
