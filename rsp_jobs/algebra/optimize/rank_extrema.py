"""MIN and MAX by rank: SPARQL orders terms (15.1) by a key that holds the term's text, and
Spark aggregates such a key only by sorting every row of every window by its group (no hash
aggregate holds a string), which was most of the time of an aggregating query over long spans
(congestion_by_segment's MAX over eight days of CityBench: 5.5 s with it, 3.6-4.1 s without).
Where every term an argument can take is known before the windows are, the terms can be
ranked once in that order, each solution carry its term's rank (a number: hashed, not
sorted), and the greatest or least rank be turned back into its term after the aggregation
(``rsp_jobs.spark.evaluate``).

This rule finds those arguments: a MIN or MAX of a variable that only triple patterns with a
constant predicate bind, at the subject or the object (no BIND, no aggregate of a subquery).
Each of its values is then such a term of a triple in the window or in the background: the
terms at that place of the triples with that predicate, which the engine reads from the
lake's files and the background graphs (``LakeStatistics.terms``, ``Background.terms``). Where
it cannot (under entailment a window holds derived triples; a slice too large to read on the
driver; more terms than a local relation holds) the aggregate sorts as before."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.language import ast
from rsp_jobs.tree import transform, walk


def rank_extrema(query: P.ContinuousQuery) -> P.ContinuousQuery:
    if query.pattern:  # EP-SPARQL reads streams whole: no windows to sort
        return query

    def annotate(node):
        if not isinstance(node, P.Group):
            return node
        ranked = tuple(
            _sources(node.input, agg.arg.name)
            if agg.name in ("min", "max") and isinstance(agg.arg, ast.Var)
            else ()
            for agg, _ in node.aggregates
        )
        return replace(node, ranked=ranked) if any(ranked) else node

    return replace(query, plan=transform(query.plan, annotate))


def _sources(node, name: str) -> tuple[P.TermsAt, ...]:
    """Where the values of ``?name`` in ``node``'s solutions come from, if only triple patterns
    with a constant predicate bind it; () otherwise."""
    found: set[P.TermsAt] = set()
    for n in walk(node):
        if isinstance(n, (P.Extend, P.GroupExtend)) and n.var.name == name:
            return ()
        if isinstance(n, P.Group) and (
            any(var.name == name for _, var in n.aggregates)
            or any(var.name == name and expr != var for expr, var in n.keys)
        ):
            return ()
        if isinstance(n, P.Path) and name in P.path_vars(n):
            return ()  # a path's ends are terms of any step, or of none (zero length)
        if isinstance(n, ast.TriplePattern):
            place = _place(n, name)
            if place == "":
                return ()
            if place is not None and isinstance(n.predicate, ast.IRI):  # so _place says
                found.add(P.TermsAt(place, f"<{n.predicate.value}>"))
    return tuple(sorted(found, key=lambda t: (t.predicate, t.position)))


def _place(triple: ast.TriplePattern, name: str) -> str | None:
    """``s`` or ``o`` where ``triple`` binds ``?name`` (None: it does not; "": it does, but not
    at a place this rule ranks)."""
    places = [
        place
        for place, term in (("s", triple.subject), ("p", triple.predicate), ("o", triple.object))
        if isinstance(term, ast.Var) and term.name == name
    ]
    if not places:
        return None
    if "p" in places or len(places) > 1 or not isinstance(triple.predicate, ast.IRI):
        return ""
    return places[0]
