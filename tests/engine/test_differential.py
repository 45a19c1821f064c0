"""Differential tests: on generated streams, every window's result from the Spark engine equals
rdflib's SPARQL result over that window's triples plus the background graph.

Each case is a query body; hypothesis draws the stream, how it is delivered and the window. The
streams are shaped like real ones: several graphs at one timestamp, unevenly spaced times, a
stream split over files (a timestamp may straddle two), in TriG, N-Quads frames and C-SPARQL's
timestamped N-Quads (``tests/support/stream_files.py``). The engine reads those files as users'
files are read; rdflib sees the same body as plain SPARQL over the window contents computed by
``rsp_jobs/bench/reference.py`` from the element list the files were written from.
"""
from __future__ import annotations

import itertools
import os
import sys
from datetime import datetime

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rdflib import RDF, Graph, Literal, URIRef

from rsp_jobs import compiler
from rsp_jobs.physical import planner
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.algebra.optimize import QUERY_RULES
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.terms import nt_to_json, to_nt
from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, same_bindings, window_contents
from tests.support.stream_files import in_delivery_order, layouts, write_stream_files

EX = "http://ex.org/"
S1, S2 = EX + "stream/one", EX + "stream/two"
PREFIXES = (f"PREFIX ex: <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
            "PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n")

SUBJECTS = [f"<{EX}a{i}>" for i in range(5)]
RDF_TYPE = f"<{RDF.type}>"
PREDICATES = [f"<{EX}p{i}>" for i in range(3)] + [f"<{EX}val>", RDF_TYPE]
CLASSES = [f"<{EX}{c}>" for c in ("Even", "Odd", "Thing")]
LITERALS = [to_nt(Literal(i)) for i in (0, 1, 3, 7, 12, 20)] + [
    to_nt(Literal("2.5", datatype=URIRef("http://www.w3.org/2001/XMLSchema#decimal"))),
    to_nt(Literal("x1")), to_nt(Literal("y2")), to_nt(Literal("xen", lang="en"))]

# A small background graph: labels, kinds and classes for some of the subjects (the stream
# types subjects too, with the same classes and another).
BACKGROUND = Graph()
for i in (0, 1, 3):
    BACKGROUND.add((URIRef(f"{EX}a{i}"), URIRef(EX + "label"), Literal(f"thing {i}")))
    BACKGROUND.add((URIRef(f"{EX}a{i}"), URIRef(EX + "kind"), URIRef(EX + ("Even" if i % 2 == 0 else "Odd"))))
    BACKGROUND.add((URIRef(f"{EX}a{i}"), RDF.type, URIRef(EX + ("Even" if i % 2 == 0 else "Odd"))))

# Gaps between consecutive graphs (ms): 0 puts a graph at the time of the one before, as sensors
# on one clock do; the others are uneven, some shorter than a STEP, some longer than a RANGE.
GAPS = [0, 0, 0, 1, 7, 250, 999, 1000, 1500, 3100]


@st.composite
def streams(draw, names=(S1,)):
    """Graphs at unevenly spaced times, about a third of them sharing the time of the graph
    before, each with 1-4 triples from small term pools so that joins find partners (a triple
    may repeat within a time, as real feeds repeat readings)."""
    elements = []
    for stream in names:
        t = draw(st.integers(0, 3000))
        for number, gap in enumerate(draw(st.lists(st.sampled_from(GAPS), min_size=1, max_size=12))):
            t += gap
            graph = f"{stream}/g{number}"
            for _ in range(draw(st.integers(1, 4))):
                s = draw(st.sampled_from(SUBJECTS))
                p = draw(st.sampled_from(PREDICATES))
                o = draw(st.sampled_from(LITERALS[:7] if p == f"<{EX}val>" else CLASSES if p == RDF_TYPE
                                         else SUBJECTS + LITERALS))
                elements.append(Elem(stream, t, s, p, o, graph=graph))
    return in_delivery_order(elements)


@st.composite
def time_windows(draw):
    range_ms = draw(st.sampled_from([1000, 2000, 3000, 5000]))
    step_ms = draw(st.sampled_from([s for s in (500, 1000, range_ms) if s <= range_ms]))
    return range_ms, step_ms


CASES = {
    "join": ("SELECT ?x ?y ?z", "{ ?x ex:p0 ?y . ?y ex:p1 ?z }", ""),
    "filter": ("SELECT ?x ?v", "{ ?x ex:val ?v FILTER(?v > 2 && ?v <= 12 || ?v = 0) }", ""),
    "optional": ("SELECT ?x ?y ?v", "{ ?x ex:p0 ?y OPTIONAL { ?y ex:val ?v } }", ""),
    "optional_filter": ("SELECT ?x ?v", "{ ?x ex:p1 ?y OPTIONAL { ?x ex:val ?v FILTER(?v > 3) } }", ""),
    "union": ("SELECT ?x ?o", "{ { ?x ex:p0 ?o } UNION { ?x ex:p2 ?o } }", ""),
    "bind": ("SELECT ?x ?w", "{ ?x ex:val ?v BIND(?v * 2 + 1 AS ?w) }", ""),
    # BINDs in a row, one step where none reads another's (``evaluate._binds_together``), two where one does
    "binds": ("SELECT ?x ?w ?d ?u ?e", "{ ?x ex:val ?v BIND(?v * 2 AS ?w) BIND(?v - 1 AS ?d) BIND(?w + ?d AS ?u) "
                                        "BIND(?x AS ?e) }", ""),
    "aggregates": ("SELECT ?x (COUNT(?v) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?min) (MAX(?v) AS ?max)",
                   "{ ?x ex:val ?v }", "GROUP BY ?x HAVING (COUNT(?v) > 1)"),
    # a COUNT's number in arithmetic and comparisons (Solutions.numbers), per group and in the
    # implicit group of a window without solutions (count 0)
    "count_number": ("SELECT (COUNT(?v) AS ?n) (COUNT(?v) * 2 - 1 AS ?odd)", "{ ?x ex:val ?v FILTER(?v > 8) }",
                     "HAVING (COUNT(?v) < 3 && COUNT(?v) * 3 != 3)"),
    "count_all": ("SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?s) AS ?subjects)", "{ ?s ?p ?o }", ""),
    "distinct": ("SELECT DISTINCT ?x ?p", "{ ?x ?p ?o }", ""),
    "distinct_unbound": ("SELECT DISTINCT ?x ?label", "{ ?x ex:p0 ?o OPTIONAL { ?x ex:label ?label } }", ""),
    "order_limit": ("SELECT ?x ?v", "{ ?x ex:val ?v }", "ORDER BY DESC(?v) ?x LIMIT 3"),
    # MIN and MAX of terms the background alone holds: ranked among the background's too
    "background_extrema": ("SELECT (MAX(?label) AS ?max) (MIN(?label) AS ?min) (COUNT(?y) AS ?n)",
                           "{ ?x ?p ?y . ?y ex:label ?label }", ""),
    "background_join": ("SELECT ?x ?label ?kind", "{ ?x ex:p0 ?y . ?y ex:label ?label ; ex:kind ?kind }", ""),
    # a class the slice's rdf:type triples may not name: then only the background matches it
    "background_classes": ("SELECT ?x ?y ?c", "{ ?x a ex:Even . ?x ex:p0 ?y . ?y a ex:Odd OPTIONAL { ?y a ?c } }", ""),
    "background_optional": ("SELECT ?x ?label", "{ ?x ex:p2 ?o OPTIONAL { ?x ex:label ?label } }", ""),
    "functions": ("SELECT ?x ?o", '{ ?x ?p ?o FILTER(isLiteral(?o) && (regex(str(?o), "^x") || lang(?o) = "en" '
                  '|| datatype(?o) = xsd:decimal)) }', ""),
    # = and != with an IRI are term identity, IN over IRIs is one test, < with an IRI an error
    "iri_compare": ("SELECT ?x ?o ?z", "{ ?x ?p ?o OPTIONAL { ?o ex:p1 ?z } FILTER(?o = ex:a1 || ?o != ex:a2 && "
                    "?o IN (ex:a3, ex:a0) || ?z IN (ex:a1, ex:a4) || ?o < ex:a3 || ?z NOT IN (ex:a0)) }", ""),
    "minus": ("SELECT ?x ?y", "{ ?x ex:p0 ?y MINUS { ?x ex:p2 ?z } }", ""),
    "timestamp": ("SELECT ?x ?v ?t", "{ ?x ex:val ?v BIND(f:timestamp(?x, ex:val, ?v) AS ?t) }", ""),
    "construct": ("CONSTRUCT { ?y ex:inverse ?x . ?x ex:seen true }", "{ ?x ex:p0 ?y }", ""),
    "ask": ("ASK", "{ ?x ex:p1 ?y . ?y ex:val ?v }", ""),
    # rdflib evaluates a subquery with the bindings of what precedes it in the group (SPARQL 1.1
    # evaluates it on its own), so the reference's subqueries come first
    "subquery": ("SELECT ?x ?y ?n", "{ { SELECT ?y (COUNT(*) AS ?n) WHERE { ?y ?p ?o } GROUP BY ?y } ?x ex:p0 ?y }", ""),
    "subquery_limit": ("SELECT ?x ?v", "{ { SELECT ?x ?v WHERE { ?x ex:val ?v } ORDER BY DESC(?v) ?x LIMIT 2 } "
                       "?x ?p ?o }", ""),
    # inline data in the group, one row leaving ?k unbound, and after the WHERE clause
    "values": ("SELECT ?x ?v ?k", '{ VALUES (?x ?k) { (ex:a0 "zero") (ex:a1 UNDEF) (ex:a4 "four") } ?x ex:val ?v }',
               "VALUES ?v { 1 3 7 12 }"),
    # VALUES after an OPTIONAL over the background: a row binds ?label where the OPTIONAL did not
    "background_values": ("SELECT ?x ?label", '{ ?x ex:p0 ?o OPTIONAL { ?x ex:label ?label } '
                          'VALUES ?label { "thing 0" "thing 3" } }', ""),
    # EXISTS with a filter on an outer variable, NOT EXISTS on two, over the background alone, in a BIND
    "exists": ("SELECT ?x ?y ?v", "{ ?x ex:p0 ?y . ?x ex:val ?v FILTER EXISTS { ?y ex:val ?w FILTER(?w > ?v) } }", ""),
    "not_exists": ("SELECT ?x ?o", "{ ?x ?p ?o FILTER NOT EXISTS { ?o ex:p1 ?x } }", ""),
    "background_not_exists": ("SELECT ?x ?y", "{ ?x ex:p0 ?y FILTER NOT EXISTS { ?y ex:label ?l } }", ""),
    "exists_bind": ("SELECT ?x ?e", "{ ?x ex:val ?v BIND(EXISTS { ?x ex:p2 ?z } AS ?e) }", ""),
    "describe": ("DESCRIBE ?x ex:a1", "{ ?x ex:p0 ?y . ?y ex:val ?v FILTER(?v > 2) }", ""),
}


def run_engine(tmp_path, query_text, elements, background_files=(), entailment="simple", layout=None,
               lake_only=False, skip=None):
    """Write the elements as stream files (``layout``: stream IRI -> Layout; default one N-Quads
    file each), read them into a fresh lake as ``rsp evaluate`` does, and evaluate the query
    (``skip``: the optimizer rules to leave out; by default all or none, in turn)."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, write_stream_files(elements, tmp_path / "files", layout))
    if lake_only:
        return lake
    skip = next(_OPTIMIZER) if skip is None else skip
    return [w.to_json() for w in evaluate(compiler.compile(query_text, skip=skip), lake, list(background_files),
                                          entailment=entailment)]


# Every other evaluation leaves the optimizer's rules out: the answers must not depend on them
# (rsp_jobs.algebra.optimize), and checking that costs no extra Spark job.
_OPTIMIZER = itertools.cycle([(), tuple(r.__name__ for r in QUERY_RULES)])


def close_ms(window) -> int:
    moment = datetime.fromisoformat(window["window_close"].replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def assert_same(engine_windows, reference, form, ordered):
    assert sorted(reference) == [close_ms(w) for w in engine_windows]
    for window in engine_windows:
        expected = reference[close_ms(window)]
        if form == "ASK":
            assert window["boolean"] == expected
        elif form in ("CONSTRUCT", "DESCRIBE"):
            assert set(window["triples"]) == expected
        else:
            ours = [{k: v for k, v in b.items()} for b in window["bindings"]]
            theirs = [{k: nt_to_json(to_nt(v)) for k, v in b.items()} for b in expected]
            if ordered:
                assert len(ours) == len(theirs) and all(same_bindings([a], [b]) for a, b in zip(ours, theirs)), \
                    (window["window_close"], ours, theirs)
            assert same_bindings(ours, theirs), (window["window_close"], ours, theirs)


def check_case(tmp_path, case, elements, window_clause, specs, background_file=None, layout=None):
    head, body, modifiers = CASES[case]
    form = head.split()[0].upper()
    dataset = "\n".join(f"FROM {'NAMED ' if s.graph else ''}STREAM <{s.stream}> {window_clause(s)}" for s in specs)
    if background_file:
        dataset += f"\nFROM <{EX}background.ttl>"
    rsp = f"REGISTER QUERY q AS {PREFIXES}{head}\n{dataset}\nWHERE {body} {modifiers}"
    sparql = f"{PREFIXES}{head}\nWHERE {body} {modifiers}"
    contents = window_contents(elements, specs)
    reference = {c: rdflib_answer(sparql, content, [BACKGROUND] if background_file else [])
                 for c, content in contents.items()}
    engine = run_engine(tmp_path, rsp, elements, [str(background_file)] if background_file else [], layout=layout)
    assert_same(engine, reference, form, ordered="ORDER BY" in modifiers)


@pytest.fixture(scope="module")
def background_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("background") / "background.ttl"
    BACKGROUND.serialize(path, format="turtle")
    return path


# Every example is a Spark job: no shrinking (minutes per failure); the failing example is printed.
# RSP_STRESS=n: n random examples a case instead of the suite's 3 fixed ones (a longer search)
SETTINGS = settings(max_examples=int(os.environ.get("RSP_STRESS", 3)), deadline=None, derandomize=not os.environ.get("RSP_STRESS"), phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("case", sorted(CASES))
@SETTINGS
@given(elements=streams(), window=time_windows(), layout=layouts)
def test_sliding_and_tumbling_windows_match_rdflib(case, elements, window, layout, tmp_path_factory,
                                                   background_file, spark):
    range_ms, step_ms = window
    spec = WindowSpec(S1, range_ms, step_ms)
    check_case(tmp_path_factory.mktemp("case"), case, elements,
               lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]", [spec],
               background_file if case.startswith("background") or case == "distinct_unbound" else None,
               {S1: layout})


@pytest.mark.parametrize("case", ["join", "aggregates", "optional", "order_limit"])
@SETTINGS
@given(elements=streams(), n=st.integers(1, 6), layout=layouts)
def test_count_windows_match_rdflib(case, elements, n, layout, tmp_path_factory, spark):
    """[TRIPLES n]: the last n triples, those of one time in the order the stream delivered
    them (C-SPARQL §3.1), whichever file brought them."""
    check_case(tmp_path_factory.mktemp("case"), case, elements, lambda s: f"[TRIPLES {n}]",
               [WindowSpec(S1, triples=n)], layout={S1: layout})


@pytest.mark.parametrize("case", ["join", "union", "aggregates", "timestamp"])
@SETTINGS
@given(elements=streams(names=(S1, S2)), window=time_windows(), other_range=st.sampled_from([1, 2]),
       layout=st.tuples(layouts, layouts))
def test_two_streams_match_rdflib(case, elements, window, other_range, layout, tmp_path_factory, spark):
    range_ms, step_ms = window
    specs = [WindowSpec(S1, range_ms, step_ms), WindowSpec(S2, range_ms + (other_range - 1) * step_ms, step_ms)]
    check_case(tmp_path_factory.mktemp("case"), case, elements,
               lambda s: f"[RANGE {s.range_ms}ms STEP {s.step_ms}ms]", specs, layout=dict(zip((S1, S2), layout)))


@SETTINGS
@given(elements=streams(names=(S1, S2)), window=time_windows(), layout=st.tuples(layouts, layouts))
def test_named_stream_graph_matches_rdflib(elements, window, layout, tmp_path_factory, spark):
    """FROM NAMED STREAM puts a stream's window in a graph that GRAPH <iri> { } reads."""
    range_ms, step_ms = window
    CASES["named_graph"] = ("SELECT ?x ?y ?z", f"{{ ?x ex:p0 ?y GRAPH <{S2}> {{ ?y ex:p1 ?z }} }}", "")
    specs = [WindowSpec(S1, range_ms, step_ms), WindowSpec(S2, range_ms, step_ms, graph=S2)]
    check_case(tmp_path_factory.mktemp("case"), "named_graph", elements,
               lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]", specs, layout=dict(zip((S1, S2), layout)))



@pytest.mark.parametrize("repeats_by", ["pyarrow", "hashes", "spark"])
@pytest.mark.parametrize("case", ["join", "aggregates"])
def test_a_triple_at_several_times_is_one_solution_in_each_window_that_holds_them(case, repeats_by, tmp_path, spark,
                                                                                  monkeypatch):
    """Solutions go to sliding windows (``optimize.window_solutions``); a window holds a triple
    that arrives at 0, 600 and 1300 ms once, so it has each solution once (the slice repeats a
    triple, told by ``LakeStatistics.repeats`` or, from ``planner.FACTS_ON_DRIVER_BELOW_ROWS``
    rows on, by the files' triple hashes, or by ``windows.with_repeats`` where a file has none,
    as files written before the hashes answer), and a join partner 1900 ms later shares only
    some windows."""
    if repeats_by != "pyarrow":
        monkeypatch.setattr(planner, "FACTS_ON_DRIVER_BELOW_ROWS", 0)
    if repeats_by == "spark":
        monkeypatch.setattr(LakeStatistics, "repeats_by_hash", lambda self, *slice: None)
    a0, a1, a2, p0, p1, val = (f"<{EX}{n}>" for n in ("a0", "a1", "a2", "p0", "p1", "val"))
    elements = in_delivery_order([
        Elem(S1, 0, a0, p0, a1), Elem(S1, 600, a0, p0, a1), Elem(S1, 1300, a0, p0, a1), Elem(S1, 1900, a1, p1, a2),
        Elem(S1, 600, a0, val, LITERALS[1]), Elem(S1, 1300, a0, val, LITERALS[1]), Elem(S1, 1300, a0, val, LITERALS[2])])
    monkeypatch.setattr(sys.modules[__name__], "_OPTIMIZER", itertools.repeat(()))  # every rule on
    check_case(tmp_path, case, elements, lambda s: "[RANGE 2000ms STEP 500ms]", [WindowSpec(S1, 2000, 500)])


def test_a_count_is_an_integer_in_arithmetic_having_and_the_empty_group(tmp_path, spark):
    """A COUNT's number is read from its column, not its term (``Solutions.numbers``), and stays
    an xsd:integer: SPARQL 1.1 17.3 maps ``*`` and ``-`` over two xsd:integer to XPath's
    op:numeric-multiply/subtract, whose result is xsd:integer (rdflib 7.6 answers xsd:decimal for
    ``*``, and the differential cases compare numbers by value only, so they cannot show it).
    The window without solutions has the implicit group, with COUNT 0 (18.5.1.2)."""
    a0, a1, val = (f"<{EX}{n}>" for n in ("a0", "a1", "val"))
    elements = in_delivery_order([Elem(S1, 200, a0, val, LITERALS[4]), Elem(S1, 700, a1, val, LITERALS[5]),
                                  Elem(S1, 1200, a0, val, LITERALS[1]), Elem(S1, 2500, a0, val, LITERALS[4])])
    head, body, modifiers = CASES["count_number"]
    query = f"REGISTER QUERY q AS {PREFIXES}{head}\nFROM STREAM <{S1}> [RANGE 1s STEP 1s]\nWHERE {body} {modifiers}"
    integer = "http://www.w3.org/2001/XMLSchema#integer"
    answers = {datetime.fromisoformat(w["window_close"]).second: [{k: (v["value"], v["datatype"]) for k, v in b.items()} for b in w["bindings"]]
               for w in run_engine(tmp_path, query, elements)}
    # 12 and 20 in the first second pass the FILTER (two: kept), 1 in the next does not (none:
    # COUNT 0, kept), 12 in the third is one (1 * 3 = 3: dropped)
    assert answers == {1: [{"n": ("2", integer), "odd": ("3", integer)}],
                       2: [{"n": ("0", integer), "odd": ("-1", integer)}], 3: []}


@pytest.mark.parametrize("wide", [False, True], ids=["range", "twice_range"])
def test_a_band_joins_bucket_meets_every_time_within_range(wide, spark):
    """``Spans.near``: the buckets a row is copied to hold every time within RANGE of its own
    (else a pair of solutions a window holds would never meet), at and around every bucket
    edge; two of them for wide buckets, three otherwise. Checked against floor division."""
    from pyspark.sql import functions as F
    from rsp_jobs.algebra.schedule import schedule
    from rsp_jobs.spark import windows

    query = compiler.compile(f"REGISTER QUERY q AS {PREFIXES}SELECT ?x FROM STREAM <{S1}> [RANGE 1s STEP 250ms] "
                             "WHERE { ?x ex:p0 ?y . ?y ex:p1 ?z }")
    spans = windows.spans(query, schedule(query, 0), None, None)
    r = spans.range_us
    width = r * (2 if wide else 1)
    times = sorted({t for edge in range(-3 * width, 4 * width, width) for t in (edge - 1, edge, edge + 1)}
                   | {edge + r // 2 for edge in range(-3 * width, 4 * width, width)} | {r - 1, r, r + 1})
    rows = spark.createDataFrame([(t,) for t in times], "lo long").select(
        "lo", F.array(*spans.near("lo", wide)).alias("near")).collect()
    for row in rows:
        needed = set(range((row.lo - r + 1) // width, (row.lo + r - 1) // width + 1))  # of (lo - r, lo + r)
        assert needed <= set(row.near), (row.lo, row.near)
        assert len(row.near) == (2 if wide else 3)


@pytest.mark.parametrize("window, t0, bounds", [("[RANGE 1s STEP 250ms]", 0, (None, None)),
                                                ("[RANGE 1s STEP 250ms]", 130_000, (1_250_000, 3_000_000)),
                                                ("[RANGE 1s STEP 1s]", 0, (2_000_000, None)),
                                                ("[RANGE 500ms STEP 500ms]", 70_000, (None, 4_000_000))],
                         ids=["sliding", "sliding_t0_bounded", "tumbling_after", "tumbling_t0_until"])
def test_the_windows_with_data_from_the_drivers_times_are_sparks(window, t0, bounds, spark):
    """``Spans.active_of`` (the closes of the slice's times, on the driver, from
    ``LakeStatistics.times``) gives the windows and opens ``Spans.active`` computes in Spark: uneven times, several at a
    time, at and beside every close and window edge, the first windows before t0 + RANGE, and
    the run's interval cutting the closes."""
    from rsp_jobs.algebra.schedule import schedule
    from rsp_jobs.spark import windows

    query = compiler.compile(f"REGISTER QUERY q AS {PREFIXES}SELECT ?x FROM STREAM <{S1}> {window} "
                             "WHERE { ?x ex:p0 ?y . ?y ex:p1 ?z }")
    spans = windows.spans(query, schedule(query, t0), *bounds)
    dense = sorted({t for edge in range(0, 5_000_000, 250_000) for t in (edge - 1, edge, edge + 1, edge + 77_000)
                    if t >= 0} | {4_999_999, 12})
    sparse = [12, 999_999, 2_000_000, 2_000_001, 3_270_000, 4_499_999]  # windows between them hold nothing
    for times in (dense, sparse):
        tagged = spark.createDataFrame([(t,) for t in times + times[:3]], "ts long")  # a time more than once
        in_spark = sorted(tuple(r) for r in spans.active(tagged).collect())
        assert in_spark  # the case holds windows
        assert sorted(tuple(r) for r in spans.active_of(spark, times).collect()) == in_spark
    assert spans.active_of(spark, []).count() == 0


@pytest.mark.parametrize("skip", [(), ("rank_extrema",)], ids=["by_rank", "by_key"])
def test_min_and_max_are_the_least_and_greatest_by_order_by(skip, tmp_path, spark):
    """MIN and MAX (SPARQL 18.5.1.6-7) order a group's values as ORDER BY does (15.1): blank
    nodes, then IRIs, then literals; the engine's decision where 15.1 leaves literals unordered
    (docs/semantics/windows.md, "Aggregates"): numbers by value above literals that are no number, and
    numbers of equal value by lexical form, then by the whole term, so the group's answer is one
    term whatever the order its solutions arrive in (``"1"^^xsd:int`` before ``"1"^^xsd:integer``
    before ``"1.0"^^xsd:decimal``). rdflib's MAX of an IRI is a plain literal, so this is
    written out. The same by the terms' ranks (``optimize.rank_extrema``) as by their keys."""
    xsd = "http://www.w3.org/2001/XMLSchema#"
    a0, a1, val = (f"<{EX}{n}>" for n in ("a0", "a1", "val"))
    values = {a0: [f"<{EX}z>", '"abc"', f'"7"^^<{xsd}integer>', f'"12.5"^^<{xsd}decimal>',
                   f'"2014-08-02T05:00:00Z"^^<{xsd}dateTime>'],
              a1: [f'"1"^^<{xsd}integer>', f'"1.0"^^<{xsd}decimal>', f'"1"^^<{xsd}int>']}
    elements = in_delivery_order([Elem(S1, 100 + 10 * i, s, val, o) for s, objects in values.items()
                                  for i, o in enumerate(objects)])
    query = (f"REGISTER QUERY q AS {PREFIXES}SELECT ?x (MIN(?v) AS ?min) (MAX(?v) AS ?max)\n"
             f"FROM STREAM <{S1}> [RANGE 1s STEP 1s]\nWHERE {{ ?x ex:val ?v }} GROUP BY ?x")
    [window] = [w for w in run_engine(tmp_path, query, elements, skip=skip) if w["bindings"]]
    answers = {b["x"]["value"]: tuple((b[n]["value"], b[n].get("datatype")) for n in ("min", "max"))
               for b in window["bindings"]}
    assert answers == {f"{EX}a0": ((f"{EX}z", None), ("12.5", xsd + "decimal")),
                       f"{EX}a1": (("1", xsd + "int"), ("1.0", xsd + "decimal"))}


@pytest.mark.parametrize("skip", [(), tuple(r.__name__ for r in QUERY_RULES)], ids=["solutions", "triples"])
@pytest.mark.parametrize("case", ["background_classes", "background_join"])
def test_a_pattern_the_slice_cannot_match_reads_the_background_alone(case, skip, tmp_path, background_file, spark,
                                                                    monkeypatch):
    """The slice's triples name ex:p0 and rdf:type with ex:Odd only
    (``LakeStatistics.vocabulary``), so ``?x a ex:Even``, ``ex:label`` and ``ex:kind`` match the background alone, ``?y a ex:Odd``
    and ``?y a ?c`` both (ex:a2 is Odd in the stream only): the answers are rdflib's over each
    window with the background, whether solutions or triples go to windows."""
    a0, a1, a2, a3, p0 = (f"<{EX}{n}>" for n in ("a0", "a1", "a2", "a3", "p0"))
    elements = in_delivery_order([
        Elem(S1, 0, a0, p0, a1), Elem(S1, 0, a1, RDF_TYPE, f"<{EX}Odd>"), Elem(S1, 700, a0, p0, a3),
        Elem(S1, 1500, a2, RDF_TYPE, f"<{EX}Odd>"), Elem(S1, 1500, a0, p0, a2), Elem(S1, 2600, a1, p0, a0)])
    monkeypatch.setattr(sys.modules[__name__], "_OPTIMIZER", itertools.repeat(skip))
    check_case(tmp_path, case, elements, lambda s: "[RANGE 2000ms STEP 500ms]", [WindowSpec(S1, 2000, 500)],
               background_file)


AGGREGATE_CLAUSES = {
    # C-SPARQL §3.3 (engine) and the same extension in SPARQL 1.1 (rdflib): the group's
    # aggregate joined to every solution of the group, by a subquery that comes first
    "count_per_subject": ("SELECT ?x ?v ?n WHERE { ?x ex:val ?v } AGGREGATE { (?n, COUNT, {?x}) }",
                          "SELECT ?x ?v ?n WHERE { { SELECT ?x (COUNT(*) AS ?n) WHERE { ?x ex:val ?v } GROUP BY ?x } "
                          "?x ex:val ?v }"),
    "independent_with_filter": (
        "SELECT DISTINCT ?x ?n ?total WHERE { ?x ex:val ?v } AGGREGATE { (?n, COUNT(DISTINCT ?v), ?x) }\n"
        "AGGREGATE { (?total, SUM(?v), {?x}) FILTER(?total > 5) }",
        "SELECT DISTINCT ?x ?n ?total WHERE { { SELECT ?x (COUNT(DISTINCT ?v) AS ?n) (SUM(?v) AS ?total) "
        "WHERE { ?x ex:val ?v } GROUP BY ?x } ?x ex:val ?v FILTER(?total > 5) }"),
    "two_group_variables": (  # (rdflib's MAX of IRIs is a plain literal, so numbers here)
        "SELECT ?x ?p ?o ?m WHERE { ?x ?p ?o FILTER(isNumeric(?o)) } AGGREGATE { (?m, MIN(?o), {?x, ?p}) }",
        "SELECT ?x ?p ?o ?m WHERE { { SELECT ?x ?p (MIN(?o) AS ?m) WHERE { ?x ?p ?o FILTER(isNumeric(?o)) } "
        "GROUP BY ?x ?p } ?x ?p ?o FILTER(isNumeric(?o)) }"),
}


@pytest.mark.parametrize("case", sorted(AGGREGATE_CLAUSES))
@SETTINGS
@given(elements=streams(), window=time_windows(), layout=layouts)
def test_the_aggregate_clause_extends_each_solution_as_rdflib_does_with_a_grouped_subquery(
        case, elements, window, layout, tmp_path_factory, spark):
    ours, theirs = AGGREGATE_CLAUSES[case]
    range_ms, step_ms = window
    head, body = ours.split(" WHERE ", 1)
    rsp = f"REGISTER QUERY q AS {PREFIXES}{head}\nFROM STREAM <{S1}> [RANGE {range_ms}ms STEP {step_ms}ms]\nWHERE {body}"
    contents = window_contents(elements, [WindowSpec(S1, range_ms, step_ms)])
    reference = {c: rdflib_answer(PREFIXES + theirs, content) for c, content in contents.items()}
    engine = run_engine(tmp_path_factory.mktemp("aggregate"), rsp, elements, layout={S1: layout})
    assert_same(engine, reference, "SELECT", ordered=False)
