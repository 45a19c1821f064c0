"""A REGISTER STREAM pattern's matches keep their interval in the derived stream: the lake row
of each derived triple holds its match's start beside its end (the frame's time), the stored
result says which triple came over which interval, and a downstream SEQ sees [start, end],
as it does within one evaluation, where the rule's output is part of the Q-closure (EP-SPARQL
3.2: closQ(S) holds ⟨tr, tα, tω⟩ for each match of a CONSTRUCT rule over [tα, tω])."""
from __future__ import annotations

from datetime import timedelta

from rsp_jobs import compiler
from rsp_jobs.engine import Interval, match
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.results import WindowResult
from rsp_jobs.store.results import output_stream_iri, result_batch
from rsp_jobs.times import iso_ms
from tests.conformance.epsparql.support import EPOCH, PREFIXES, STREAM, at, rows, stream
from tests.patterns.test_partial_matches import as_batch

UPSTREAM = PREFIXES + f"""REGISTER STREAM rose AS
CONSTRUCT {{ ?x :rose true }} FROM STREAM <{STREAM}>
WHERE {{ ?x :level 1 }} SEQ {{ ?x :level 2 }}"""
# readings: :s rises from day 0 to day 2; :a happens on day -1 (before the rise), :b on day 1 (inside it)
EVENTS = stream((-1, ":a", ":kind", ":A"), (0, ":s", ":level", 1), (1, ":b", ":kind", ":A"),
                (2, ":s", ":level", 2))


def test_a_downstream_seq_sees_the_derived_event_over_its_interval(spark, tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.write(as_batch(EVENTS), batch_id="readings")
    up = compiler.compile(UPSTREAM, "rose.rsp")
    found, _ = match(up, lake, interval=Interval(at(-2), at(3)))
    assert [(m.start_us, m.end_us) for m in found] == [(at(0), at(2))]
    results = WindowResult.of_matches(found)
    assert list(results[0].derived) == [(iso_ms(at(0)), found[0].triples[0])]
    batch, _ = result_batch(up, results)
    lake.write(batch, batch_id="rose")
    derived = lake.read(spark, [output_stream_iri(up)]).collect()
    naive = EPOCH.replace(tzinfo=None)  # Spark returns session-time (UTC) datetimes without zone
    assert [(r["start"], r["ts"]) for r in derived] == [(naive, naive + timedelta(days=2))]

    down = compiler.compile(PREFIXES + f"""SELECT ?who ?x FROM STREAM <{STREAM}> FROM STREAM <{output_stream_iri(up)}>
        WHERE {{ ?who :kind :A }} SEQ {{ ?x :rose true }}""", "after_rise.rsp")
    later, _ = match(down, lake, interval=Interval(at(-2), at(3)))
    # only :a ended before the rise began; :b falls inside [0, 2], and is no SEQ partner
    assert rows([m.to_json() for m in later], "who", "x") == [(-1, 2, "http://ex.org/a", "http://ex.org/s")]
