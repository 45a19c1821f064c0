"""Stored streams as TA-RDF files and back (Rodriguez, McGrath, Liu, Myers, "Semantic Management
of Streaming Data", SSN 2009, §5).

An export is at once the plain-RDF translation of Definition 3 and an RSP stream file:

* the default graph holds the translation: the stream, each frame as a resource that
  ``dsv:belongsTo`` the stream and ``dsv:hasTimestamp`` its time, and the frame's TA-RDF
  statements ``S[t] p o`` as ``F p o`` (a frame triple about the stream or the frame itself; in
  the object position likewise), so Table 2's SPARQL translation of a TA-SPARQL query runs on
  it; then the time-invariant statements about the stream (``S p o`` and ``x p S``: Nil);
* each frame is also a named graph, named by the frame IRI, with the frame's triples as stored,
  and ``prov:generatedAtTime`` gives its time to RSP readers::

      <stream> a dsv:DataStream .
      <frame> { <stream> ex:reading 10 . <obs> ex:value 3 . }
      <frame> a dsv:Frame ; dsv:belongsTo <stream> ; dsv:hasTimestamp "t"^^xsd:dateTime ;
          prov:generatedAtTime "t"^^xsd:dateTime ; ex:reading 10 .

A derived event (a REGISTER STREAM pattern's match, EP-SPARQL §3.2) holds over an interval
[start, t], the frame's time t its end; the store keeps its start beside the triple. The frame's
graph name then gives the start in the default graph, ``<frame> rsp:start "s"^^xsd:dateTime``
(``urn:rsp:ns:start``, the ``rsp:`` namespace of the stored results), which any RDF reader
keeps as a plain triple; without it an event is the instant [t, t]. A frame whose events have
several starts (matches over other intervals closing at one time) is written as one graph per
start, the first named by the frame IRI and each other ``<frame>/interval/<start>``, every one
a ``dsv:Frame`` of the stream at t: TA-RDF restriction 2(iv) makes them one frame again on
import, each triple with its start (docs/decisions/streams-and-frames.md)::

      <frame> { <x> ex:rose true . }
      <frame> a dsv:Frame ; dsv:belongsTo <stream> ; dsv:hasTimestamp "t"^^xsd:dateTime ;
          prov:generatedAtTime "t"^^xsd:dateTime ; rsp:start "s"^^xsd:dateTime .

Importing (``ingest.tardf``) reads both forms, so export then import gives the same frames
(Theorem 2's reversibility): the translation's statements that the named graph already states
are not added twice.

The namespace ``http://purl.org/dsv#`` is the project's choice: the paper names the vocabulary
``dsv`` (Table 1 did not survive in our copy) but prints no namespace IRI. Timestamps are written
as UTC ``xsd:dateTime`` with every stored microsecond. Exports stream rows from SQL and write
the stored N-Triples text as it is; frames come in time order, each frame's triples sorted, so
an export depends only on the stored frames.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import TextIO

from rdflib.namespace import RDF
from sqlalchemy import Engine, select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import FORMATS, PROV_GENERATED_AT, RSP_START
from rsp_jobs.ingest.tardf import DSV, read_tardf
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import LoadReport, write_batch
from rsp_jobs.store.invariant import invariants_about, write_invariants
from rsp_jobs.store.models import Frame, FrameTriple, Stream
from rsp_jobs.terms import XSD_DATETIME
from rsp_jobs.times import datetime_lexical, xsd_datetime

DSV_DATA_STREAM = DSV + "DataStream"
DSV_FRAME = DSV + "Frame"
DSV_BELONGS_TO = DSV + "belongsTo"
DSV_HAS_TIMESTAMP = DSV + "hasTimestamp"
RDF_TYPE = str(RDF.type)
PROV = "http://www.w3.org/ns/prov#"
RSP = "urn:rsp:ns:"
XSD = "http://www.w3.org/2001/XMLSchema#"
EXPORT_FORMATS = ("trig", "nquads")

ROWS_PER_FETCH = 10_000  # rows a server-side cursor hands over at a time

Out = str | Path | TextIO


@dataclass(frozen=True)
class ExportReport:
    frames: int
    triples: int  # frame triples, without the default graph's TA-RDF statements


@dataclass(frozen=True)
class _StoredFrame:
    ts: datetime
    iri: str
    triples: list[tuple[str, str, str]]  # N-Triples text, sorted
    start: datetime | None = None  # the interval start of its events; None: the instant ts


def _graphs(frame: _StoredFrame, events: list[tuple[str, str, str, datetime | None]]):
    """A stored frame as the graphs an export writes: one per interval start of its events,
    instants first, then by start; the first is named by the frame IRI (see the module doc)."""
    by_start: dict[datetime | None, list[tuple[str, str, str]]] = {}
    for s, p, o, start in events:
        by_start.setdefault(start, []).append((s, p, o))
    starts = sorted(by_start, key=lambda t: (t is not None, t or frame.ts)) or [None]
    for i, start in enumerate(starts):
        iri = frame.iri if i == 0 else f"{frame.iri}/interval/{datetime_lexical(start or frame.ts)}"
        yield _StoredFrame(frame.ts, iri, sorted(by_start.get(start, [])), start)


def export_stream(
    engine: Engine,
    stream_iri: str,
    out: Out,
    fmt: str = "trig",
    start: datetime | None = None,
    end: datetime | None = None,
) -> ExportReport:
    """Write the frames of ``stream_iri`` with ``start <= ts < end`` (either bound optional) to
    ``out``, a path or a text file, as TriG or N-Quads in time order (see the module doc)."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
    if isinstance(out, str | Path):
        out = Path(out)
        implied = FORMATS.get(out.suffix.lower())
        if implied not in (None, fmt):  # the reader picks the format by suffix: the two must agree
            raise ValueError(f"{out}: a {out.suffix} file holds {implied}, not {fmt}")
    with engine.connect() as conn:
        stream_id = conn.execute(select(Stream.id).where(Stream.iri == stream_iri)).scalar()
        if stream_id is None:
            raise InputError(f"stream <{stream_iri}> is not in the store")
        invariant = invariants_about(conn, f"<{stream_iri}>")
        rows = conn.execution_options(yield_per=ROWS_PER_FETCH).execute(
            _frame_rows(stream_id, start, end)
        )
        with _text_out(out) as handle:
            write = _write_trig if fmt == "trig" else _write_nquads
            return write(handle, stream_iri, _frames(rows), invariant)


def import_stream(engine: Engine, path: str | Path, stream_iri: str | None = None) -> LoadReport:
    """Load a TA-RDF file (Definition 3's translation, an export, or any RSP stream file) into
    the store in one transaction: each stream's frames (default: the streams its frames
    ``dsv:belongsTo``; ``stream_iri`` loads a one-stream file into that stream instead) and its
    time-invariant statements. Frames are loaded as by ``load_batch``: idempotent, merged with
    the frames stored at the same (stream, time), what is malformed quarantined."""
    tardf = read_tardf(path, stream_iri)
    with write_transaction(engine) as conn:
        reports = [write_batch(conn, batch) for batch in tardf.batches.values()]
        invariant = write_invariants(conn, tardf.source, tardf.invariant)
    totals = {
        f.name: sum(getattr(r, f.name) for r in reports)
        for f in fields(LoadReport)
        if f.name != "invariant"
    }
    return LoadReport(**totals, invariant=invariant)


# --- export -------------------------------------------------------------------------------


def _frame_rows(stream_id: int, start: datetime | None, end: datetime | None):
    """One row per triple, frames in time order along the (stream_id, ts) index; an outer join
    so that a frame without triples is still exported as a frame."""
    query = (
        select(
            Frame.id,
            Frame.ts,
            Frame.frame_iri,
            FrameTriple.s,
            FrameTriple.p,
            FrameTriple.o,
            FrameTriple.start,
        )
        .select_from(Frame)
        .outerjoin(FrameTriple, FrameTriple.frame_id == Frame.id)
        .where(Frame.stream_id == stream_id)
        .order_by(Frame.ts)
    )
    if start is not None:
        query = query.where(Frame.ts >= _aware(start))
    if end is not None:
        query = query.where(Frame.ts < _aware(end))
    return query


def _frames(rows: Iterable) -> Iterator[list[_StoredFrame]]:
    """Each stored frame as the graphs it is written as (``_graphs``)."""
    for _, group in itertools.groupby(rows, key=lambda row: row.id):
        first = next(group)
        events = [
            (row.s, row.p, row.o, row.start)
            for row in itertools.chain([first], group)
            if row.s is not None
        ]
        yield list(_graphs(_StoredFrame(first.ts, first.frame_iri, []), events))


def _write_trig(
    out: TextIO,
    stream_iri: str,
    frames: Iterable[list[_StoredFrame]],
    invariant: list[tuple[str, str, str]],
) -> ExportReport:
    out.write(
        f"# TA-RDF export of stream <{stream_iri}>\n"
        f"@prefix dsv: <{DSV}> .\n@prefix prov: <{PROV}> .\n@prefix xsd: <{XSD}> .\n"
        f"@prefix rsp: <{RSP}> .\n\n"
        f"<{stream_iri}> a dsv:DataStream .\n"
    )
    out.writelines(f"{s} {p} {o} .\n" for s, p, o in invariant)
    count = triples = 0
    for graphs in frames:
        for frame in graphs:
            graph = f"<{frame.iri}>"
            if frame.triples:
                out.write(f"\n{graph} {{\n")
                out.writelines(f"  {s} {p} {o} .\n" for s, p, o in frame.triples)
                out.write("}\n")
            stamp = f'"{xsd_datetime(frame.ts)}"^^xsd:dateTime'
            start = (
                ""
                if frame.start is None
                else f' ;\n  rsp:start "{xsd_datetime(frame.start)}"^^xsd:dateTime'
            )
            out.write(
                f"{graph} a dsv:Frame ;\n  dsv:belongsTo <{stream_iri}> ;\n"
                f"  dsv:hasTimestamp {stamp} ;\n  prov:generatedAtTime {stamp}{start} .\n"
            )
            out.writelines(f"{s} {p} {o} .\n" for s, p, o in _translation(stream_iri, frame))
            triples += len(frame.triples)
        count += 1
    return ExportReport(count, triples)


def _write_nquads(
    out: TextIO,
    stream_iri: str,
    frames: Iterable[list[_StoredFrame]],
    invariant: list[tuple[str, str, str]],
) -> ExportReport:
    stream = f"<{stream_iri}>"
    out.write(f"# TA-RDF export of stream {stream}\n{stream} <{RDF_TYPE}> <{DSV_DATA_STREAM}> .\n")
    out.writelines(f"{s} {p} {o} .\n" for s, p, o in invariant)
    count = triples = 0
    for graphs in frames:
        for frame in graphs:
            graph = f"<{frame.iri}>"
            out.writelines(f"{s} {p} {o} {graph} .\n" for s, p, o in frame.triples)
            stamp = f'"{xsd_datetime(frame.ts)}"^^<{XSD_DATETIME}>'
            out.write(
                f"{graph} <{RDF_TYPE}> <{DSV_FRAME}> .\n{graph} <{DSV_BELONGS_TO}> {stream} .\n"
                f"{graph} <{DSV_HAS_TIMESTAMP}> {stamp} .\n{graph} <{PROV_GENERATED_AT}> {stamp} .\n"
            )
            if frame.start is not None:
                out.write(
                    f'{graph} <{RSP_START}> "{xsd_datetime(frame.start)}"^^<{XSD_DATETIME}> .\n'
                )
            out.writelines(f"{s} {p} {o} .\n" for s, p, o in _translation(stream_iri, frame))
            triples += len(frame.triples)
        count += 1
    return ExportReport(count, triples)


def _translation(stream_iri: str, frame: _StoredFrame) -> list[tuple[str, str, str]]:
    """Definition 3 of the frame's TA-RDF statements: a frame triple about the stream (or the
    frame) is ``S[t] p o``, written ``F p o``; so is one with the stream in the object."""
    own = {f"<{stream_iri}>", f"<{frame.iri}>"}
    name = f"<{frame.iri}>"
    out = []
    for s, p, o in frame.triples:
        if s in own or o in own:
            triple = (name if s in own else s, p, name if o in own else o)
            if triple not in out:
                out.append(triple)
    return out


@contextmanager
def _text_out(out: Path | TextIO) -> Iterator[TextIO]:
    if isinstance(out, Path):
        with open(out, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
    else:
        yield out


def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(
            f"naive datetime {ts.isoformat()}: give its time zone (the store keeps UTC)"
        )
    return ts
