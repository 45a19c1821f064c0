"""``Background.frame_for``: the background triples a pattern's constants select, looked up in
rdflib's indexes, reach Spark as a local relation (broadcast without a job of their own), and are
the triples rdflib's own lookup gives, in the default graph, a named graph or any named graph."""
from __future__ import annotations

from rdflib import RDF, Graph, Literal, URIRef

from rsp_jobs.language import ast
from rsp_jobs.spark import background as B
from rsp_jobs.terms import to_nt

EX = "http://ex.org/"


def _graph(kinds: int, label: str) -> Graph:
    graph = Graph()
    for i in range(kinds):
        graph.add((URIRef(f"{EX}s{i}"), RDF.type, URIRef(EX + ("Even" if i % 2 == 0 else "Odd"))))
        graph.add((URIRef(f"{EX}s{i}"), URIRef(EX + "label"), Literal(f"{label} {i}")))
    return graph


def _pattern(s, p, o) -> ast.TriplePattern:
    def term(t):
        return ast.Var(t[1:]) if t.startswith("?") else ast.IRI(t)
    return ast.TriplePattern(term(s), term(p), term(o))


def _rows(frame) -> set:
    return {tuple(r) for r in frame.collect()}


def test_a_pattern_reads_the_background_triples_its_constants_select(spark):
    default, named = _graph(40, "default"), _graph(10, "named")
    background = B.Background(default=[default], named={EX + "g": [named]})
    evens = _pattern("?x", str(RDF.type), EX + "Even")
    frame = background.frame_for(spark, evens, None)
    even = (None, RDF.type, URIRef(EX + "Even"))
    expected = {(None, to_nt(s), to_nt(p), to_nt(o)) for s, p, o in default.triples(even)}
    assert _rows(frame) == expected and len(expected) == 20
    assert frame._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LocalRelation"
    assert background.frame_for(spark, evens, None) is frame  # kept for the next evaluation
    in_named = {(f"<{EX}g>", to_nt(s), to_nt(p), to_nt(o)) for s, p, o in named.triples(even)}
    assert _rows(background.frame_for(spark, evens, ast.IRI(EX + "g"))) == in_named
    assert _rows(background.frame_for(spark, evens, ast.Var("g"))) == in_named
    assert _rows(background.frame_for(spark, evens, ast.IRI(EX + "none"))) == set()


def test_more_triples_than_a_local_relation_holds_are_read_from_the_whole_background(spark, monkeypatch):
    monkeypatch.setattr(B, "LOCAL_ROWS", 5)
    background = B.Background(default=[_graph(12, "default")])
    everything = background.frame_for(spark, _pattern("?x", "?p", "?o"), None)
    assert everything is background.frame(spark)
    assert background.frame_for(spark, _pattern(f"{EX}s3", "?p", "?o"), None).count() == 2


def test_the_terms_at_a_place_are_those_of_every_graph():
    """``Background.terms`` (with the slice's, what MIN and MAX rank, ``optimize.rank_extrema``):
    the subjects or objects of one predicate in the default and every named graph, as N-Triples,
    and nothing of another predicate."""
    default, named = _graph(3, "default"), _graph(2, "named")
    named.add((URIRef(f"{EX}s9"), URIRef(EX + "other"), Literal("elsewhere")))
    background = B.Background(default=[default], named={EX + "g": [named]})
    label = f"<{EX}label>"
    assert background.terms("o", label) == {'"default 0"', '"default 1"', '"default 2"', '"named 0"', '"named 1"'}
    assert background.terms("s", label) == {f"<{EX}s{i}>" for i in range(3)}
    assert background.terms("o", f"<{EX}none>") == set() and B.Background().terms("o", label) == set()
