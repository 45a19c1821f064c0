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
from rsp_jobs.ingest.rdf_stream import StreamBatch, read_stream_file
from rsp_jobs.store import db
from rsp_jobs.store.frames import frame_checksum, load_batch
from rsp_jobs.store.invariant import invariants_about
from rsp_jobs.store.models import Frame, FrameTriple, QuarantinedInput, Stream
from rsp_jobs.store.tardf import (DSV_BELONGS_TO, DSV_DATA_STREAM, DSV_FRAME, DSV_HAS_TIMESTAMP,
                                  ExportReport, export_stream, import_stream)
from rsp_jobs.terms import XSD_DATETIME, XSD_DOUBLE, time_value, to_nt

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
    typed values); each checksum is checked against the triples it sums."""
    with engine.connect() as conn:
        frames = conn.execute(select(Frame.id, Frame.ts, Frame.frame_iri, Frame.triple_count, Frame.checksum)
                              .join(Stream, Stream.id == Frame.stream_id).where(Stream.iri == stream_iri)
                              .order_by(Frame.ts)).all()
        rows = conn.execute(select(FrameTriple.frame_id, FrameTriple.s, FrameTriple.p, FrameTriple.o,
                                   FrameTriple.o_num, FrameTriple.o_time)
                            .where(FrameTriple.frame_id.in_(select(Frame.id).join(Stream).where(
                                Stream.iri == stream_iri)))).all()
    triples = defaultdict(set)
    for frame_id, *triple in rows:
        triples[frame_id].add(tuple(triple))
    for frame in frames:
        assert frame.checksum == frame_checksum(t[:3] for t in triples[frame.id]), frame.frame_iri
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
