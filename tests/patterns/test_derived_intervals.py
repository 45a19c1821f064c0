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


def test_the_interval_survives_rsp_export_and_import_for_a_chained_query(spark, tmp_path):
    """The issue: the match over [day 0, day 2] exported as TriG and read back by a chained
    query became [day 2, day 2]. Stored, exported (TriG and N-Quads), imported into another
    store and exported from there, then loaded as the chained query's stream file, the derived
    event keeps its interval: a one-event pattern over it lasts two days (getDURATION) and
    the SEQ still sees it begin on day 0."""
    from rsp_jobs.ingest.rdf_stream import read_stream_file
    from rsp_jobs.store import db
    from rsp_jobs.store.frames import load_batch
    from rsp_jobs.store.tardf import export_stream, import_stream

    lake = Lake(tmp_path / "lake")
    lake.write(as_batch(EVENTS), batch_id="readings")
    up = compiler.compile(UPSTREAM, "rose.rsp")
    found, _ = match(up, lake, interval=Interval(at(-2), at(3)))
    batch, _ = result_batch(up, WindowResult.of_matches(found))
    derived = output_stream_iri(up)
    stores = {}
    for name in ("evaluated", "imported"):
        url = f"sqlite:///{tmp_path / name}.sqlite"
        db.upgrade(url)
        stores[name] = db.engine(url)
    load_batch(stores["evaluated"], batch)
    long = compiler.compile(PREFIXES + f"""SELECT ?x FROM STREAM <{derived}>
        WHERE {{ ?x :rose true }} FILTER (getDURATION() >= "P2D"^^xsd:duration)""", "long_rise.rsp")
    after = compiler.compile(PREFIXES + f"""SELECT ?who ?x FROM STREAM <{STREAM}> FROM STREAM <{derived}>
        WHERE {{ ?who :kind :A }} SEQ {{ ?x :rose true }}""", "after_rise.rsp")
    for fmt, suffix in (("trig", ".trig"), ("nquads", ".nq")):
        exported, again = tmp_path / f"rose{suffix}", tmp_path / f"rose-again{suffix}"
        export_stream(stores["evaluated"], derived, exported, fmt)
        assert import_stream(stores["imported"], exported).quarantined == 0
        export_stream(stores["imported"], derived, again, fmt)
        assert again.read_bytes() == exported.read_bytes(), fmt

        chained = Lake(tmp_path / f"chained-{fmt}")
        chained.write(as_batch(EVENTS), batch_id="readings")
        chained.write(read_stream_file(again, derived), batch_id="rose")
        longer, _ = match(long, chained, interval=Interval(at(-2), at(3)))
        assert rows([m.to_json() for m in longer], "x") == [(0, 2, "http://ex.org/s")], fmt
        later, _ = match(after, chained, interval=Interval(at(-2), at(3)))
        assert rows([m.to_json() for m in later], "who", "x") == [(-1, 2, "http://ex.org/a", "http://ex.org/s")], fmt
