"""Stored streams as TA-RDF files and back (Rodriguez, McGrath, Liu, Myers, "Semantic Management
of Streaming Data", SSN 2009; issue 3).

TA-RDF translates a time-annotated stream into plain RDF with the Data Stream Vocabulary: each
frame is a resource that ``dsv:belongsTo`` its stream and ``dsv:hasTimestamp`` its time. An
export keeps the RSP data model around that translation, so that it is both TA-RDF and a stream
file any RSP reader loads:

* each frame is a named graph, named by the frame IRI, holding the frame's triples;
* the default graph states the translation and the RSP time of every frame::

      <stream> a dsv:DataStream .
      <frame> a dsv:Frame ; dsv:belongsTo <stream> ;
          dsv:hasTimestamp "t"^^xsd:dateTime ; prov:generatedAtTime "t"^^xsd:dateTime .

The namespace ``http://purl.org/dsv#`` and the class names ``dsv:DataStream`` and ``dsv:Frame``
are the project's choice: the paper (CEUR-WS Vol-522, pp. 63-82) was found, but not its text of
the vocabulary or of Definition 3. TA-SPARQL should import ``DSV`` from here so the two cannot
drift apart.

Timestamps are written as UTC ``xsd:dateTime`` with every stored microsecond. Exports stream
rows from SQL and write the stored N-Triples text as it is; no graph of the whole stream is
built. Frames come in time order, each frame's triples sorted, so an export depends only on the
stored frames (an exported, imported and re-exported stream is the same file).
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Optional, TextIO, Union

from rdflib import Dataset, Graph, URIRef
from rdflib.namespace import RDF
from sqlalchemy import Engine, select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import (FORMATS, OUTSIDE_FRAMES, PROV_GENERATED_AT, StreamBatch,
                                        read_stream_file, stream_format)
from rsp_jobs.store.frames import LoadReport, load_batch
from rsp_jobs.store.models import Frame, FrameTriple, Stream
from rsp_jobs.terms import XSD_DATETIME, time_value

DSV = "http://purl.org/dsv#"
DSV_DATA_STREAM = DSV + "DataStream"
DSV_FRAME = DSV + "Frame"
DSV_BELONGS_TO = DSV + "belongsTo"
DSV_HAS_TIMESTAMP = DSV + "hasTimestamp"
RDF_TYPE = str(RDF.type)
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
EXPORT_FORMATS = ("trig", "nquads")

ROWS_PER_FETCH = 10_000  # rows a server-side cursor hands over at a time

Out = Union[str, Path, TextIO]


@dataclass(frozen=True)
class ExportReport:
    frames: int
    triples: int  # frame triples, without the default graph's TA-RDF statements


@dataclass(frozen=True)
class _StoredFrame:
    ts: datetime
    iri: str
    triples: list[tuple[str, str, str]]  # N-Triples text, sorted


def export_stream(engine: Engine, stream_iri: str, out: Out, fmt: str = "trig",
                  start: Optional[datetime] = None, end: Optional[datetime] = None) -> ExportReport:
    """Write the frames of ``stream_iri`` with ``start <= ts < end`` (either bound optional) to
    ``out``, a path or a text file, as TriG or N-Quads in time order (see the module doc)."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    if not hasattr(out, "write"):
        out = Path(out)
        implied = FORMATS.get(out.suffix.lower())
        if implied not in (None, fmt):  # the reader picks the format by suffix: the two must agree
            raise ValueError(f"{out}: a {out.suffix} file holds {implied}, not {fmt}")
    with engine.connect() as conn:
        stream_id = conn.execute(select(Stream.id).where(Stream.iri == stream_iri)).scalar()
        if stream_id is None:
            raise InputError(f"stream <{stream_iri}> is not in the store")
        rows = conn.execution_options(yield_per=ROWS_PER_FETCH).execute(_frame_rows(stream_id, start, end))
        with _text_out(out) as handle:
            write = _write_trig if fmt == "trig" else _write_nquads
            return write(handle, stream_iri, _frames(rows))


def import_stream(engine: Engine, path: Union[str, Path], stream_iri: Optional[str] = None) -> LoadReport:
    """Load a TA-RDF export, or any RSP stream file, into the store as stream ``stream_iri``
    (default: the stream the file's frames ``dsv:belongsTo``).

    The frames are read by ``read_stream_file`` and loaded by ``load_batch``, so an import is
    idempotent and quarantines what is malformed, like any load. The default graph's TA-RDF
    statements are frame metadata, not triples outside any frame: they are not quarantined, and
    a frame whose ``dsv:hasTimestamp`` is not its ``prov:generatedAtTime`` is rejected whole.
    """
    path = Path(path)
    statements = _tardf_statements(path)
    batch = read_stream_file(path, stream_iri or _stream_of(path, statements))
    _accept_statements(batch, statements)
    return load_batch(engine, batch)


# --- export -------------------------------------------------------------------------------


def _frame_rows(stream_id: int, start: Optional[datetime], end: Optional[datetime]):
    """One row per triple, frames in time order along the (stream_id, ts) index; an outer join
    so that a frame without triples is still exported as a frame."""
    query = (select(Frame.id, Frame.ts, Frame.frame_iri, FrameTriple.s, FrameTriple.p, FrameTriple.o)
             .select_from(Frame).outerjoin(FrameTriple, FrameTriple.frame_id == Frame.id)
             .where(Frame.stream_id == stream_id).order_by(Frame.ts))
    if start is not None:
        query = query.where(Frame.ts >= _aware(start))
    if end is not None:
        query = query.where(Frame.ts < _aware(end))
    return query


def _frames(rows: Iterable) -> Iterator[_StoredFrame]:
    for _, group in itertools.groupby(rows, key=lambda row: row.id):
        first = next(group)
        triples = sorted((row.s, row.p, row.o) for row in itertools.chain([first], group) if row.s is not None)
        yield _StoredFrame(first.ts, first.frame_iri, triples)


def _write_trig(out: TextIO, stream_iri: str, frames: Iterable[_StoredFrame]) -> ExportReport:
    out.write(f"# TA-RDF export of stream <{stream_iri}>\n"
              f"@prefix dsv: <{DSV}> .\n@prefix prov: <{PROV}> .\n@prefix xsd: <{XSD}> .\n\n"
              f"<{stream_iri}> a dsv:DataStream .\n")
    count = triples = 0
    for frame in frames:
        graph = f"<{frame.iri}>"
        if frame.triples:
            out.write(f"\n{graph} {{\n")
            out.writelines(f"  {s} {p} {o} .\n" for s, p, o in frame.triples)
            out.write("}\n")
        stamp = f'"{xsd_datetime(frame.ts)}"^^xsd:dateTime'
        out.write(f"{graph} a dsv:Frame ;\n  dsv:belongsTo <{stream_iri}> ;\n"
                  f"  dsv:hasTimestamp {stamp} ;\n  prov:generatedAtTime {stamp} .\n")
        count, triples = count + 1, triples + len(frame.triples)
    return ExportReport(count, triples)


def _write_nquads(out: TextIO, stream_iri: str, frames: Iterable[_StoredFrame]) -> ExportReport:
    stream = f"<{stream_iri}>"
    out.write(f"# TA-RDF export of stream {stream}\n{stream} <{RDF_TYPE}> <{DSV_DATA_STREAM}> .\n")
    count = triples = 0
    for frame in frames:
        graph = f"<{frame.iri}>"
        out.writelines(f"{s} {p} {o} {graph} .\n" for s, p, o in frame.triples)
        stamp = f'"{xsd_datetime(frame.ts)}"^^<{XSD_DATETIME}>'
        out.write(f"{graph} <{RDF_TYPE}> <{DSV_FRAME}> .\n{graph} <{DSV_BELONGS_TO}> {stream} .\n"
                  f"{graph} <{DSV_HAS_TIMESTAMP}> {stamp} .\n{graph} <{PROV_GENERATED_AT}> {stamp} .\n")
        count, triples = count + 1, triples + len(frame.triples)
    return ExportReport(count, triples)


def xsd_datetime(ts: datetime) -> str:
    """The lexical ``xsd:dateTime`` of a stored time: UTC, ``Z``, every microsecond kept."""
    return ts.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@contextmanager
def _text_out(out: Union[Path, TextIO]) -> Iterator[TextIO]:
    if isinstance(out, Path):
        with open(out, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
    else:
        yield out


def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(f"naive datetime {ts.isoformat()}: give its time zone (the store keeps UTC)")
    return ts


# --- import -------------------------------------------------------------------------------


def _is_tardf(triple) -> bool:
    _, p, o = triple
    return str(p).startswith(DSV) or (p == RDF.type and str(o).startswith(DSV))


def _tardf_statements(path: Path) -> Graph:
    """The TA-RDF statements of the file's default graph (a second parse beside the reader's,
    which keeps nothing of the default graph but the frame times)."""
    fmt = stream_format(path)
    if not path.is_file():
        raise InputError(f"{path}: stream file not found")
    dataset = Dataset()
    if fmt == "nquads":
        # a quad is a line, so only lines naming the vocabulary can be TA-RDF statements; a
        # malformed one is skipped here and quarantined by the reader
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if DSV in line]
        try:
            dataset.parse(data="\n".join(lines) + "\n", format="nquads")
        except Exception:
            for line in lines:
                try:
                    dataset.parse(data=line + "\n", format="nquads")
                except Exception:
                    continue
    else:
        try:
            dataset.parse(path, format="trig")
        except Exception as exc:  # rdflib raises several kinds
            raise InputError(f"{path}: not valid TriG: {' '.join(str(exc).split())[:300]}") from exc
    statements = Graph()
    for triple in dataset.default_graph:
        if _is_tardf(triple):
            statements.add(triple)
    return statements


def _stream_of(path: Path, statements: Graph) -> str:
    streams = sorted({f"<{o}>" for o in statements.objects(None, URIRef(DSV_BELONGS_TO))})
    if len(streams) != 1:
        named = ", ".join(streams[:5]) or "no stream"
        raise InputError(f"{path}: its frames dsv:belongsTo {named}; give the stream IRI to import into")
    return streams[0][1:-1]


def _accept_statements(batch: StreamBatch, statements: Graph) -> None:
    """Take the TA-RDF statements out of the reader's "no frame" rejection, and reject the
    frames whose dsv:hasTimestamp contradicts their prov:generatedAtTime."""
    for i, rejection in enumerate(batch.rejections):
        if rejection.reason == OUTSIDE_FRAMES:  # the reader's one rejection of default-graph triples
            rest = rejection.triples - len(statements)
            batch.rejections[i:i + 1] = [replace(rejection, triples=rest)] if rest > 0 else []
            break
    stated: dict[str, set] = defaultdict(set)
    for frame, stamp in statements.subject_objects(URIRef(DSV_HAS_TIMESTAMP)):
        stated[str(frame)].add(time_value(stamp))
    times = {e.frame: e.ts for e in batch.elements}
    wrong = {frame: ts for frame, ts in times.items() if frame in stated and stated[frame] != {ts}}
    if not wrong:
        return
    batch.drop_frames({
        frame: f"frame <{frame}> has dsv:hasTimestamp "
               f"{', '.join(sorted(xsd_datetime(t) if t else 'not an xsd:dateTime' for t in stated[frame]))} "
               f"but prov:generatedAtTime {xsd_datetime(ts)} (TA-RDF: a frame has one timestamp)"
        for frame, ts in wrong.items()})
