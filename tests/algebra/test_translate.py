"""Static checks of the translation to algebra (SPARQL 1.1 section 18.2): a query that breaks a
scope rule is refused by ``compiler.compile``, before any Spark job; no Spark."""
from __future__ import annotations

import pytest

from rsp_jobs.compiler import compile
from rsp_jobs.errors import QueryError, UnsupportedConstruct

WINDOW = "REGISTER QUERY q AS SELECT * FROM STREAM <urn:s> [RANGE 1m STEP 10s] WHERE {{ {body} }}"
PATTERN = "REGISTER QUERY p AS SELECT * FROM STREAM <urn:s> WHERE {{ {body} }}"
ALREADY_BOUND = r"^q\.rsp: BIND assigns \?o, which is already bound in the group \(SPARQL 18\.2\.1\)$"


@pytest.mark.parametrize("body", [
    "?s <urn:p> ?o BIND (1 AS ?o)",
    "?s <urn:p> ?x OPTIONAL { ?s <urn:q> ?o } BIND (1 AS ?o)",
    "{ ?s <urn:p> ?o } UNION { ?s <urn:q> ?x } BIND (1 AS ?o)",
    "?s <urn:p> ?x { SELECT ?o WHERE { ?o <urn:q> ?y BIND (2 AS ?o) } }",
    "?s <urn:p> ?x BIND (1 AS ?o) BIND (2 AS ?o)",
])
def test_compile_refuses_a_bind_of_a_variable_already_in_scope(body):
    with pytest.raises(QueryError, match=ALREADY_BOUND):
        compile(WINDOW.format(body=body), "q.rsp")


def test_compile_refuses_it_in_an_ep_sparql_pattern():
    body = "{ ?s <urn:p> ?o } SEQ { ?s <urn:q> ?x } BIND (1 AS ?o)"
    with pytest.raises(QueryError, match=ALREADY_BOUND):
        compile(PATTERN.format(body=body), "q.rsp")


def test_compile_refuses_it_in_a_dotr_event_select():
    rule = ("FROM STREAM <urn:s>\ndefine r { ?s a <urn:R> }\n"
            "from A = [SELECT ?s ?o WHERE { ?s <urn:p> ?o BIND (1 AS ?o) }]\nwith ?s = A.?s\n")
    with pytest.raises(QueryError, match=r"^r\.dotr: BIND assigns \?o, which is already bound"):
        compile(rule, "r.dotr")


@pytest.mark.parametrize("body", [
    "?s <urn:p> ?x BIND (1 AS ?o)",                        # ?o is new
    "BIND (1 AS ?o) ?s <urn:p> ?o",                        # bound after the BIND: a join
    "?s <urn:p> ?x { ?s <urn:q> ?o } UNION { BIND (1 AS ?o) }",  # another group's scope
    "?s <urn:p> ?x MINUS { ?s <urn:q> ?o } BIND (1 AS ?o)",  # MINUS binds nothing
    "?s <urn:p> ?x { SELECT ?s WHERE { ?s <urn:q> ?o } } BIND (1 AS ?o)",  # projected away
])
def test_compile_accepts_a_bind_of_a_new_variable(body):
    compile(WINDOW.format(body=body), "q.rsp")


def test_an_ep_sparql_pattern_refuses_inline_data_where_it_is_written():
    text = PATTERN.format(body="{ ?s <urn:p> ?o } SEQ { ?s <urn:q> ?x VALUES ?x { 1 2 } }")
    column = text.index("VALUES") + 1
    with pytest.raises(UnsupportedConstruct, match=rf"^q\.rsp:1:{column}: unsupported construct: VALUES in an EP-SPARQL"):
        compile(text, "q.rsp")


def test_trailing_values_are_in_scope_for_select_star_and_join_after_having():
    compiled = compile("REGISTER QUERY q AS SELECT * FROM STREAM <urn:s> [RANGE 1m STEP 10s] "
                       "WHERE { ?s <urn:p> ?o } VALUES ?k { 1 }", "q.rsp")
    assert [v.name for v in compiled.variables] == ["k", "o", "s"]
    with pytest.raises(QueryError, match="selected but neither grouped nor aggregated"):
        compile("REGISTER QUERY q AS SELECT ?s ?k FROM STREAM <urn:s> [RANGE 1m STEP 10s] "
                "WHERE { ?s <urn:p> ?o } GROUP BY ?s VALUES ?k { 1 }", "q.rsp")


@pytest.mark.parametrize("text, construct, at", [
    (PATTERN.format(body="{ ?s <urn:p> ?o } SEQ { ?s <urn:q> ?x } FILTER NOT EXISTS { ?x <urn:r> ?o }"),
     "EXISTS in an EP-SPARQL pattern", "NOT EXISTS"),
    (WINDOW.format(body="?s <urn:p> ?o OPTIONAL { ?s <urn:q> ?x FILTER EXISTS { ?x <urn:r> ?o } }"),
     "EXISTS in an OPTIONAL's FILTER", "EXISTS"),
    (WINDOW.format(body="?s <urn:p> ?o") + " ORDER BY (EXISTS { ?o <urn:r> ?s })", "EXISTS in ORDER BY", "EXISTS"),
])
def test_exists_is_refused_where_it_has_no_solutions_to_test(text, construct, at):
    with pytest.raises(UnsupportedConstruct, match=rf"^q\.rsp:1:{text.index(at) + 1}: unsupported construct: {construct}"):
        compile(text, "q.rsp")


def test_select_star_with_group_by_is_refused():
    with pytest.raises(QueryError, match=r"^q\.rsp: SELECT \* with GROUP BY"):
        compile(WINDOW.format(body="?s <urn:p> ?o") + " GROUP BY ?s", "q.rsp")


# ---------------------------------------------------------------------------- property paths

@pytest.mark.parametrize("body", [
    "?s <urn:p>+ ?o BIND (1 AS ?o)",
    "GRAPH ?o { ?s <urn:p>* ?x } BIND (1 AS ?o)",
])
def test_a_path_binds_its_ends_and_graph_for_the_bind_check(body):
    with pytest.raises(QueryError, match=ALREADY_BOUND):
        compile(WINDOW.format(body=body), "q.rsp")


def test_an_ep_sparql_pattern_refuses_a_path_with_operators_where_it_is_written():
    body = "{ ?s <urn:p>/<urn:q> ?o } SEQ {\n ?o <urn:q>+ ?x }"
    with pytest.raises(UnsupportedConstruct) as info:
        compile(PATTERN.format(body=body), "q.rsp")
    assert str(info.value) == ("q.rsp:2:5: unsupported construct: a property path with |, *, +, ? "
                               "or ! in an EP-SPARQL pattern")


def test_an_ep_sparql_pattern_takes_a_sequence_and_an_inverse_as_triples():
    body = "{ ?s <urn:p>/<urn:q> ?o } SEQ { ?o ^<urn:q> ?x }"
    assert compile(PATTERN.format(body=body), "q.rsp") is not None


def test_a_dotr_event_takes_a_path_with_operators_as_a_path_node():
    """An event's SELECT runs per instant, over the instant's graph and the background: a path
    means there what it means in a window (DOTR §3)."""
    from rsp_jobs.algebra import plan as P
    from rsp_jobs.tree import walk

    rule = ("FROM STREAM <urn:s>\ndefine r { ?s a <urn:R> }\n"
            "from A = [SELECT ?s WHERE { ?s <urn:p>|<urn:q>+ ?o }]\nwith ?s = A.?s\n")
    compiled = compile(rule, "r.dotr")
    assert any(isinstance(n, P.Path) for event in compiled.events for n in walk(event.query.plan))


def test_a_block_with_paths_joins_what_shares_variables_first():
    """``?s :p ?x . ?x :q* ?y . ?y :r ?z``: the two triples share no variable, so they are two
    BGPs joined through the path, not one BGP that is their product (SPARQL 18.2.2.5's joins
    commute)."""
    from rsp_jobs.algebra import plan as P

    query = compile(WINDOW.format(body="?s <urn:p> ?x . ?x <urn:q>* ?y . ?y <urn:r> ?z . ?s <urn:t> ?w"),
                    "q.rsp", skip=["order_joins"])
    join = query.plan.input
    assert isinstance(join, P.Join) and isinstance(join.right, P.BGP)
    assert [t.predicate.value for t in join.right.triples] == ["urn:r"]
    assert isinstance(join.left.right, P.Path)
    assert [t.predicate.value for t in join.left.left.triples] == ["urn:p", "urn:t"]


@pytest.mark.parametrize("call, name", [("NOW()", "NOW()"), ('BNODE("x")', "BNODE(str)")])
def test_a_dotr_condition_refuses_now_and_bnode_of_a_string_where_they_are_written(call, name):
    rule = ("FROM STREAM <urn:s>\ndefine r { ?s a <urn:R> }\n"
            "from A = [SELECT ?s ?t WHERE { ?s <urn:p> ?t }]\n"
            f"with ?s = A.?s, {call} != A.?t\n")
    with pytest.raises(UnsupportedConstruct) as info:
        compile(rule, "r.dotr")
    assert str(info.value) == (f"r.dotr:4:17: unsupported construct: {name} in a DOTR condition "
                               "(an event's SELECT may call it)")
