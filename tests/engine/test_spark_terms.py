"""The Spark term functions (``rsp_jobs.spark.terms``) read N-Triples text by position, not by
regular expression: checked against rdflib's own N-Triples parser on the terms where position
could go wrong (quotes, backslashes, ``^^<`` and ``@`` inside a lexical form, empty literals,
language tags with subtags, IRIs and blank nodes)."""
from __future__ import annotations

import pytest
from rdflib import Graph, Literal

from rsp_jobs import terms as T
from rsp_jobs.spark import terms as ST

TERMS = [
    '"plain"',
    '""',
    '"with \\"quotes\\" inside"',
    '"ends with a quote\\""',
    '"back\\\\slash and \\\\\\"both"',
    '"line\\nbreak\\ttab\\rreturn"',
    '"looks typed\\"^^<http://example.org/t>"',
    '"looks tagged\\"@en"',
    '"chat"@fr',
    '"colour"@en-GB',
    '"\\"quoted\\""@en-x-private',
    '"text"^^<http://www.w3.org/2001/XMLSchema#string>',
    '"42"^^<http://www.w3.org/2001/XMLSchema#integer>',
    '"-7"^^<http://www.w3.org/2001/XMLSchema#nonNegativeInteger>',
    '"0.0250"^^<http://www.w3.org/2001/XMLSchema#decimal>',
    '"1.5E-3"^^<http://www.w3.org/2001/XMLSchema#double>',
    '"INF"^^<http://www.w3.org/2001/XMLSchema#float>',
    '"twelve"^^<http://www.w3.org/2001/XMLSchema#integer>',
    '"2014-08-02T05:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"x"^^<http://example.org/my-type>',
    "<http://example.org/iri>",
    "_:b0",
]


def _parse(text: str):
    """``text`` as rdflib's N-Triples parser reads an object, lexical forms as written (as
    everywhere rsp_jobs is imported)."""
    graph = Graph().parse(data=f"<http://example.org/s> <http://example.org/p> {text} .", format="nt")
    return next(iter(graph.objects()))


def _reference(text: str) -> dict:
    term = _parse(text)
    if not isinstance(term, Literal):
        return {"lexical": None, "datatype": None, "language": None, "rank": None, "string": False}
    datatype = str(term.datatype) if term.datatype else (T.RDF_LANGSTRING if term.language else T.XSD_STRING)
    rank = T.NUMERIC_RANK.get(datatype)
    return {"lexical": str(term), "datatype": datatype, "language": term.language or "",
            "rank": rank, "string": datatype == T.XSD_STRING}


@pytest.fixture(scope="module")
def parsed(spark):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(t,) for t in TERMS], "t string")
    t = F.col("t")
    rows = frame.select("t", ST.lexical(t).alias("lexical"), ST.datatype(t).alias("datatype"),
                        ST.language(t).alias("language"), ST.numeric_rank(t).alias("rank"),
                        ST.numeric_value(t).alias("value"), ST.is_string_literal(t).alias("string")).collect()
    return {row["t"]: row.asDict() for row in rows}


@pytest.mark.parametrize("text", TERMS)
def test_a_term_reads_as_rdflib_reads_it(parsed, text):
    got, want = parsed[text], _reference(text)
    assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("text", [t for t in TERMS if t.startswith('"')])
def test_a_numeric_value_is_the_lexical_form_as_a_number(parsed, text):
    want = T.numeric_value(_parse(text))
    got = parsed[text]["value"]
    assert got == want or (want is None and got is None) or (want == float("inf") and got == float("inf"))


ORDERED = TERMS + [  # where a rank could part from Spark's own order of the key
    '"NaN"^^<http://www.w3.org/2001/XMLSchema#double>',
    '"-INF"^^<http://www.w3.org/2001/XMLSchema#double>',
    '"-0.0"^^<http://www.w3.org/2001/XMLSchema#double>',
    '"0.0"^^<http://www.w3.org/2001/XMLSchema#double>',
    '"1"^^<http://www.w3.org/2001/XMLSchema#int>',
    '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
    '"1.0"^^<http://www.w3.org/2001/XMLSchema#decimal>',
    '"2014-08-02T07:00:00+02:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"2014-10-26T02:30:00+01:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"2014-10-26T02:30:00+02:00"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"not a time"^^<http://www.w3.org/2001/XMLSchema#dateTime>',
    '"\u00e9t\u00e9"', '"\U0001f600"', '"zz"', '"a"@en', '"a b"',
    "<http://example.org/a>", "_:a",
]


def test_a_terms_rank_is_its_place_in_sparks_order_of_the_order_by_key(spark):
    """``ranks`` orders terms in Python by keys Spark computed: the ranks must be the places
    Spark's own ORDER BY of ``order_struct`` gives (MIN and MAX by rank, ``optimize.rank_extrema``,
    must equal MIN and MAX of the key), on numbers of one value in several forms, NaN and the
    infinities, signed zeros, times in several zones (one instant twice, and a DST change in
    the driver's zone), non-ASCII text, every kind of term."""
    from pyspark.sql import functions as F

    from rsp_jobs.spark.local import local_frame

    frame = local_frame(spark, [(t,) for t in ORDERED], "t string")
    by_spark = [row.t for row in frame.orderBy(ST.order_struct(F.col("t"))).collect()]
    ranked = sorted(ST.ranks(spark, ORDERED + ORDERED[:3]).collect(), key=lambda row: row[ST.TERM_RANK])
    assert [row[ST.TERM_RANK] for row in ranked] == list(range(1, len(set(ORDERED)) + 1))
    assert [row[ST.RANKED_TERM] for row in ranked] == by_spark
