"""Landing files of one stream that share timestamps: each time is one frame in the lake and in
the store, named by the frame the store already had, its parts recorded per file; every file's
counts balance (read = triples + repeated + quarantined)."""
from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import functions as F

from rsp_jobs.ingest.lake import project_lake
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_landing
from rsp_jobs.store import db
from rsp_jobs.store.frames import frame_at, frame_parts

STREAM = "http://ex.org/streams/sensors"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def stamp(second: int) -> str:
    return f'"2014-08-01T07:50:{second:02d}Z"^^{DT}'


def test_landing_files_that_share_a_time_merge_into_one_frame(home, spark, data_dir):
    landing = registry.stream_config(STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "a-0001.nq").write_text(f"""<http://ex.org/f/a0> {AT} {stamp(0)} .
<http://ex.org/s1> <http://ex.org/temp> "21" <http://ex.org/f/a0> .
<http://ex.org/f/a5> {AT} {stamp(5)} .
<http://ex.org/s1> <http://ex.org/temp> "22" <http://ex.org/f/a5> .
""")
    (landing / "a-0002.nq").write_text(f"""<http://ex.org/f/b5> {AT} {stamp(5)} .
<http://ex.org/s2> <http://ex.org/temp> "30" <http://ex.org/f/b5> .
<http://ex.org/s1> <http://ex.org/temp> "22" <http://ex.org/f/b5> .
<http://ex.org/s2> <http://ex.org/temp> "31" "2014-08-01T07:50:09Z"^^{DT} .
not a triple
""")
    report = ingest_landing(STREAM)
    first, second = report.files
    assert (first.status, first.frames, first.triples, first.duplicates, first.quarantined) == ("loaded", 2, 2, 0, 0)
    assert (second.status, second.frames, second.triples, second.duplicates, second.quarantined) == ("loaded", 2, 3, 0, 1)

    engine = db.engine()
    five = datetime(2014, 8, 1, 7, 50, 5, tzinfo=timezone.utc)
    merged = frame_at(engine, STREAM, five)
    assert (merged.iri, merged.triple_count) == ("http://ex.org/f/a5", 2)  # "22" is in both files: once
    assert [(source.rsplit("/", 1)[-1], graph) for source, graph, _, _ in frame_parts(engine, merged.iri)] == [
        ("a-0001.nq", "http://ex.org/f/a5"), ("a-0002.nq", "http://ex.org/f/b5")]

    rows = project_lake().read(spark, [STREAM]).groupBy("ts").agg(F.collect_set("frame").alias("frames")).collect()
    assert sorted(len(r.frames) for r in rows) == [1, 1, 1]  # one frame IRI per time, in the lake too
    assert {r.frames[0] for r in rows} == {"http://ex.org/f/a0", "http://ex.org/f/a5",
                                           f"{STREAM}/frame/2014-08-01T07:50:09Z"}
