"""Predicate pruning: window assignment copies every triple into RANGE/STEP windows, so the
triples no pattern can match are dropped before it. The rule states which predicates the
query can match (``ContinuousQuery.predicates``); window assignment keeps only those."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.language import ast
from rsp_jobs.tree import walk


def prune_predicates(query: P.ContinuousQuery) -> P.ContinuousQuery:
    """Not for DESCRIBE (it reports whatever a window says of a resource), count windows (the
    last n triples are counted before any pattern), patterns (they read streams whole), or a
    query with a variable predicate in a triple pattern or timestamp() call."""
    if (
        query.form == "DESCRIBE"
        or query.pattern
        or not all(isinstance(w.window, ast.TimeWindow) for w in query.windows)
    ):
        return query
    found = set()
    for node in walk(query.plan):
        if isinstance(node, P.Path):
            # a negated property set matches other predicates, and a zero-length path with no
            # constant end every term of the window's graph, whatever its triples' predicates
            iris = P.path_iris(node.path)
            if iris is None or P.path_reads_all_terms(node):
                return query
            found |= iris
        elif isinstance(node, (ast.TriplePattern, ast.Timestamp)):
            if not isinstance(node.predicate, ast.IRI):
                return query
            found.add(f"<{node.predicate.value}>")
    return replace(query, predicates=frozenset(found))
