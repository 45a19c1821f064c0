"""Entailment regimes: stream triples entailed per frame in Spark by joining with the background's
closure (computed once with owlrl) answer as rdflib does over the window's RDFS closure."""
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
    elements = []
    for ts in draw(st.lists(st.integers(0, 6000), min_size=1, max_size=8, unique=True)):
        for _ in range(draw(st.integers(1, 3))):
            p = draw(st.sampled_from([f"<{EX}p{i}>" for i in range(3)] + [f"<{EX}other>"]))
            o = draw(st.sampled_from(SUBJECTS + ['"7"^^<http://www.w3.org/2001/XMLSchema#integer>']))
            elements.append(Elem(f"{EX}stream/one", ts, draw(st.sampled_from(SUBJECTS)), p, o))
    return list(dict.fromkeys(elements))


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(elements=streams())
def test_rdfs_entailment_matches_rdflib_over_the_closed_window(case, elements, schema_file, tmp_path_factory, spark):
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
    ours = run_engine(tmp_path_factory.mktemp(case), rsp, elements, [str(schema_file)], entailment="rdfs")
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
