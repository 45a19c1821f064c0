"""Entailment regimes. C-SPARQL window queries: each window's graph (its stream triples with
the background, whose closure owlrl computes once) is entailed whole in Spark, and answers as
rdflib does over owlrl's closure of that window (tutorial 004, "C-SPARQL queries and reasoning").
DOTR rules reason per time instant instead (one frame with the background)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rdflib import Graph

from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, window_contents
from rsp_jobs.errors import InputError
from rsp_jobs.reasoning.entailment import closed
from rsp_jobs.terms import nt_to_rdflib
from tests.engine.test_differential import EX, assert_same, run_engine
from tests.support.stream_files import in_delivery_order, layouts

SCHEMA = f"""
@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:p0 rdfs:subPropertyOf ex:q . ex:p1 rdfs:subPropertyOf ex:p0 .
ex:p0 rdfs:domain ex:C0 . ex:p2 rdfs:range ex:C1 .
ex:C0 rdfs:subClassOf ex:Top . ex:C1 rdfs:subClassOf ex:C0 .
ex:a0 ex:label "zero" .
"""
CASES = {
    "super_property": "SELECT ?x ?y WHERE { ?x ex:q ?y }",
    "domain_and_subclass": "SELECT ?x WHERE { ?x a ex:Top }",
    "range_type": "SELECT ?y WHERE { ?x ex:p2 ?y . ?y a ex:C1 }",
    "with_background": "SELECT ?x ?l WHERE { ?x ex:p0 ?y . ?x ex:label ?l }",
}
SUBJECTS = [f"<{EX}a{i}>" for i in range(4)]


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "schema.ttl"
    path.write_text(SCHEMA)
    return path


@st.composite
def streams(draw):
    """Graphs at uneven times, several sharing one (as in tests.engine.test_differential)."""
    elements, ts = [], draw(st.integers(0, 1000))
    for number, gap in enumerate(draw(st.lists(st.sampled_from([0, 0, 3, 700, 1000, 1900]), min_size=1, max_size=8))):
        ts += gap
        for _ in range(draw(st.integers(1, 3))):
            p = draw(st.sampled_from([f"<{EX}p{i}>" for i in range(3)] + [f"<{EX}other>"]))
            o = draw(st.sampled_from(SUBJECTS + ['"7"^^<http://www.w3.org/2001/XMLSchema#integer>']))
            elements.append(Elem(f"{EX}stream/one", ts, draw(st.sampled_from(SUBJECTS)), p, o, graph=f"{EX}stream/one/g{number}"))
    return in_delivery_order(elements)


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(elements=streams(), layout=layouts)
def test_rdfs_entailment_matches_rdflib_over_the_closed_window(case, elements, layout, schema_file, tmp_path_factory,
                                                               spark):
    query = f"PREFIX ex: <{EX}>\n{CASES[case]}"
    head, body = query.split("WHERE", 1)
    rsp = f"REGISTER QUERY q AS {head}FROM STREAM <{EX}stream/one> [RANGE 2s STEP 1s]\nFROM <{EX}schema.ttl>\nWHERE{body}"
    background = Graph().parse(schema_file)
    reference = {}
    for close, content in window_contents(elements, [WindowSpec(f"{EX}stream/one", 2000, 1000)]).items():
        window = Graph()
        for triple in background:
            window.add(triple)
        for _, e in content:
            window.add((nt_to_rdflib(e.s), nt_to_rdflib(e.p), nt_to_rdflib(e.o)))
        reference[close] = rdflib_answer(query, [], [closed(window, "rdfs")])
    ours = run_engine(tmp_path_factory.mktemp(case), rsp, elements, [str(schema_file)], entailment="rdfs",
                      layout={f"{EX}stream/one": layout})
    assert_same(ours, reference, "SELECT", ordered=False)



TUTORIAL = f"""
@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:posts rdfs:subPropertyOf :observes .
"""


def test_the_csparql_tutorial_subproperty_example_returns_sensor_and_social_observations(tmp_path, spark):
    """C-SPARQL's tutorial: ``:posts rdfs:subPropertyOf :observes``; asking for ``:observes``
    finds the sensor's observation and, under RDFS, the social post too."""
    schema = tmp_path / "tutorial.ttl"
    schema.write_text(TUTORIAL)
    stream = f"{EX}stream/one"
    elements = [Elem(stream, 1000, f"<{EX}sensor1>", f"<{EX}observes>", f"<{EX}temperature>"),
                Elem(stream, 2000, f"<{EX}alice>", f"<{EX}posts>", f"<{EX}traffic_jam>")]
    text = (f"REGISTER QUERY q AS PREFIX : <{EX}>\nSELECT ?who ?what\nFROM STREAM <{stream}> [RANGE 10s STEP 10s]\n"
            f"FROM <{EX}tutorial.ttl>\nWHERE {{ ?who :observes ?what }}")
    found = {}
    for regime in ("simple", "rdfs"):
        (window,) = run_engine(tmp_path / regime, text, elements, [str(schema)], entailment=regime)
        found[regime] = {b["who"]["value"].rsplit("/", 1)[-1] for b in window["bindings"]}
    assert found == {"simple": {"sensor1"}, "rdfs": {"sensor1", "alice"}}


def test_an_unknown_regime_is_refused_by_name(tmp_path, spark):
    with pytest.raises(InputError, match="unknown entailment regime 'owl-full'"):
        run_engine(tmp_path, f"REGISTER QUERY q AS SELECT * FROM STREAM <{EX}s> [RANGE 1s STEP 1s] WHERE {{ ?s ?p ?o }}",
                   [Elem(f"{EX}s", 0, f"<{EX}a>", f"<{EX}b>", f"<{EX}c>")], entailment="owl-full")


RDFS_PLUS = f"""
@prefix ex: <{EX}> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:hasPart owl:inverseOf ex:partOf . ex:partOf rdfs:subPropertyOf ex:within .
ex:near a owl:SymmetricProperty .
"""


@pytest.mark.parametrize("pattern", ["?x ex:within ?y", "?x ex:near ?y", "?x ex:partOf ?y"])
def test_rdfs_plus_adds_inverse_and_symmetric_properties_as_owlrl_does(pattern, tmp_path, spark):
    schema = tmp_path / "plus.ttl"
    schema.write_text(RDFS_PLUS)
    stream = f"{EX}stream/one"
    elements = [Elem(stream, 1000, f"<{EX}car>", f"<{EX}hasPart>", f"<{EX}wheel>"),
                Elem(stream, 1500, f"<{EX}a0>", f"<{EX}near>", f"<{EX}a1>"),
                Elem(stream, 2500, f"<{EX}a2>", f"<{EX}partOf>", f"<{EX}a3>")]
    query = f"PREFIX ex: <{EX}>\nSELECT ?x ?y WHERE {{ {pattern} }}"
    rsp = (f"REGISTER QUERY q AS PREFIX ex: <{EX}>\nSELECT ?x ?y\nFROM STREAM <{stream}> [RANGE 2s STEP 1s]\n"
           f"FROM <{EX}plus.ttl>\nWHERE {{ {pattern} }}")
    reference = {}
    for close, content in window_contents(elements, [WindowSpec(stream, 2000, 1000)]).items():
        window = Graph().parse(schema)
        for _, e in content:
            window.add((nt_to_rdflib(e.s), nt_to_rdflib(e.p), nt_to_rdflib(e.o)))
        reference[close] = rdflib_answer(query, [], [closed(window, "rdfs++")])
    ours = run_engine(tmp_path / "engine", rsp, elements, [str(schema)], entailment="rdfs++")
    assert any(reference.values())
    assert_same(ours, reference, "SELECT", ordered=False)


TRANSITIVE = f"""
@prefix ex: <{EX}> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:partOf a owl:TransitiveProperty . ex:hasPart owl:inverseOf ex:partOf .
ex:directlyIn rdfs:subPropertyOf ex:partOf . ex:partOf rdfs:range ex:Place .
ex:room1 ex:partOf ex:floor1 . ex:floor1 ex:partOf ex:building .
ex:alias owl:sameAs ex:room9 . ex:room9 ex:partOf ex:floor2 .
ex:s1 owl:sameAs ex:sensorOne . ex:reads rdfs:domain ex:Sensor . ex:Sensor rdfs:subClassOf ex:Device .
"""
STREAM = f"{EX}stream/one"


def _e(ts, s, p, o):
    return Elem(STREAM, ts, *(x if x.startswith('"') else f"<{EX}{x}>" for x in (s, p, o)))


def window_reference(query, elements, background, window_spec):
    """rdflib's answer per window over owlrl's closure of the window's triples with the
    background: C-SPARQL's regime, the window's graph reasoned over whole."""
    reference = {}
    for close, content in window_contents(elements, [window_spec]).items():
        window = Graph()
        for triple in background:
            window.add(triple)
        for _, e in content:
            window.add((nt_to_rdflib(e.s), nt_to_rdflib(e.p), nt_to_rdflib(e.o)))
        reference[close] = rdflib_answer(query, [], [closed(window, "rdfs++")])
    return reference


def check_rdfs_plus(tmp_path, pattern, elements, window="[RANGE 2s STEP 1s]"):
    schema = tmp_path / "transitive.ttl"
    schema.write_text(TRANSITIVE)
    prefixes = f"PREFIX ex: <{EX}>\nPREFIX owl: <http://www.w3.org/2002/07/owl#>\n"
    query = f"{prefixes}SELECT * WHERE {{ {pattern} }}"
    rsp = (f"REGISTER QUERY q AS {prefixes}SELECT *\nFROM STREAM <{STREAM}> {window}\n"
           f"FROM <{EX}transitive.ttl>\nWHERE {{ {pattern} }}")
    range_ms, step_ms = (int(x) * 1000 for x in window.strip("[]").replace("RANGE", "").replace("STEP", "")
                         .replace("s", "").split())
    reference = window_reference(query, elements, Graph().parse(schema), WindowSpec(STREAM, range_ms, step_ms))
    ours = run_engine(tmp_path / "engine", rsp, elements, [str(schema)], entailment="rdfs++")
    assert any(reference.values())
    assert_same(ours, reference, "SELECT", ordered=False)
    return ours


TRANSITIVE_STREAM = [
    _e(1000, "desk", "partOf", "room1"),  # the chain continues in the background
    _e(1000, "shelf", "directlyIn", "desk"),  # a sub-property's triple joins the chain
    _e(1000, "wing", "hasPart", "lab"), _e(1000, "wing", "partOf", "building"),  # via the inverse
    _e(1000, "desk2", "partOf", "alias"),  # via the background's identity alias = room9
    _e(2500, "x", "partOf", "y"), _e(2500, "y", "partOf", "z"), _e(2500, "z", "partOf", "x"),  # a cycle
    _e(2500, "floor1", "directlyIn", "campus"),  # background chain, then a stream triple
]


def test_rdfs_plus_closes_transitive_properties_through_frame_and_background_as_owlrl_does(tmp_path, spark):
    """One engine run, the patterns as UNION branches with their own variables (a Spark run
    costs seconds, a pattern more costs nothing)."""
    windows = check_rdfs_plus(tmp_path, "{ ?x ex:partOf ?y } UNION { ?a ex:hasPart ?b } UNION { ?t a ex:Place }",
                              TRANSITIVE_STREAM)
    first = {(b["x"]["value"][len(EX):], b["y"]["value"][len(EX):]) for b in windows[0]["bindings"] if "x" in b}
    assert {("desk", "building"), ("shelf", "building"), ("lab", "building"), ("desk2", "floor2")} <= first


def test_a_transitive_chain_runs_from_the_stream_through_the_background():
    """The chain desk → room1 (stream) → floor1 → building (background) is derived, and the
    background-first chain room1 → floor1 (background) → campus (stream) too."""
    from rsp_jobs.reasoning.entailment import frame_closure

    partOf = f"<{EX}partOf>"
    background = [(f"<{EX}room1>", partOf, f"<{EX}floor1>"), (f"<{EX}floor1>", partOf, f"<{EX}building>"),
                  (f"<{EX}room1>", partOf, f"<{EX}building>")]
    added = frame_closure([(f"<{EX}desk>", partOf, f"<{EX}room1>"), (f"<{EX}floor1>", partOf, f"<{EX}campus>")],
                          {partOf}, background, [])
    assert {(s[len(EX) + 1:-1], o[len(EX) + 1:-1]) for s, _, o in added} == {
        ("desk", "floor1"), ("desk", "building"), ("desk", "campus"), ("room1", "campus")}


SAME_STREAM = [
    _e(1000, "s1", "reads", '"5"'),  # the background's s1 = sensorOne copies subject ...
    _e(1000, "obs1", "madeBy", "s1"),  # ... and object
    _e(2000, "s2", "sameAs", "s3"), _e(2000, "s2", "reads", '"7"'), _e(2000, "s3", "locatedIn", "roomA"),
    _e(2000, "s4", "sameAs", "s1"), _e(2000, "s4", "reads", '"8"'),  # joins the background's class
    _e(3500, "desk", "partOf", "k"), _e(3500, "k", "sameAs", "room1"),  # identity inside a chain
]
SAME_STREAM = [Elem(e.stream, e.ts_ms, e.s, e.p.replace(f"{EX}sameAs", "http://www.w3.org/2002/07/owl#sameAs"), e.o)
               for e in SAME_STREAM]


def test_rdfs_plus_copies_triples_over_owl_same_as_as_owlrl_does(tmp_path, spark):
    windows = check_rdfs_plus(tmp_path, "{ ?x ex:reads ?v } UNION { ?t a ex:Device } UNION { ?o ex:madeBy ?m } "
                              "UNION { ?a owl:sameAs ?b FILTER (?a != ?b) } UNION { ?l ex:locatedIn ?r } "
                              "UNION { ex:desk ex:partOf ?d }", SAME_STREAM)
    readers = {(b["x"]["value"][len(EX):], b["v"]["value"]) for w in windows for b in w["bindings"] if "x" in b}
    assert {("sensorOne", "5"), ("s3", "7"), ("s1", "8"), ("sensorOne", "8")} <= readers


def test_a_chain_whose_links_arrive_in_different_frames_of_a_window_is_closed(tmp_path, spark):
    """C-SPARQL's regime is over the window's graph: a transitive chain or an identity whose
    links come in two frames of one window entails what owlrl entails over the window."""
    elements = [_e(1000, "box", "partOf", "shelf"), _e(1500, "shelf", "partOf", "cabinet"),
                _e(1000, "k1", "sameAs", "k2"), _e(1500, "k1", "reads", '"3"')]
    elements = [Elem(e.stream, e.ts_ms, e.s, e.p.replace(f"{EX}sameAs", "http://www.w3.org/2002/07/owl#sameAs"), e.o)
                for e in elements]
    pattern = "{ ?x ex:partOf ex:cabinet } UNION { ?x ex:reads ?v }"
    (window,) = check_rdfs_plus(tmp_path, pattern, elements, window="[RANGE 2s STEP 2s]")
    found = {b["x"]["value"].rsplit("/", 1)[-1] for b in window["bindings"]}
    assert found == {"shelf", "box", "k1", "k2"}


def test_a_dotr_rule_reasons_per_instant_so_a_chain_split_over_two_instants_entails_nothing(tmp_path, spark):
    """DOTR (Margara et al. 2018, §3): the ontological part is evaluated at each time instant,
    decoupled from the temporal part. The same split chain as above: at 1.5 s the instant holds
    shelf partOf cabinet only, so box is never found partOf cabinet, while a chain within one
    instant is closed."""
    from rsp_jobs.engine import match

    schema = tmp_path / "transitive.ttl"
    schema.write_text(TRANSITIVE)
    elements = [_e(1000, "box", "partOf", "shelf"), _e(1500, "shelf", "partOf", "cabinet"),
                _e(1700, "cup", "partOf", "tray"), _e(1700, "tray", "partOf", "cabinet")]
    rule = (f"PREFIX ex: <{EX}>\nFROM STREAM <{STREAM}>\nFROM <{EX}transitive.ttl>\nENTAILMENT rdfs++\n"
            "define In { ?x ex:inCabinet ex:cabinet }\n"
            "from S = [SELECT ?x WHERE { ?x ex:partOf ex:cabinet }]\nwith ?x = S.?x\n")
    path = tmp_path / "in_cabinet.dotr"
    path.write_text(rule)
    lake = run_engine(tmp_path / "lake", f"REGISTER QUERY q AS SELECT * FROM STREAM <{STREAM}> [RANGE 1s STEP 1s] "
                      "WHERE { ?s ?p ?o }", elements, lake_only=True)
    from rsp_jobs.compiler import compile_file

    matches, _ = match(compile_file(path), lake, [str(schema)])
    found = sorted({line.split(" ")[0].rsplit("/", 1)[-1].rstrip(">") for m in matches for line in m.triples})
    assert found == ["cup", "shelf", "tray"]
