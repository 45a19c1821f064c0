"""Stream files in the RSP data model: frames from named graphs, times from the default graph;
whatever is malformed is rejected with its file and line, counted and quarantined, never lost."""
from __future__ import annotations

import gc
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import merge_known_frames, read_stream_file
from rsp_jobs.store import db
from rsp_jobs.store.frames import load_batch
from rsp_jobs.store.models import Frame
from tests.engine.test_differential import S1, streams
from tests.support.stream_files import layouts, write_stream_files

AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
GOOD = f"""<http://ex/f1> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> <http://ex/f1> .
<http://ex/s> <http://ex/q> <http://ex/o> <http://ex/f1> .
<http://ex/f2> {AT} "2014-08-01T07:55:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "2.5"^^<http://www.w3.org/2001/XMLSchema#double> <http://ex/f2> .
"""


def test_frames_become_elements_with_their_times_and_typed_values(tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(GOOD)
    batch = read_stream_file(path, "http://ex/stream")
    assert not batch.rejections
    assert batch.frames == 2 and len(batch.elements) == 3
    by_frame = {e.frame: e for e in batch.elements if e.p == "<http://ex/p>"}
    assert by_frame["http://ex/f1"].ts.isoformat() == "2014-08-01T07:50:00+00:00"
    assert by_frame["http://ex/f1"].o_num == 1.0 and by_frame["http://ex/f2"].o_num == 2.5


def test_frames_leave_in_time_order_whatever_their_iris_sort_as(tmp_path):
    lines = []
    for second in (9, 10, 2, 30):  # frame/10 sorts before frame/2 and frame/9 as text
        lines.append(f'<http://ex/frame/{second}> {AT} "2014-08-01T07:50:{second:02d}Z"^^{DT} .')
        lines.append(f"<http://ex/s> <http://ex/p> <http://ex/o{second}> <http://ex/frame/{second}> .")
    path = tmp_path / "s.nq"
    path.write_text("\n".join(lines) + "\n")
    batch = read_stream_file(path, "http://ex/stream")
    assert [e.frame for e in batch.elements] == [f"http://ex/frame/{s}" for s in (2, 9, 10, 30)]


def test_a_malformed_nquads_line_is_rejected_with_its_line_and_the_rest_kept(tmp_path):
    path = tmp_path / "s.nq"
    lines = GOOD.splitlines()
    lines.insert(2, "<http://ex/s> <http://ex/p> this is not rdf <http://ex/f1> .")
    path.write_text("\n".join(lines) + "\n")
    batch = read_stream_file(path, "http://ex/stream")
    assert len(batch.elements) == 3
    assert [(r.file, r.line) for r in batch.rejections] == [(str(path), 3)]
    assert "malformed N-Quads" in str(batch.rejections[0]) and f"{path}:3" in str(batch.rejections[0])
    assert len(batch.elements) + batch.rejected_triples == 4  # read = accepted + rejected


def test_frames_without_a_valid_time_are_rejected_and_counted(tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(GOOD + f"""<http://ex/s> <http://ex/p> "3" <http://ex/f3> .
<http://ex/s> <http://ex/p> "4" <http://ex/f3> .
<http://ex/f4> {AT} "yesterday" .
<http://ex/s> <http://ex/p> "5" <http://ex/f4> .
""")
    batch = read_stream_file(path, "http://ex/stream")
    reasons = {r.reason.split(" has ")[0]: r for r in batch.rejections}
    assert reasons["frame <http://ex/f3>"].triples == 2 and "no prov:generatedAtTime" in reasons["frame <http://ex/f3>"].reason
    assert reasons["frame <http://ex/f3>"].line == 6  # where the graph's first triple is
    assert "not an xsd:dateTime" in reasons["frame <http://ex/f4>"].reason
    assert len(batch.elements) + batch.rejected_triples == 3 + 3 == batch.read_triples


def test_graphs_that_share_a_timestamp_are_one_frame_holding_every_triple(tmp_path):
    """C-SPARQL §3.1: several triples may share a timestamp; TA-RDF restriction 2: one frame per
    stream and time. The graphs at one time merge (union), named after the first in the file,
    and each part keeps its graph, file and line."""
    path = tmp_path / "s.trig"
    path.write_text(f"""@prefix ex: <http://ex/> .
ex:fb {{ ex:carl ex:posts ex:p1 . }}
ex:fb {AT} "2014-08-01T07:50:00Z"^^{DT} .
ex:fs {{ ex:bob ex:posts ex:p2 .
         ex:carl ex:posts ex:p1 . }}
ex:fs {AT} "2014-08-01T07:50:00Z"^^{DT} .
ex:later {{ ex:dave ex:posts ex:p3 . }}
ex:later {AT} "2014-08-01T07:50:01Z"^^{DT} .
""")
    batch = read_stream_file(path, "http://ex/stream")
    assert not batch.rejections
    assert [(e.frame, e.s) for e in batch.elements] == [
        ("http://ex/fb", "<http://ex/carl>"), ("http://ex/fb", "<http://ex/bob>"), ("http://ex/later", "<http://ex/dave>")]
    assert [(p.frame, p.graph, p.line, p.statements) for p in batch.parts] == [
        ("http://ex/fb", "http://ex/fb", 2, 1), ("http://ex/fb", "http://ex/fs", 4, 2), ("http://ex/later", "http://ex/later", 7, 1)]
    assert batch.duplicates == {"http://ex/fb": 1}  # ex:carl ex:posts ex:p1 twice at one time: once in the graph
    assert batch.read_triples == 4 == len(batch.elements) + 1


def test_nquads_whose_context_is_the_timestamp_are_a_stream_as_c_sparql_serializes_it(tmp_path):
    """C-SPARQL §3.1: "N-Quads ... we use as context the timestamp encoded as a RDF literal of
    type xsd:dateTime". The triples of one timestamp are one frame <stream>/frame/<time>, in
    the order they were read; they mix with named-graph frames of the same time."""
    path = tmp_path / "glue.nq"
    t1, t2 = f'"2009-07-20T22:48:52Z"^^{DT}', f'"2009-07-20T22:48:55Z"^^{DT}'
    path.write_text(f"""<http://ex/i1> <http://ex/topic> <http://ex/movies> {t1} .
<http://ex/i1> <http://ex/title> "The Proposal" {t1} .
<http://ex/i2> <http://ex/title> "Mario Kart Wii" {t2} .
<http://ex/g> {AT} {t2} .
<http://ex/i2> <http://ex/topic> <http://ex/games> <http://ex/g> .
<http://ex/i3> <http://ex/topic> <http://ex/x> "not a time" .
""")
    batch = read_stream_file(path, "http://ex/glue")
    frame1, frame2 = "http://ex/glue/frame/2009-07-20T22:48:52Z", "http://ex/glue/frame/2009-07-20T22:48:55Z"
    assert [(e.frame, e.p, e.pos) for e in batch.elements] == [
        (frame1, "<http://ex/topic>", 0), (frame1, "<http://ex/title>", 1),
        (frame2, "<http://ex/title>", 2), (frame2, "<http://ex/topic>", 4)]
    assert [r.line for r in batch.rejections] == [6] and "xsd:dateTime" in batch.rejections[0].reason
    assert batch.read_triples == 5


def test_files_of_one_stream_merge_at_the_times_they_share(tmp_path):
    """A stream split over files: a time both bring is one frame, named by the first file's."""
    first, second = tmp_path / "a.nq", tmp_path / "b.nq"
    first.write_text(f"""<http://ex/f1> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "1" <http://ex/f1> .
""")
    second.write_text(f"""<http://ex/g1> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "2" <http://ex/g1> .
<http://ex/g2> {AT} "2014-08-01T07:51:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "3" <http://ex/g2> .
""")
    known: dict = {}
    a = read_stream_file(first, "http://ex/stream", order=0)
    merge_known_frames(a, known)
    b = read_stream_file(second, "http://ex/stream", order=1)
    merge_known_frames(b, known)
    assert [e.frame for e in b.elements] == ["http://ex/f1", "http://ex/g2"]
    assert [(p.frame, p.graph, p.source) for p in b.parts] == [
        ("http://ex/f1", "http://ex/g1", str(second)), ("http://ex/g2", "http://ex/g2", str(second))]


def test_a_trig_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text("@prefix ex: <http://ex/> .\nex:f1 { ex:s ex:p ; }\n")
    with pytest.raises(InputError, match=rf"{path}:2: not valid TriG"):
        read_stream_file(path, "http://ex/stream")


def test_trig_frames_are_read_like_nquads(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text(f"""@prefix ex: <http://ex/> .
ex:f1 {AT} "2014-08-01T07:50:00Z"^^{DT} .
ex:f1 {{ ex:s ex:p 1 ; ex:q ex:o . }}
""")
    batch = read_stream_file(path, "http://ex/stream")
    assert batch.frames == 1 and len(batch.elements) == 2 and not batch.rejections


def test_unknown_file_types_and_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="unknown stream file type '.csv'"):
        (tmp_path / "s.csv").write_text("x")
        read_stream_file(tmp_path / "s.csv", "http://ex/stream")
    with pytest.raises(InputError, match="not found"):
        read_stream_file(tmp_path / "missing.nq", "http://ex/stream")


def test_reading_pauses_the_cyclic_collector_only_while_it_reads(tmp_path):
    """``many_small_objects`` gives the collector back as it found it, after an error too."""
    path = tmp_path / "s.nq"
    path.write_text(GOOD)
    assert gc.isenabled()
    assert len(read_stream_file(path, "http://ex/stream").elements) == 3 and gc.isenabled()
    with pytest.raises(InputError):
        read_stream_file(tmp_path / "missing.nq", "http://ex/stream")
    assert gc.isenabled()
    gc.disable()
    try:
        read_stream_file(path, "http://ex/stream")
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()


def test_loading_a_batch_twice_replaces_it_and_rejections_are_quarantined(tmp_path, spark):
    path = tmp_path / "s.nq"
    path.write_text(GOOD + "garbage line\n")
    batch = read_stream_file(path, "http://ex/stream")
    lake = Lake(tmp_path / "lake")
    assert lake.write(batch) == 3
    assert lake.write(batch) == 3
    assert lake.read(spark, ["http://ex/stream"]).count() == 3
    quarantined = [json.loads(line) for f in (tmp_path / "quarantine").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert [(q["line"], q["text"]) for q in quarantined] == [(6, "garbage line")]


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(elements=streams(), layout=layouts, garbage=st.lists(st.integers(0, 40), max_size=3))
def test_nothing_is_lost_across_files_with_shared_timestamps_repeats_and_bad_lines(elements, layout, garbage, tmp_path):
    """For every file: triples read = accepted + repeated within their frame + quarantined; over
    the split files of a stream, the frames hold every distinct triple of every time once, in
    the store as in the lake's union, whichever file brought it."""
    folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    elements = elements + [elements[-1]]  # a reading sent twice in its graph
    files = write_stream_files(elements, folder, {S1: layout})
    if layout.format != "trig":  # a line-based file keeps its good lines around bad ones
        for number, (_, path) in enumerate(files[:len(garbage)]):
            lines = path.read_text().splitlines()
            lines.insert(garbage[number] % (len(lines) + 1), f"this is not a triple {number}")
            path.write_text("\n".join(lines) + "\n")
    bad = min(len(garbage), len(files)) if layout.format != "trig" else 0
    known: dict = {}
    batches = []
    for order, (iri, path) in enumerate(files):
        batch = read_stream_file(path, iri, order=order)
        merge_known_frames(batch, known)
        assert batch.read_triples == len(batch.elements) + sum(batch.duplicates.values()) + batch.rejected_triples
        batches.append(batch)
    assert sum(b.read_triples for b in batches) == len(elements) + bad
    assert sum(b.rejected_triples for b in batches) == bad
    assert sum(sum(b.duplicates.values()) for b in batches) >= 1
    distinct = {(e.ts_ms, e.s, e.p, e.o) for e in elements}
    accepted = {(round(e.ts.timestamp() * 1000), e.s, e.p, e.o) for b in batches for e in b.elements}
    assert accepted == distinct
    frame_of = {}
    for b in batches:
        for e in b.elements:
            assert frame_of.setdefault(e.ts, e.frame) == e.frame  # one time, one frame IRI, across files

    store = db.engine(f"sqlite:///{folder / 'store.sqlite'}")
    db.upgrade(f"sqlite:///{folder / 'store.sqlite'}")
    reports = [load_batch(store, b) for b in batches]
    assert sum(r.quarantined for r in reports) == bad
    with store.connect() as conn:
        frames = conn.execute(select(Frame.ts, Frame.triple_count)).all()
    assert len(frames) == len({e.ts_ms for e in elements})
    assert sum(count for _, count in frames) == len(distinct)
