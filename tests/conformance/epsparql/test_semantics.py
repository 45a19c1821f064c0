"""EP-SPARQL where the paper is silent or contradicts itself: each decision
docs/decisions/ep-sparql.md lists, tested both ways where the issue asks it, on the engine and on the
brute-force evaluator, with the expected answer worked out here."""
from __future__ import annotations

import pytest
from rdflib import Graph, URIRef

from rsp_jobs import compiler
from tests.conformance.epsparql.support import EX, PREFIXES, DAY, rows, run, stream

A, B, C = EX + "A", EX + "B", EX + "C"


def test_optional_binds_what_ends_no_later_than_the_mandatory_part(spark):
    """3.2's LeftJoin keeps μ ⋈ μ' when t'ω < tω; strictly, that contradicts the paper's
    downward compatibility (below), so the condition is t'ω <= tω. A's optional part ended
    before (day 3 < 5): bound. B's has the same time (day 5): bound, where the strict reading
    would leave B alone. C's comes after (day 7): C stays alone, and stays so over the longer
    stream (timewise monotonicity)."""
    query = """SELECT ?c ?y WHERE { ?c :p ?x OPTIONAL { ?c :q ?y } FILTER(getDURATION() >= "PT0S"^^xsd:duration) }"""
    events = stream((5, ":A", ":p", 1), (3, ":A", ":q", "a"), (5, ":B", ":p", 1), (5, ":B", ":q", "b"),
                    (5, ":C", ":p", 1), (7, ":C", ":q", "c"))
    assert rows(run(spark, query, events), "c", "y") == [(3, 5, A, "a"), (5, 5, B, "b"), (5, 5, C, None)]
    assert rows(run(spark, query, [e for e in events if e.t < events[-1].t]), "c", "y") == [
        (3, 5, A, "a"), (5, 5, B, "b"), (5, 5, C, None)]


@pytest.mark.parametrize("pattern", [
    "?c :p ?x OPTIONAL { ?c :q ?y }",
    "?c :p ?x OPTIONAL { ?c :q ?y FILTER(?y != \"b\") }",
    "{ ?c :p ?x } UNION { ?c :q ?y }",
    "?c :p ?x . ?c :q ?y",
    "?c :p ?x BIND(:tag AS ?y)",
])
def test_downward_compatible_with_sparql_over_one_time_stamp(spark, pattern):
    """3.2: every SPARQL query is an EP-SPARQL query, and over a stream whose triples all have
    one time stamp t its solutions are SPARQL's, each over [t, t]. rdflib's SPARQL engine over
    the same triples as a graph is the reference."""
    events = stream((4, ":A", ":p", 1), (4, ":A", ":q", "a"), (4, ":B", ":p", 2), (4, ":B", ":q", "b"),
                    (4, ":B", ":q", "c"), (4, ":C", ":p", 3), (4, ":D", ":q", "d"))
    query = f"SELECT ?c ?x ?y WHERE {{ {pattern} FILTER(getDURATION() >= \"PT0S\"^^xsd:duration) }}"
    got = sorted((tuple(r[2:]) for r in rows(run(spark, query, events), "c", "x", "y")), key=str)
    assert all(r[:2] == (4, 4) for r in rows(run(spark, query, events)))
    graph = Graph()
    for line in {f"{e.s} {e.p} {e.o} ." for e in events}:
        graph.parse(data=line, format="nt")
    expected = sorted((tuple(None if row[v] is None else str(row[v]) for v in ("c", "x", "y"))
                       for row in graph.query(PREFIXES + f"SELECT ?c ?x ?y WHERE {{ {pattern} }}")), key=str)
    assert got == expected and got


def test_a_projection_is_a_bag_and_distinct_merges_equal_rows(spark):
    """3.2 ends with "processed like normal SPARQL": the set of solutions is projected to a bag.
    C1 has two prices on day 0 and one on day 1: two solutions over [0, 1] project to the same
    row, which comes twice; DISTINCT gives it once (a row and its interval identify an answer)."""
    query = "SELECT ?c WHERE { ?c hasStockPrice ?p1 } SEQ { ?c hasStockPrice ?p2 }"
    events = stream((0, ":C1", ":hasStockPrice", 10), (0, ":C1", ":hasStockPrice", 11), (1, ":C1", ":hasStockPrice", 20))
    assert rows(run(spark, query, events), "c") == [(0, 1, EX + "C1")] * 2
    assert rows(run(spark, query.replace("SELECT", "SELECT DISTINCT"), events), "c") == [(0, 1, EX + "C1")]
    # the same triple twice at one time is one triple occurrence: one solution, one row
    doubled = events + stream((1, ":C1", ":hasStockPrice", 20))
    assert rows(run(spark, query, doubled), "c") == [(0, 1, EX + "C1")] * 2


def test_durations_with_months_count_on_the_calendar_from_the_start(spark):
    """getDURATION() < "P1M": the match ends before its start plus one month, the day pinned to
    the month's last (XSD 1.1 appendix E). From 2011-01-31 (day -56), plus one month is
    2011-02-28: 27 days later is within it, 28 days is not. From 2011-03-28 (day 0) it is
    2011-04-28: 30 days is within. The bound a batch reads back is a month's longest, 31 days;
    a year's is 366."""
    query = """SELECT ?c WHERE { ?c :p ?x } SEQ { ?c :q ?y } FILTER(getDURATION() < "P1M"^^xsd:duration)"""
    events = stream((-56, ":A", ":p", 1), (-29, ":A", ":q", 1), (-56, ":B", ":p", 1), (-28, ":B", ":q", 1),
                    (0, ":C", ":p", 1), (30, ":C", ":q", 1))
    assert rows(run(spark, query, events), "c") == [(-56, -29, A), (0, 30, C)]
    assert compiler.compile(PREFIXES + query).bound_us == 31 * DAY
    assert compiler.compile(PREFIXES + query.replace("P1M", "P1Y2D")).bound_us == 368 * DAY


def test_a_left_join_filter_sees_the_combined_interval(spark):
    """The paper's σ in a left-join's filter is μ's interval in LeftJoin and in SeqRightJoin's
    second branch, but the combination's in SeqRightJoin's first (Filter(F, SeqJoin)); read
    literally, a μ' the filter rejects in the first branch would still keep μ from standing
    alone, and μ would vanish. The filter sees the combination's interval in both: A's
    downrating 5 days before its price fails `getDURATION() < P2D`, so the price stands alone;
    B's, a day before, joins."""
    query = """SELECT ?c ?a WHERE { ?c :down ?a FILTER(getDURATION() < "P2D"^^xsd:duration) } OPTIONALSEQ { ?c :price ?p }"""
    events = stream((0, ":A", ":down", ":Moody"), (5, ":A", ":price", 10), (4, ":B", ":down", ":Fitch"),
                    (5, ":B", ":price", 10))
    assert rows(run(spark, query, events), "c", "a") == [(4, 5, B, EX + "Fitch"), (5, 5, A, None)]
