"""A DOTR rule's events → logical plans: each event's SELECT becomes a continuous query over
the rule's streams and background graphs, to be evaluated once per time instant (DOTR,
Margara et al. 2018, section 3: the ontological scope of an event is one instant)."""
from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.translate import translate
from rsp_jobs.language import ast
from rsp_jobs.language.rules import Rule


def event_queries(rule: Rule) -> dict[str, P.ContinuousQuery]:
    """Label → the plan of that event's SELECT (SPARQL 18.2 translation, unchanged)."""
    # The window is nominal (translate wants one on a C-SPARQL stream): rows are grouped by
    # instant, never windowed, when a rule is evaluated.
    # A rule without FROM STREAM (as the paper prints them) reads the elements it is given: a
    # nominal stream stands in, as the instants' rows carry no stream.
    streams = tuple(ast.StreamClause(iri, ast.TimeWindow(1, 1), None, None)
                    for iri in rule.streams or ("urn:rsp:dotr:given-stream",))
    return {p.label: translate(replace(p.query, streams=streams, graphs=rule.graphs, source=rule.source))
            for p in rule.predicates}
