"""Terms as written through the engine (RDF 1.1 §3.3; SPARQL 1.1 §17.3 against §17.4.1.7): a
triple pattern's constant matches the term written alike, not another lexical form of its
value; FILTER ``=`` compares values; results carry the data's lexical forms; the background's
terms and the query's constants are kept as written too. Checked against rdflib over the same
window, rdflib reading every term as written as the engine does."""
from __future__ import annotations

import pytest
from rdflib import Graph, URIRef

from rsp_jobs import compiler
from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, window_contents
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest.lake import Lake, load_files
from tests.engine.test_differential import assert_same
from tests.support.stream_files import write_stream_files

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
S = EX + "stream/readings"
PREFIXES = f"PREFIX ex: <{EX}>\nPREFIX xsd: <{XSD}>\n"
VALUES = [f'"1"^^<{XSD}integer>', f'"01"^^<{XSD}integer>', f'"001"^^<{XSD}integer>', f'"1.0"^^<{XSD}decimal>',
          f'"1.0E0"^^<{XSD}double>', f'"1.0E6"^^<{XSD}double>', f'"0"^^<{XSD}boolean>', '"a"@EN', '"a"@en']
CASES = {
    "constant_matches_its_own_form": 'SELECT ?s WHERE { ?s ex:v "001"^^xsd:integer }',
    "filter_compares_values": "SELECT ?s ?v WHERE { ?s ex:v ?v FILTER(?v = 1) }",
    "every_form_is_its_own_term": "SELECT ?v (COUNT(?s) AS ?n) WHERE { ?s ex:v ?v } GROUP BY ?v",
    "same_term_is_not_equal_value": "SELECT ?a ?b WHERE { ?x ex:v ?a . ?y ex:v ?b "
                                    "FILTER(?a = ?b && !sameTerm(?a, ?b)) }",
    "background_form_joins_the_same_form": "SELECT ?s ?label WHERE { ?s ex:v ?v . ?v2 ex:label ?label "
                                           "FILTER(sameTerm(?v, ?v2)) }",
}
BACKGROUND = Graph().parse(data=f'<{EX}x> <{EX}label> "01"^^<{XSD}integer> .', format="nt")


def _elements() -> list[Elem]:
    return [Elem(S, 100 * (i % 3), f"<{EX}s{i}>", f"<{EX}v>", term, pos=i) for i, term in enumerate(VALUES)]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("as-written")
    lake = Lake(tmp / "lake")
    load_files(lake, write_stream_files(_elements(), tmp / "files"))
    BACKGROUND.serialize(tmp / "labels.ttl", format="turtle")
    return lake, tmp / "labels.ttl"


@pytest.mark.parametrize("case", sorted(CASES))
def test_terms_match_as_written_and_compare_by_value_in_filters(case, lake, spark):
    lake, labels = lake
    head, _, where = CASES[case].partition(" WHERE ")
    rsp = (f"REGISTER QUERY q AS {PREFIXES}{head}\nFROM STREAM <{S}> [RANGE 1s STEP 1s]\n"
           f"FROM <{EX}labels.ttl>\nWHERE {where}")
    windows = [w.to_json() for w in evaluate(compiler.compile(rsp), lake, [str(labels)])]
    reference = {c: rdflib_answer(PREFIXES + CASES[case], content, [BACKGROUND])
                 for c, content in window_contents(_elements(), [WindowSpec(S, 1000, 1000)]).items()}
    assert_same(windows, reference, "SELECT", ordered=False)
    if case == "constant_matches_its_own_form":
        assert [b["s"]["value"] for b in windows[0]["bindings"]] == [f"{EX}s2"]
    if case == "every_form_is_its_own_term":
        assert {b["v"]["value"] for b in windows[0]["bindings"]} >= {"01", "001", "1.0E6", "0"}
