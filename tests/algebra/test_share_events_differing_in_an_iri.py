"""Which event SELECTs ``optimize.share_events_differing_in_an_iri`` evaluates as one (no
Spark): only those that differ in one IRI of a triple pattern every solution must match, so
that splitting the merged solutions by that IRI gives each event exactly its own. That the
answers stay the same is checked in Spark by ``tests/patterns/test_dotr.py``."""
from __future__ import annotations

import pytest

from rsp_jobs.algebra.explain import explain
from rsp_jobs.compiler import compile, compile_rule_set

HEAD = "PREFIX : <http://example.org/>\nFROM STREAM <http://example.org/s>\n"


def rule_set(*selects: str):
    """One rule per pair of SELECTs (``A`` then ``B`` within 5 s), compiled as one set."""
    rules = [compile(HEAD + f"define R{i} {{ [] a :Hit ; :x ?x }}\nfrom A = [{a}]\n"
                     f"and last B = [{b}] within 5 s from A\nwith ?x = A.?x", f"r{i}.dotr", "dotr")
             for i, (a, b) in enumerate(zip(selects[::2], selects[1::2]))]
    return compile_rule_set(rules)


def evaluations(*selects: str) -> int:
    """How many SELECTs the set evaluates per instant."""
    return sum(len(group.events) for group in rule_set(*selects).groups)


@pytest.mark.parametrize("a, b", [
    ("SELECT ?x WHERE { ?e a :P ; :at ?x }", "SELECT ?x WHERE { ?e a :Q ; :at ?x }"),
    ("SELECT DISTINCT ?x WHERE { ?e a :P ; :at ?x }", "SELECT DISTINCT ?x WHERE { ?e a :Q ; :at ?x }"),
    ("SELECT ?x WHERE { ?e :at ?x ; :kind :P }", "SELECT ?x WHERE { ?e :at ?x ; :kind :Q }"),
    ("SELECT ?x WHERE { ?e :P ?x }", "SELECT ?x WHERE { ?e :Q ?x }"),  # a predicate
    ("SELECT ?x WHERE { ?e a :P ; :at ?x OPTIONAL { ?e :note ?n } }",
     "SELECT ?x WHERE { ?e a :Q ; :at ?x OPTIONAL { ?e :note ?n } }"),  # OPTIONAL's left side
    ("SELECT ?x WHERE { ?e a :P ; :at ?x FILTER(?x != :nowhere) }",
     "SELECT ?x WHERE { ?e a :Q ; :at ?x FILTER(?x != :nowhere) }"),
    ("SELECT ?x WHERE { ?e a :P ; :at ?x . ?f a :P ; :at ?x }",
     "SELECT ?x WHERE { ?e a :Q ; :at ?x . ?f a :Q ; :at ?x }"),  # one IRI at two places
])
def test_selects_differing_in_one_iri_are_evaluated_once(a, b):
    assert evaluations(a, b) == 1
    plan = explain(rule_set(a, b))
    assert "A=<http://example.org/P> R0.B=<http://example.org/Q> split by ?_iri" in plan
    assert "(?_iri IN (<http://example.org/P>, <http://example.org/Q>))" in plan


@pytest.mark.parametrize("a, b", [
    ("SELECT ?x WHERE { ?e a :P ; :v 3 ; :at ?x }", "SELECT ?x WHERE { ?e a :P ; :v 4 ; :at ?x }"),  # literals
    ("SELECT ?x WHERE { ?e a :P ; :at ?x }", "SELECT ?x WHERE { ?e a :P ; :at ?x ; :by ?b }"),
    ("SELECT ?x WHERE { ?e a :P ; :at ?x }", "SELECT ?e WHERE { ?e a :Q ; :at ?x }"),  # projections
    ("SELECT ?x WHERE { ?e a :P ; :at :a1 ; :by ?x }", "SELECT ?x WHERE { ?e a :Q ; :at :a2 ; :by ?x }"),
    ("SELECT ?x WHERE { ?e :at ?x OPTIONAL { ?e a :P } }", "SELECT ?x WHERE { ?e :at ?x OPTIONAL { ?e a :Q } }"),
    ("SELECT ?x WHERE { ?e :at ?x MINUS { ?e a :P } }", "SELECT ?x WHERE { ?e :at ?x MINUS { ?e a :Q } }"),
    ("SELECT ?x WHERE { { ?e a :P ; :at ?x } UNION { ?e :near ?x } }",
     "SELECT ?x WHERE { { ?e a :Q ; :at ?x } UNION { ?e :near ?x } }"),
    ("SELECT ?x (COUNT(?e) AS ?n) WHERE { ?e a :P ; :at ?x } GROUP BY ?x",
     "SELECT ?x (COUNT(?e) AS ?n) WHERE { ?e a :Q ; :at ?x } GROUP BY ?x"),
    ("SELECT ?x WHERE { ?e a :P ; :at ?x } LIMIT 1", "SELECT ?x WHERE { ?e a :Q ; :at ?x } LIMIT 1"),
    ("SELECT ?x WHERE { ?e :at ?x FILTER(?x != :P) }", "SELECT ?x WHERE { ?e :at ?x FILTER(?x != :Q) }"),
])
def test_selects_differing_elsewhere_or_where_others_decide_stay_apart(a, b):
    """A literal can equal one of another spelling; an IRI in an expression is not a pattern;
    a solution under GROUP BY, LIMIT, UNION or the right of OPTIONAL/MINUS is kept or not
    depending on other solutions."""
    assert evaluations(a, b) == 2


def test_a_third_select_joins_only_if_it_differs_at_the_same_place():
    p, q = "SELECT ?x WHERE { ?e a :P ; :at ?x ; :by :s1 }", "SELECT ?x WHERE { ?e a :Q ; :at ?x ; :by :s1 }"
    other_place = "SELECT ?x WHERE { ?e a :P ; :at ?x ; :by :s2 }"
    same_place = "SELECT ?x WHERE { ?e a :R ; :at ?x ; :by :s1 }"
    assert evaluations(p, q, other_place, same_place) == 2
    plan = explain(rule_set(p, q, other_place, same_place))
    assert "(?_iri IN (<http://example.org/P>, <http://example.org/Q>, <http://example.org/R>))" in plan


def test_the_split_variable_is_fresh():
    a, b = "SELECT ?_iri WHERE { ?_iri a :P }", "SELECT ?_iri WHERE { ?_iri a :Q }"
    assert "split by ?_iri_" in explain(rule_set(a, b))
