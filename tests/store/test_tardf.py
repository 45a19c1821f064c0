"""TA-RDF export and import of stored streams: an export is an RDF dataset holding the TA-RDF
translation (each frame a dsv:Frame that dsv:belongsTo its stream and dsv:hasTimestamp its
time) beside the RSP data model, and importing it into a fresh store gives back the same frames,
to the microsecond. Each test runs on SQLite and on PostgreSQL (see conftest)."""
from __future__ import annotations

import io
import secrets
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
from rdflib import RDF, Dataset, Literal, URIRef
from sqlalchemy import Engine, insert, make_url, select

from tests.store.conftest import empty_store_url
from rsp_jobs.errors import InputError
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch, read_stream_chunks, read_stream_file
from rsp_jobs.store import db
from rsp_jobs.store.frames import frame_checksum, load_batch
from rsp_jobs.store.invariant import invariants_about
from rsp_jobs.store.models import Frame, FrameTriple, QuarantinedInput, Stream
from rsp_jobs.store.tardf import (DSV_BELONGS_TO, DSV_DATA_STREAM, DSV_FRAME, DSV_HAS_TIMESTAMP,
                                  ExportReport, export_stream, import_stream)
from rsp_jobs.terms import XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, time_value, to_nt

PROV_AT = "http://www.w3.org/ns/prov#generatedAtTime"
SUFFIX = {"trig": ".trig", "nquads": ".nq"}
STREAM = "http://ex.org/streams/s"
T0 = datetime(2014, 8, 1, 7, 50, tzinfo=timezone.utc)


@pytest.fixture
def fresh_store(store_url: str, tmp_path: Path, request) -> Iterator[Engine]:
    """A second empty store on the same backend to import into: frame IRIs are unique
    store-wide, so a copy of a stream's frames cannot share the store with them."""
    backend = "sqlite" if make_url(store_url).get_backend_name() == "sqlite" else "postgresql"
    with empty_store_url(backend, tmp_path, request, "fresh") as url:
        db.upgrade(url)
        yield db.engine(url)


@pytest.fixture(scope="session")
def weather_batch(data_dir: Path, tmp_path_factory) -> StreamBatch:
    """Three days of CityBench weather (20-minute readings), through the CityBench mapping."""
    path = data_dir / "citybench" / "streams" / "AarhusWeatherData0.stream"
    if not path.is_file():
        pytest.skip(f"CityBench weather stream not found at {path} (set RSP_DATA_DIR)")
    stream, frames, _ = citybench.map_stream(path, start=datetime(2014, 8, 1), end=datetime(2014, 8, 4))
    out = citybench.write_nquads(stream, frames, tmp_path_factory.mktemp("weather") / "weather.nq")
    return read_stream_file(out, str(stream))


def stored_frames(engine: Engine, stream_iri: str) -> list[tuple]:
    """The stream's frames in time order: (ts, IRI, triple count, checksum, triples with their
    typed values and interval start); each checksum is checked against the events it sums."""
    with engine.connect() as conn:
        frames = conn.execute(select(Frame.id, Frame.ts, Frame.frame_iri, Frame.triple_count, Frame.checksum)
                              .join(Stream, Stream.id == Frame.stream_id).where(Stream.iri == stream_iri)
                              .order_by(Frame.ts)).all()
        rows = conn.execute(select(FrameTriple.frame_id, FrameTriple.s, FrameTriple.p, FrameTriple.o,
                                   FrameTriple.o_num, FrameTriple.o_time, FrameTriple.start)
                            .where(FrameTriple.frame_id.in_(select(Frame.id).join(Stream).where(
                                Stream.iri == stream_iri)))).all()
    triples = defaultdict(set)
    for frame_id, *triple in rows:
        triples[frame_id].add(tuple(triple))
    for frame in frames:
        assert frame.checksum == frame_checksum((*t[:3], t[5]) for t in triples[frame.id]), frame.frame_iri
    return [(f.ts, f.frame_iri, f.triple_count, f.checksum, frozenset(triples[f.id])) for f in frames]


def nquads_batch(tmp_path: Path, frames: dict[str, datetime], stream: str = STREAM) -> StreamBatch:
    """A small stream file read as any input is: one typed value per frame."""
    lines = []
    for i, (iri, ts) in enumerate(frames.items()):
        lines.append(f'<{iri}> <{PROV_AT}> "{ts.isoformat()}"^^<{XSD_DATETIME}> .')
        lines.append(f'<http://ex.org/obs/{i}> <http://ex.org/value> "{i}.5"^^<{XSD_DOUBLE}> <{iri}> .')
        lines.append(f'<http://ex.org/obs/{i}> <http://ex.org/at> "{ts.isoformat()}"^^<{XSD_DATETIME}> <{iri}> .')
    path = tmp_path / f"input-{secrets.token_hex(4)}.nq"
    path.write_text("\n".join(lines) + "\n")
    return read_stream_file(path, stream)


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
@pytest.mark.parametrize("source", ["csrbench_batch", "weather_batch"])
def test_export_imported_into_a_fresh_store_gives_the_same_frames(store, fresh_store, tmp_path, request,
                                                                  source, fmt):
    batch = request.getfixturevalue(source)
    load_batch(store, batch)
    out = tmp_path / f"export{SUFFIX[fmt]}"

    exported = export_stream(store, batch.stream, out, fmt)
    report = import_stream(fresh_store, out)

    original = stored_frames(store, batch.stream)
    assert exported == ExportReport(len(original), sum(f[2] for f in original))
    assert (report.frames_written, report.triples_written, report.quarantined) == (exported.frames, exported.triples, 0)
    assert stored_frames(fresh_store, batch.stream) == original
    again = tmp_path / f"again{SUFFIX[fmt]}"
    export_stream(fresh_store, batch.stream, again, fmt)
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_export_is_a_dataset_holding_the_tardf_translation(store, csrbench_batch, tmp_path, fmt):
    """Named graph per frame with exactly its triples; in the default graph, the stream is a
    dsv:DataStream and each frame a dsv:Frame that dsv:belongsTo it and dsv:hasTimestamp its
    time, that time also its prov:generatedAtTime; nothing else."""
    load_batch(store, csrbench_batch)
    out = tmp_path / f"export{SUFFIX[fmt]}"
    export_stream(store, csrbench_batch.stream, out, fmt)
    dataset = Dataset()
    dataset.parse(out, format=fmt)

    frames = stored_frames(store, csrbench_batch.stream)
    stream, default = URIRef(csrbench_batch.stream), dataset.default_graph
    graphs = {g.identifier: g for g in dataset.graphs() if g.identifier != default.identifier}
    assert set(graphs) == {URIRef(iri) for _, iri, *_ in frames}
    assert len(default) == 1 + 4 * len(frames)
    assert set(default.subjects(RDF.type, URIRef(DSV_DATA_STREAM))) == {stream}
    assert set(default.subjects(RDF.type, URIRef(DSV_FRAME))) == set(graphs)
    for ts, iri, _, _, triples in frames:
        frame = URIRef(iri)
        assert list(default.objects(frame, URIRef(DSV_BELONGS_TO))) == [stream]
        [stamp] = default.objects(frame, URIRef(DSV_HAS_TIMESTAMP))
        assert isinstance(stamp, Literal) and str(stamp.datatype) == XSD_DATETIME and time_value(stamp) == ts
        assert list(default.objects(frame, URIRef(PROV_AT))) == [stamp]
        assert {tuple(to_nt(term) for term in t) for t in graphs[frame]} == {t[:3] for t in triples}


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_microsecond_timestamps_survive_the_round_trip(store, fresh_store, tmp_path, fmt):
    times = [T0, T0 + timedelta(microseconds=1), T0 + timedelta(seconds=1, microseconds=500000),
             T0 + timedelta(seconds=2, microseconds=123456), datetime(1970, 1, 1, tzinfo=timezone.utc)]
    load_batch(store, nquads_batch(tmp_path, {f"{STREAM}/frame/{i}": t for i, t in enumerate(times)}))
    out = tmp_path / f"export{SUFFIX[fmt]}"
    export_stream(store, STREAM, out, fmt)
    import_stream(fresh_store, out)
    assert [f[0] for f in stored_frames(fresh_store, STREAM)] == sorted(times)
    assert stored_frames(fresh_store, STREAM) == stored_frames(store, STREAM)
    assert '"2014-08-01T07:50:00.000001Z"' in out.read_text()


def test_export_writes_the_frames_from_start_to_before_end_in_time_order(store, tmp_path):
    times = [T0 + timedelta(minutes=5 * i) for i in (3, 0, 4, 1, 2)]  # loaded out of order
    load_batch(store, nquads_batch(tmp_path, {f"{STREAM}/frame/{t:%H%M}": t for t in times}))
    out = io.StringIO()

    report = export_stream(store, STREAM, out, "nquads", start=T0 + timedelta(minutes=5),
                           end=T0 + timedelta(minutes=20))

    stamps = [line.split('"')[1] for line in out.getvalue().splitlines() if DSV_HAS_TIMESTAMP in line]
    assert stamps == ["2014-08-01T07:55:00Z", "2014-08-01T08:00:00Z", "2014-08-01T08:05:00Z"]
    assert report == ExportReport(3, 6)


def test_a_frame_without_triples_is_still_exported_as_a_frame(store, tmp_path):
    load_batch(store, nquads_batch(tmp_path, {f"{STREAM}/frame/0": T0}))
    with db.write_transaction(store) as conn:
        stream_id = conn.execute(select(Stream.id).where(Stream.iri == STREAM)).scalar_one()
        conn.execute(insert(Frame).values(stream_id=stream_id, ts=T0 + timedelta(minutes=5), triple_count=0,
                                          frame_iri=f"{STREAM}/frame/empty", checksum=frame_checksum([])))
    out = io.StringIO()
    assert export_stream(store, STREAM, out, "trig") == ExportReport(2, 2)
    dataset = Dataset()
    dataset.parse(data=out.getvalue(), format="trig")
    empty = URIRef(f"{STREAM}/frame/empty")
    assert (empty, URIRef(DSV_BELONGS_TO), URIRef(STREAM)) in dataset.default_graph
    assert (empty, RDF.type, URIRef(DSV_FRAME)) in dataset.default_graph

def test_import_under_another_stream_iri(store, fresh_store, csrbench_batch, tmp_path):
    load_batch(store, csrbench_batch)
    export_stream(store, csrbench_batch.stream, tmp_path / "export.trig")
    import_stream(fresh_store, tmp_path / "export.trig", "http://ex.org/streams/copy")
    assert stored_frames(fresh_store, "http://ex.org/streams/copy") == stored_frames(store, csrbench_batch.stream)
    assert stored_frames(fresh_store, csrbench_batch.stream) == []


def test_a_plain_rsp_file_imports_once_given_its_stream(store, tmp_path):
    batch = nquads_batch(tmp_path, {f"{STREAM}/frame/0": T0})
    with pytest.raises(InputError, match="no frame dsv:belongsTo a stream; give the stream IRI"):
        import_stream(store, batch.source)
    assert import_stream(store, batch.source, STREAM).frames_written == 1


def test_default_graph_triples_about_no_frame_are_time_invariant_statements(store, fresh_store, tmp_path):
    """TA-RDF §4: a triple whose resources carry no time is time-invariant (all at Nil)."""
    load_batch(store, nquads_batch(tmp_path, {f"{STREAM}/frame/0": T0, f"{STREAM}/frame/1": T0 + timedelta(1)}))
    out = tmp_path / "export.nq"
    export_stream(store, STREAM, out, "nquads")
    with out.open("a") as f:
        f.write("<http://ex.org/a> <http://ex.org/b> <http://ex.org/c> .\n")
    report = import_stream(fresh_store, out)
    assert (report.frames_written, report.invariant, report.quarantined) == (2, 1, 0)
    with fresh_store.connect() as conn:
        assert invariants_about(conn, "<http://ex.org/a>") == [("<http://ex.org/a>", "<http://ex.org/b>",
                                                               "<http://ex.org/c>")]


def test_a_frame_whose_dsv_timestamp_contradicts_its_time_is_rejected(store, fresh_store, tmp_path):
    load_batch(store, nquads_batch(tmp_path, {f"{STREAM}/frame/0": T0, f"{STREAM}/frame/1": T0 + timedelta(1)}))
    out = tmp_path / "export.nq"
    export_stream(store, STREAM, out, "nquads")
    text = out.read_text()
    stated = f'<{DSV_HAS_TIMESTAMP}> "2014-08-01T07:50:00Z"'
    assert stated in text
    out.write_text(text.replace(stated, f'<{DSV_HAS_TIMESTAMP}> "2014-08-01T07:51:00Z"'))
    report = import_stream(fresh_store, out)
    held = sum(1 for line in text.splitlines() if f"<{STREAM}/frame/0>" in line)  # every statement naming it
    assert (report.frames_written, report.quarantined) == (1, held)
    with fresh_store.connect() as conn:
        reasons = conn.execute(select(QuarantinedInput.reason)).scalars().all()
    assert any("dsv:hasTimestamp other than its prov:generatedAtTime" in r for r in reasons)
    assert [f[1] for f in stored_frames(fresh_store, STREAM)] == [f"{STREAM}/frame/1"]


def test_exporting_an_unknown_stream_or_to_a_file_of_another_format_is_an_error(store, tmp_path):
    with pytest.raises(InputError, match="is not in the store"):
        export_stream(store, STREAM, tmp_path / "x.trig")
    with pytest.raises(ValueError, match="holds nquads, not trig"):
        export_stream(store, STREAM, tmp_path / "x.nq", "trig")


# --- a derived event's interval, and a frame the store already holds --------------------------

RSP_START = "urn:rsp:ns:start"
DAY = timedelta(days=1)
DERIVED = "urn:rsp:query:rose/stream"


def derived_batch() -> StreamBatch:
    """A REGISTER STREAM pattern's output as ``store.results.result_batch`` makes it: frames at
    each match's end, each derived triple with its match's start. Day 3 holds matches over two
    intervals (one triple over both, two events) and an instant; day 4 only an instant."""
    batch = StreamBatch(stream=DERIVED, source="evaluation of urn:rsp:query:rose")
    rose, s, a = "<http://ex.org/rose>", "<http://ex.org/s>", "<http://ex.org/a>"
    true = '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>'
    frame3, frame4 = f"{DERIVED}/frame/day3", f"{DERIVED}/frame/day4"
    for pos, (frame, ts, subject, start) in enumerate([
            (frame3, T0 + 3 * DAY, s, T0 + DAY),  # over [day 1, day 3]
            (frame3, T0 + 3 * DAY, s, T0 + 2 * DAY),  # the same triple over [day 2, day 3]
            (frame3, T0 + 3 * DAY, a, T0 + DAY),
            (frame3, T0 + 3 * DAY, "<http://ex.org/now>", None),  # the instant [day 3, day 3]
            (frame4, T0 + 4 * DAY, s, None)]):
        batch.elements.append(Element(DERIVED, ts, frame, subject, rose, true, None, None, pos, start))
    return batch


def stored_events(engine: Engine, stream_iri: str) -> list[tuple]:
    """(frame time, frame IRI, s, p, o, start) of every stored triple of the stream, sorted."""
    with engine.connect() as conn:
        rows = conn.execute(select(Frame.ts, Frame.frame_iri, FrameTriple.s, FrameTriple.p, FrameTriple.o,
                                   FrameTriple.start)
                            .join(Frame, Frame.id == FrameTriple.frame_id).join(Stream)
                            .where(Stream.iri == stream_iri)).all()
    return sorted((tuple(r) for r in rows), key=str)


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_a_derived_events_interval_survives_export_and_import(store, fresh_store, tmp_path, fmt):
    """The issue: a match over [day 1, day 3] came back over [day 3, day 3]. The export states
    each graph's start (``<graph> rsp:start``) beside its time, a triple any RDF reader keeps;
    import and the stream-file reader a chained query loads give every event its interval."""
    load_batch(store, derived_batch())
    original = stored_events(store, DERIVED)
    assert {(r[2], r[5]) for r in original if r[0] == T0 + 3 * DAY} == {
        ("<http://ex.org/s>", T0 + DAY), ("<http://ex.org/s>", T0 + 2 * DAY), ("<http://ex.org/a>", T0 + DAY),
        ("<http://ex.org/now>", None)}
    out = tmp_path / f"export{SUFFIX[fmt]}"

    assert export_stream(store, DERIVED, out, fmt) == ExportReport(2, 5)
    dataset = Dataset()
    dataset.parse(out, format=fmt)  # plain RDF: rdflib reads the starts as triples
    starts = {(str(g), time_value(t)) for g, t in dataset.default_graph.subject_objects(URIRef(RSP_START))}
    # day 3's instant is the graph named by the frame; each start has a graph of its own
    assert starts == {(f"{DERIVED}/frame/day3/interval/2014-08-02T07:50:00Z", T0 + DAY),
                      (f"{DERIVED}/frame/day3/interval/2014-08-03T07:50:00Z", T0 + 2 * DAY)}

    report = import_stream(fresh_store, out)
    assert (report.frames_new, report.frames_written, report.triples_written, report.quarantined) == (2, 2, 5, 0)
    assert stored_events(fresh_store, DERIVED) == original
    assert stored_frames(fresh_store, DERIVED) == stored_frames(store, DERIVED)  # checksums with the starts
    again = tmp_path / f"again{SUFFIX[fmt]}"
    export_stream(fresh_store, DERIVED, again, fmt)
    assert again.read_bytes() == out.read_bytes()

    # what `rsp evaluate --stream IRI=export` loads into the lake for a chained query
    elements = read_stream_file(out, DERIVED).elements
    assert sorted(((e.s, e.ts, e.start) for e in elements), key=str) == sorted(
        ((r[2], r[0], r[5]) for r in original), key=str)


def test_an_rsp_start_that_is_no_time_or_after_its_frame_is_rejected_naming_file_and_line(
        store, fresh_store, tmp_path):
    load_batch(store, derived_batch())
    out = tmp_path / "export.nq"
    export_stream(store, DERIVED, out, "nquads")
    lines = out.read_text().splitlines()
    graph = f"<{DERIVED}/frame/day3/interval/2014-08-02T07:50:00Z>"
    number = next(i for i, line in enumerate(lines, 1) if line.startswith(f"{graph} <{RSP_START}>"))
    lines[number - 1] = lines[number - 1].replace('"2014-08-02T07:50:00Z"', '"2014-08-09T07:50:00Z"')
    out.write_text("\n".join(lines) + "\n")

    report = import_stream(fresh_store, out)
    assert report.frames_written == 2  # day 3 from its other graphs, day 4
    with fresh_store.connect() as conn:
        [(line, reason, source)] = conn.execute(select(QuarantinedInput.line, QuarantinedInput.reason,
                                                       QuarantinedInput.source_file)).all()
    # the frame resource is rejected whole where the file declares it
    assert (source, line) == (str(out), next(i for i, text in enumerate(lines, 1)
                                             if text.startswith(f"{graph} <{DSV_BELONGS_TO}>")))
    assert f"frame {graph} has rsp:start 2014-08-09T07:50:00Z after its time 2014-08-04T07:50:00Z" in reason
    assert ("<http://ex.org/a>", T0 + DAY) not in {(r[2], r[5]) for r in stored_events(fresh_store, DERIVED)}

    # the stream-file reader (rsp evaluate --stream) rejects that graph, naming the line
    [rejection] = [r for r in read_stream_file(out, DERIVED).rejections if "after its time" in r.reason]
    assert (rejection.file, rejection.line, rejection.triples) == (str(out), number, 2)
    assert "after its time 2014-08-04T07:50:00Z" in rejection.reason


def test_an_nquads_export_imported_where_its_trig_export_was_finds_every_frame_there(
        store, fresh_store, tmp_path):
    """The issue: importing the N-Quads export of a stream into a store holding the stream from
    its TriG export wrote every frame again. A frame is recognised by its content, whatever
    the file, format or lexical form of its time, and the report tells new from already there."""
    times = {f"{STREAM}/frame/{i}": T0 + timedelta(minutes=5 * i, microseconds=i) for i in range(6)}
    load_batch(store, nquads_batch(tmp_path, times))
    load_batch(store, derived_batch())
    for stream, name in ((STREAM, "streams"), (DERIVED, "rose")):
        export_stream(store, stream, tmp_path / f"{name}.trig", "trig")
        export_stream(store, stream, tmp_path / f"{name}.nq", "nquads")
    first = import_stream(fresh_store, tmp_path / "streams.trig")
    assert (first.frames_new, first.frames_unchanged) == (6, 0)
    assert import_stream(fresh_store, tmp_path / "rose.trig").frames_new == 2
    before = (stored_frames(fresh_store, STREAM), stored_events(fresh_store, DERIVED))

    for name, frames in (("streams", 6), ("rose", 2)):
        report = import_stream(fresh_store, tmp_path / f"{name}.nq")
        assert (report.frames_new, report.frames_written, report.frames_unchanged, report.triples_written) == (
            0, 0, frames, 0), name
    # the same instants written otherwise: at +02:00, with trailing zeros
    text = (tmp_path / "streams.nq").read_text()
    shifted = text.replace('"2014-08-01T07:50:00Z"', '"2014-08-01T09:50:00.000+02:00"')
    assert shifted != text
    (tmp_path / "shifted.nq").write_text(shifted)
    assert import_stream(fresh_store, tmp_path / "shifted.nq").frames_unchanged == 6
    assert (stored_frames(fresh_store, STREAM), stored_events(fresh_store, DERIVED)) == before
    with fresh_store.connect() as conn:
        assert conn.execute(select(QuarantinedInput.id)).all() == []


def test_a_chunked_read_of_a_large_nquads_export_keeps_the_intervals(store, tmp_path, monkeypatch):
    """An N-Quads file over RSP_STREAM_CHUNK_BYTES is read in batches of whole frames: a
    graph's rsp:start, written after its triples and time, still reaches its frame."""
    load_batch(store, derived_batch())
    out = tmp_path / "export.nq"
    export_stream(store, DERIVED, out, "nquads")
    whole = read_stream_file(out, DERIVED)
    monkeypatch.setenv("RSP_STREAM_CHUNK_BYTES", "200")
    chunks = list(read_stream_chunks(out, DERIVED))
    assert len(chunks) > 1
    events = sorted(((e.frame, e.s, e.ts, e.start) for c in chunks for e in c.elements), key=str)
    assert events == sorted(((e.frame, e.s, e.ts, e.start) for e in whole.elements), key=str)
    assert sum(e.start is not None for e in whole.elements) == 3


# lexical forms rdflib would rewrite ("01" to "1", "1.0E6" to "1000000.0", "0" to "false",
# "Z" to "+00:00", "+5" to "5"): each a different RDF term from its canonical form (RDF 1.1 §3.3);
# a language tag is written in lower case, which §3.3 allows (tags compare case-insensitively)
AS_WRITTEN = [f'"01"^^<{XSD_INTEGER}>', f'"1.0E6"^^<{XSD_DOUBLE}>', f'"0"^^<{XSD_BOOLEAN}>',
              f'"2010-06-21T11:28:01Z"^^<{XSD_DATETIME}>', f'"+5"^^<{XSD_INTEGER}>', '"xyz"@en-gb',
              f'"3.0E4"^^<{XSD_DOUBLE}>', f'"0.50"^^<{XSD_DECIMAL}>']
WRITTEN_WITH = {'"xyz"@en-gb': '"xyz"@en-GB'}  # how the file writes a term, where that differs


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_terms_keep_their_lexical_forms_from_file_to_store_to_export_and_back(store, fresh_store, tmp_path, fmt):
    frame = f"{STREAM}/frame/0"
    lines = [f'<{frame}> <{PROV_AT}> "{T0.isoformat()}"^^<{XSD_DATETIME}> .']
    lines += [f"<http://ex.org/obs/{i}> <http://ex.org/value> {WRITTEN_WITH.get(term, term)} <{frame}> ."
              for i, term in enumerate(AS_WRITTEN)]
    path = tmp_path / "input.nq"
    path.write_text("\n".join(lines) + "\n")
    load_batch(store, read_stream_file(path, STREAM))
    stored = {t[2] for f in stored_frames(store, STREAM) for t in f[4] if t[1] == "<http://ex.org/value>"}
    assert stored == set(AS_WRITTEN)
    out = tmp_path / f"export{SUFFIX[fmt]}"
    export_stream(store, STREAM, out, fmt)
    assert all(term.split("^^")[0] in out.read_text() for term in AS_WRITTEN)
    import_stream(fresh_store, out)
    assert stored_frames(fresh_store, STREAM) == stored_frames(store, STREAM)
