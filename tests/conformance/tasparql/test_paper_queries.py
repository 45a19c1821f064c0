"""TA-SPARQL as the paper prints it (Rodriguez, McGrath, Liu, Myers, SSN 2009, §6), over data
shaped like its Fig. 1 (``fig1.trig``, the plain-RDF translation of Definition 3), on SQLite and
PostgreSQL. Each query is copied as printed, line breaks included; each expected answer is
worked out by hand from ``fig1.trig`` and written beside it. The same questions, written as
Table 2's SPARQL translation, run by rdflib over ``rsp export``'s output, give the same answers.

Readings of the paper this relies on (docs/decisions/ta-sparql.md):
- "2009-01-01Z-06:00" is UTC-6 (Chicago), the 'Z' a misprint; an xsd:date in a selector is its
  whole day, and ``d1 .. d2`` runs from the start of d1 to the end of d2;
- example 6's second group filters on ``?x.t`` of the first: nested groups are joined and a
  FILTER sees the variables of the groups it is joined with;
- ``count(?y)`` counts solutions (pairs of a hot reading and a heavy rain), as SPARQL's COUNT does.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from rdflib import Dataset

from rsp_jobs.store.tardf import export_stream, import_stream
from rsp_jobs.store.tasparql import run_query, translate

from tests.conformance.tasparql.conftest import STREAMS
CHICAGO = timezone(timedelta(hours=-6))

# §6, "What was the total amount of rain fell on Chicago in January 2009?"
Q1 = '''SELECT sum(?rain)
WHERE {
<urn:OHARE> <urn:hasRainSensor>
?x["2009-01-01Z-06:00"^^xsd:date ..

"2009-01-31Z-06:00"^^xsd:date] .
?x <urn:hasReading>

?rain .
}'''
# January 1st 00:00 to January 31st 24:00 in UTC-6: 12 (Jan 1 00:00), 20 (Jan 15), 3 (Jan 31
# 23:59); not 7 (Dec 31 23:30) nor 40 (Feb 1 00:00). An integer sum stays an integer.
A1 = [{"sum_rain": ("35", "integer")}]

# §3 question 2 is not printed in §6; written the way §6 writes question 1
Q2 = '''SELECT avg(?temp)
WHERE {
<urn:OHARE> <urn:hasTemperatureSensor> ?x["2008-12-01Z-06:00"^^xsd:date .. "2008-12-31Z-06:00"^^xsd:date] .
?x <urn:hasReading> ?temp .
}'''
# -4, -10 and 1 (Dec 1 06:00, Dec 15, Dec 31 20:00); not 5 (Nov 30 23:00) nor -2 (Feb 2)
A2 = [{"avg_temp": (-13 / 3, "decimal")}]

# §6, "What was the temperature on Chicago at sunrise of July 20th 2008?"
Q3 = '''SELECT ?temperature
WHERE {
<urn:OHARE> <urn:hasTemperatureSensor>

?x["2008-07-20T05:34:00Z-06:00"^^xsd:dateTime] .
?x <urn:hasReading> ?temperature .
}'''
A3 = [{"temperature": ("21", "integer")}]  # the frame at 05:34 local, not 05:33 or 11:34

# §6, "When was the temperature at Champaign, IL over 80 degrees?"
Q4 = '''SELECT ?x.t
WHERE {
<urn:Champaign> <urn:hasSensor> ?x[*] .
?x <urn:hasTemperatureReading> ?y .

FILTER (?y>=80)
}'''
A4 = [{"x.t": ("2008-06-15T18:00:00Z", "dateTime")}, {"x.t": ("2008-07-16T18:00:00Z", "dateTime")}]  # 86, 91

# §6, "What is the current temperature at O'Hare?"
Q5 = '''SELECT ?temperature
WHERE {
<urn:OHARE> <urn:hasTemperatureSensor> ?x[LAST] .
?x <urn:hasReading> ?temperature .
}'''
A5 = [{"temperature": ("-2", "integer")}]  # Feb 2 2009, the last frame

# §6, "How many heavy rains occurred within a week of a heat wave?"
Q6 = '''SELECT count(?y)
WHERE {
{
<urn:Champaign> <urn:hasSensor> ?x[*] .
?x <urn:hasTemperatureReading> ?temp .

FILTER(?temp > 35)
}
{ <urn:Champaign> <urn:hasSensor> ?y[*] .

?y <urn:hasRainReading> ?rain .

FILTER (?rain > 25 && abs(?x.t - ?y.t) < 7*86400000)
}
}'''
# rains over 25: Jun 20 (30), Jul 1 (26), Sep 1 (40); readings over 35: Jun 15, Jun 16, Jul 16
# (and Dec 1's 30 is not). Within 7 days: (Jun 15, Jun 20) and (Jun 16, Jun 20); Jul 1 is 15
# days from Jun 16 and Jul 16.
A6 = [{"count_y": ("2", "integer")}]

PAPER = {"q1": (Q1, A1), "q2": (Q2, A2), "q3": (Q3, A3), "q4": (Q4, A4), "q5": (Q5, A5), "q6": (Q6, A6)}


def answer(result) -> list[dict]:
    out = []
    for row in result.rows:
        item = {}
        for name, term in row.items():
            kind = term.get("datatype", "").rpartition("#")[2]
            value = float(term["value"]) if kind == "decimal" else term["value"]
            item[name] = (value, kind)
        out.append(item)
    return out


@pytest.mark.parametrize("name", sorted(PAPER))
def test_the_papers_query_as_printed_gives_the_answer_worked_out_by_hand(fig1, name):
    text, expected = PAPER[name]
    got = answer(run_query(fig1, text, f"{name}.rq"))
    if name == "q2":
        assert got[0]["avg_temp"][1] == "decimal" and got[0]["avg_temp"][0] == pytest.approx(-13 / 3)
    else:
        assert got == expected


def test_a_stream_property_holds_for_every_frame_and_a_constant_stream_takes_a_selector(fig1):
    """Restriction 1: ``_:n dsv:hasTimestamp dsv:Nil ; <urn:unit> "mm"`` is seen from each frame."""
    every = run_query(fig1, 'SELECT ?r ?u WHERE { <urn:ohare-rain>[*] <urn:unit> ?u . '
                            '<urn:ohare-rain>[*] <urn:hasReading> ?r } ORDER BY ?r')
    assert [row["u"]["value"] for row in every.rows] == ["mm"] * 5
    last = run_query(fig1, "SELECT ?r ?u WHERE { <urn:ohare-rain>[LAST] <urn:hasReading> ?r ; <urn:unit> ?u }")
    assert [(row["r"]["value"], row["u"]["value"]) for row in last.rows] == [("40", "mm")]


# --------------------------------------------------------------------------- Table 2 in SPARQL

PREFIX = "PREFIX dsv: <http://purl.org/dsv#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
SPARQL = {  # Table 2's translation of each query, for the export's plain RDF
    "q1": '''SELECT (SUM(?rain) AS ?sum_rain) WHERE { <urn:OHARE> <urn:hasRainSensor> ?s .
        ?x dsv:belongsTo ?s ; dsv:hasTimestamp ?t ; <urn:hasReading> ?rain .
        FILTER(?t >= "2009-01-01T06:00:00Z"^^xsd:dateTime && ?t < "2009-02-01T06:00:00Z"^^xsd:dateTime) }''',
    "q2": '''SELECT (AVG(?temp) AS ?avg_temp) WHERE { <urn:OHARE> <urn:hasTemperatureSensor> ?s .
        ?x dsv:belongsTo ?s ; dsv:hasTimestamp ?t ; <urn:hasReading> ?temp .
        FILTER(?t >= "2008-12-01T06:00:00Z"^^xsd:dateTime && ?t < "2009-01-01T06:00:00Z"^^xsd:dateTime) }''',
    "q3": '''SELECT ?temperature WHERE { <urn:OHARE> <urn:hasTemperatureSensor> ?s .
        ?x dsv:belongsTo ?s ; dsv:hasTimestamp ?t ; <urn:hasReading> ?temperature .
        FILTER(?t = "2008-07-20T11:34:00Z"^^xsd:dateTime) }''',
    "q4": '''SELECT ?t WHERE { <urn:Champaign> <urn:hasSensor> ?s .
        ?x dsv:belongsTo ?s ; dsv:hasTimestamp ?t ; <urn:hasTemperatureReading> ?y . FILTER(?y >= 80) }
        ORDER BY ?t''',
    "q5": '''SELECT ?temperature WHERE { <urn:OHARE> <urn:hasTemperatureSensor> ?s .
        ?F <urn:hasReading> ?temperature . ?F dsv:belongsTo ?s . ?F dsv:hasTimestamp ?FT .
        OPTIONAL { ?F2 dsv:belongsTo ?s . ?F2 dsv:hasTimestamp ?F2T . FILTER(?FT < ?F2T) }
        FILTER(!BOUND(?F2T)) }''',
    "q6": '''SELECT ?xt ?yt WHERE {
        <urn:Champaign> <urn:hasSensor> ?s1 . ?x dsv:belongsTo ?s1 ; dsv:hasTimestamp ?xt ;
            <urn:hasTemperatureReading> ?temp . FILTER(?temp > 35)
        <urn:Champaign> <urn:hasSensor> ?s2 . ?y dsv:belongsTo ?s2 ; dsv:hasTimestamp ?yt ;
            <urn:hasRainReading> ?rain . FILTER(?rain > 25) }''',
}


def rdflib_answer(dataset: Dataset, name: str) -> list:
    rows = list(dataset.query(PREFIX + SPARQL[name]))
    if name == "q6":  # Table 2: ?x.t is ?xT, in ms; the week's test on the solutions
        week = timedelta(days=7)
        return [len([r for r in rows if abs(r.xt.toPython() - r.yt.toPython()) < week])]
    return [float(r[0].toPython()) if isinstance(r[0].toPython(), (int, float)) or hasattr(r[0].toPython(), "as_tuple")
            else r[0].toPython() for r in rows]


@pytest.mark.parametrize("name", sorted(PAPER))
def test_table_2s_sparql_translation_over_the_export_agrees(fig1, exported, name):
    ours = run_query(fig1, PAPER[name][0])
    values = []
    for row in ours.rows:
        (term,) = row.values()
        kind = term.get("datatype", "").rpartition("#")[2]
        values.append(datetime.fromisoformat(term["value"]) if kind == "dateTime" else float(term["value"]))
    theirs = rdflib_answer(exported, name)
    assert values == pytest.approx(theirs) if name != "q4" else values == theirs
    assert values  # every question has an answer in fig1.trig


def test_the_sparql_form_and_the_selector_form_give_the_same_answers(fig1):
    """Table 2's translation runs in TA-SPARQL too: dsv:belongsTo and dsv:hasTimestamp are triples,
    and LAST's OPTIONAL / !BOUND form (q5) is the last frame."""
    for name in ("q1", "q2", "q3", "q4", "q5"):
        sparql = run_query(fig1, SPARQL[name].replace("(SUM(?rain) AS ?sum_rain)", "sum(?rain)")
                           .replace("(AVG(?temp) AS ?avg_temp)", "avg(?temp)"))
        selector = run_query(fig1, PAPER[name][0])
        assert [list(r.values()) for r in sparql.rows] == [list(r.values()) for r in selector.rows], name


# ------------------------------------------------------------------------ TA-RDF round trips

def stored(engine) -> list:
    from sqlalchemy import select

    from rsp_jobs.store.models import Frame, FrameTriple, InvariantTriple, Stream
    with engine.connect() as conn:
        frames = conn.execute(select(Stream.iri, Frame.ts, Frame.frame_iri, FrameTriple.s, FrameTriple.p, FrameTriple.o)
                              .join(Frame, Frame.stream_id == Stream.id)
                              .join(FrameTriple, FrameTriple.frame_id == Frame.id)).all()
        invariant = conn.execute(select(InvariantTriple.s, InvariantTriple.p, InvariantTriple.o)).all()
    return [sorted(map(tuple, frames)), sorted(map(tuple, invariant))]


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_export_then_import_gives_the_same_frames(fig1, tmp_path, request, fmt):
    """Theorem 2: the translation is reversible; for both forms an export writes."""
    from tests.store.conftest import empty_store_url
    from rsp_jobs.store import db
    with empty_store_url(request.node.callspec.params["store_url"], tmp_path, request, "again") as url:
        db.upgrade(url)
        again = db.engine(url)
        for i, stream in enumerate(STREAMS):
            path = tmp_path / f"s{i}.{'trig' if fmt == 'trig' else 'nq'}"
            export_stream(fig1, stream, path, fmt)
            import_stream(again, path)
        assert stored(again) == stored(fig1)


def test_hostile_text_in_the_new_syntax_reaches_sql_only_as_parameters():
    hostile = "x:');\\u0020DROP\\u0020TABLE\\u0020frames;--"
    statement, params = translate(f'SELECT ?v WHERE {{ <{hostile}>[LAST] <urn:p> ?v . '
                                  f'<urn:s> <urn:q> ?x[*] FILTER(contains(?v, "\\u0027 OR 1=1")) }}')
    sql = str(statement.compile())
    assert "DROP TABLE" not in sql and "OR 1=1" not in sql
    assert any("x:'); DROP TABLE frames;--" in str(v) for v in params.values())
