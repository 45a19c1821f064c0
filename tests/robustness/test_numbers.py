"""No wrong number without an error (issue 15): SPARQL's value semantics for numbers, the same
on Spark (C-SPARQL windows), SQLite and PostgreSQL (TA-SPARQL).

- A SUM or AVG over a term that is not a number (an ill-typed ``"abc"^^xsd:integer``, a string)
  is a type error (SPARQL 1.1 §18.5.1.3, op:numeric-add): unbound, never a silent sum of the rest.
- Every ordering and = comparison with NaN is false, != is true (XPath op:numeric-equal etc.).
- ``NaN``, ``INF``, ``-INF`` keep their XSD lexical forms in results.
- U+0000 in a term is refused alike on every backend.
"""
from __future__ import annotations

import pytest

from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.ingest.rdf_stream import NUL_TERM, read_stream_file
from rsp_jobs.store.tardf import import_stream
from rsp_jobs.store.tasparql import run_query

STREAM = "http://ex.org/streams/n"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"


def stream_file(path, values: dict[str, list[str]]):
    """One frame per second; ``values``: subject -> the objects of its <v> triples, in N-Triples."""
    lines = []
    for second, (subject, objects) in enumerate(values.items()):
        frame = f"<http://ex.org/f/{subject}>"
        lines.append(f'{frame} {AT} "2014-08-01T07:50:0{second}Z"^^<{XSD}dateTime> .')
        lines += [f"<http://ex.org/{subject}> <http://ex.org/v> {o} {frame} ." for o in objects]
    path.write_text("\n".join(lines) + "\n")
    return path


VALUES = {
    "ok": ['"1"^^<%sinteger>' % XSD, '"2"^^<%sinteger>' % XSD],
    "illtyped": ['"1"^^<%sinteger>' % XSD, '"abc"^^<%sinteger>' % XSD],
    "string": ['"1"^^<%sinteger>' % XSD, '"two"'],
    "nan": ['"NaN"^^<%sdouble>' % XSD, '"1"^^<%sinteger>' % XSD],
    "inf": ['"INF"^^<%sdouble>' % XSD, '"1"^^<%sinteger>' % XSD],
}
# by hand: the sum per subject; None is unbound (a type error)
SUMS_TA = {"ok": "3", "illtyped": None, "string": None, "inf": "INF", "nan": None}


def tasparql_sums(store) -> dict:
    result = run_query(store, "SELECT ?s (SUM(?v) AS ?sum) (COUNT(?v) AS ?n) WHERE { "
                              "GRAPH ?f[*] { ?s <http://ex.org/v> ?v } } GROUP BY ?s")
    return {row["s"]["value"].rsplit("/", 1)[1]: (row.get("sum", {}).get("value"), row["n"]["value"])
            for row in result.rows}


def test_tasparql_sums_are_errors_over_non_numbers_on_every_backend(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", VALUES), STREAM)
    assert tasparql_sums(store) == {s: (SUMS_TA[s], "2") for s in VALUES}


def test_tasparql_comparisons_with_nan_are_false_on_every_backend(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", VALUES), STREAM)
    for condition in ("?v > 0", "?v < 0", "?v = ?v", "?v >= -1e308"):
        result = run_query(store, f"SELECT ?v WHERE {{ GRAPH ?f[*] {{ <http://ex.org/nan> <http://ex.org/v> ?v }} "
                                  f"FILTER({condition}) }}")
        assert [row["v"]["value"] for row in result.rows] == (["1"] if condition != "?v < 0" else []), condition


def test_a_nul_in_a_tasparql_term_is_refused_alike():
    with pytest.raises(QuerySyntaxError, match=r"1:48: U\+0000 \(NUL\) cannot be in a term"):
        run_query(None, 'SELECT ?v WHERE { ?x[*] <urn:p> ?v FILTER(?v = "a\\u0000b") }')


@pytest.mark.parametrize("escaped", ["\\u0000", "\\U00000000"])
def test_a_nul_in_a_stream_is_quarantined_before_any_backend_sees_it(escaped, tmp_path):
    """(The reader skips the per-term test where the text holds no NUL, raw or escaped: both
    escapes must still be found.)"""
    batch = read_stream_file(stream_file(tmp_path / "n.nq", {"a": [f'"x{escaped}y"', '"fine"']}), STREAM)
    assert [e.o for e in batch.elements] == ['"fine"']
    (rejection,) = batch.rejections
    assert (rejection.line, rejection.reason, rejection.triples) == (2, NUL_TERM, 1)
    assert "\\u0000" in rejection.text and "\x00" not in rejection.text


def test_spark_sums_and_nan_comparisons_follow_sparql(tmp_path, spark):
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", VALUES))])
    head = f"REGISTER QUERY q AS\nSELECT ?s (SUM(?v) AS ?sum) (COUNT(?v) AS ?n)\nFROM STREAM <{STREAM}> "
    query = compiler.compile(head + "[RANGE 10s STEP 10s]\nWHERE { ?s <http://ex.org/v> ?v } GROUP BY ?s")
    (window,) = [w.to_json() for w in evaluate(query, lake, []) if w.bindings]
    sums = {b["s"]["value"].rsplit("/", 1)[1]: b.get("sum", {}).get("value") for b in window["bindings"]}
    # the lake keeps NaN as a number: Spark's sum with a NaN is NaN, as SPARQL's is
    assert sums == {**SUMS_TA, "nan": "NaN"}

    compare = compiler.compile(f"REGISTER QUERY c AS\nSELECT ?v ?gt ?eq ?ne\nFROM STREAM <{STREAM}> [RANGE 10s STEP 10s]\n"
                            "WHERE { <http://ex.org/nan> <http://ex.org/v> ?v "
                            "BIND(?v > 0 AS ?gt) BIND(?v = ?v AS ?eq) BIND(?v != 1 AS ?ne) }")
    (window,) = [w.to_json() for w in evaluate(compare, lake, []) if w.bindings]
    rows = {b["v"]["value"]: (b["gt"]["value"], b["eq"]["value"], b["ne"]["value"]) for b in window["bindings"]}
    assert rows == {"NaN": ("false", "false", "true"), "1": ("true", "true", "false")}
