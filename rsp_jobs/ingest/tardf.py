"""Read TA-RDF files: the plain-RDF translation of Definition 3 and the RSP frame form.

Rodriguez, McGrath, Liu, Myers, "Semantic Management of Streaming Data" (SSN 2009), §5,
Definition 3: a TA-RDF triple ``<s[ts], p, o[to]>`` is in RDF ``<rs, p, ro>`` where ``rs`` is a
frame resource with ``<rs dsv:belongsTo s>`` and ``<rs dsv:hasTimestamp ts>``, "or ts = dsv:Nil
and rs = s". So, in a file:

* a *frame* is any IRI or blank node ``F`` of the default graph with ``F dsv:belongsTo S``; it
  has exactly one ``dsv:hasTimestamp`` (restriction 2(i), (iii)), an ``xsd:dateTime``, an
  ``xsd:date`` (its first instant) or ``dsv:Nil``, and belongs to one stream (2(ii)). A frame
  that breaks a restriction is rejected whole, with the restriction named. The older exports'
  ``prov:generatedAtTime`` is accepted as the timestamp when ``dsv:hasTimestamp`` is absent.
  ``F rsp:start s`` (one ``xsd:dateTime``, not after the frame's time) makes the statements of
  ``F`` derived events over [s, t] (EP-SPARQL §3.2; ``store.tardf`` writes it), each element
  keeping ``s`` as its start; a frame at Nil has no interval.
* the default graph's statements about a frame (``F p o``, ``x p F``) are the TA-RDF triples
  ``S[t] p o``: they go into the stream's frame at t, with ``F`` written as ``S`` (the frame's
  state is the stream's state at t; a blank-node frame is named ``<S>/frame/<t>``, as
  C-SPARQL's timestamped triples are). A frame at ``dsv:Nil`` states time-invariant facts.
* a named graph ``F`` holds the frame's triples as they are (the RSP form ``rsp export`` writes
  beside the translation; a statement already in the graph is not added again from the
  default graph);
* every other statement of the default graph is time-invariant (all its resources at Nil):
  a ``TimeInvariant`` statement, stored once and seen from every frame it is about
  (restriction 1).

Frames of several streams may share one file: each stream gets its batch. Two frames of one
stream at one time are one frame (restriction 2(iv)), named by the first. A file without any
``dsv:belongsTo`` is an RSP stream file (``rdf_stream``), read for the stream the caller names;
its default graph's other statements are time-invariant too.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rdflib import Literal, URIRef
from rdflib.namespace import RDF
from rdflib.term import Node

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import (
    PROV_GENERATED_AT,
    RSP_START,
    Element,
    Part,
    Rejection,
    Statement,
    StreamBatch,
    _to_frames,
    frame_checksum,
    future_horizon,
    many_small_objects,
    past_horizon,
    read_statements,
)
from rsp_jobs.terms import DSV, XSD_DATE, numeric_value, time_interval, time_value, to_nt
from rsp_jobs.times import datetime_lexical

DSV_DATA_STREAM = URIRef(DSV + "DataStream")
DSV_FRAME = URIRef(DSV + "Frame")
DSV_BELONGS_TO = URIRef(DSV + "belongsTo")
DSV_HAS_TIMESTAMP = URIRef(DSV + "hasTimestamp")
DSV_NIL = URIRef(DSV + "Nil")
DEFAULT_GRAPH = (
    "urn:x-rsp:default-graph"  # the graph a part from the default graph is recorded with
)
NIL = "Nil"


@dataclass(frozen=True)
class TimeInvariant:
    """A time-invariant statement: N-Triples text and the object's typed values."""

    s: str
    p: str
    o: str
    o_num: float | None
    o_time: datetime | None
    line: int | None


@dataclass
class TardfFile:
    """What a TA-RDF file holds: each stream's frames, the time-invariant statements, and the
    rejections that concern no single stream (they are recorded with the first stream)."""

    source: str
    batches: dict[str, StreamBatch] = field(default_factory=dict)
    invariant: list[TimeInvariant] = field(default_factory=list)


@many_small_objects()
def read_tardf(path: str | Path, stream_iri: str | None = None) -> TardfFile:
    """Read a TA-RDF file (see the module doc). ``stream_iri``: the stream an RSP stream file's
    frames belong to, or the stream a Definition 3 file's frames are loaded into instead of
    the one they name (the file must then name one)."""
    path = Path(path)
    probe = StreamBatch(stream=stream_iri or "", source=str(path))
    statements = read_statements(path, probe)
    declared = [st for st in statements if st.graph is None and st.p == DSV_BELONGS_TO]
    if not declared:
        if stream_iri is None:
            raise InputError(
                f"{path}: no frame dsv:belongsTo a stream; give the stream IRI to import into"
            )
        outside: list[Statement] = []
        _to_frames(statements, probe, outside)
        result = TardfFile(str(path), {stream_iri: probe})
        result.invariant = [_stated(st) for st in outside]
        return result
    return _Reader(path, statements, probe.rejections, stream_iri).read()


def _stated(st: Statement) -> TimeInvariant:
    """A statement as it was read, a time-invariant one (its N-Triples text and values are made)."""
    return TimeInvariant(*st.nt, *st.values, st.line)


def _invariant(s, p, o, line) -> TimeInvariant:
    return TimeInvariant(to_nt(s), to_nt(p), to_nt(o), numeric_value(o), time_value(o), line)


def frame_time(term) -> datetime | str | None:
    """A dsv:hasTimestamp value: a UTC datetime, ``NIL`` for dsv:Nil, None when neither."""
    if term == DSV_NIL:
        return NIL
    if isinstance(term, Literal) and term.datatype is not None and str(term.datatype) == XSD_DATE:
        interval = time_interval(str(term), date=True)
        return interval[0] if interval else None
    return time_value(term)


class _Reader:
    """Definition 3, applied to one file's statements."""

    def __init__(
        self,
        path: Path,
        statements: list[Statement],
        rejections: list[Rejection],
        stream_iri: str | None,
    ):
        self.path, self.source = path, str(path)
        self.statements = statements
        self.file_rejections = list(rejections)
        self.stream_iri = stream_iri

    def read(self) -> TardfFile:
        frames = self._frames()
        streams = sorted({str(s) for s, _ in frames.values()})
        if self.stream_iri is not None:
            if len(streams) > 1:
                raise InputError(
                    f"{self.path}: its frames belong to {len(streams)} streams "
                    f"({', '.join(f'<{s}>' for s in streams[:5])}); import it without a stream IRI"
                )
            frames = {f: (URIRef(self.stream_iri), t) for f, (_, t) in frames.items()}
            streams = [self.stream_iri]
        result = TardfFile(
            self.source, {s: StreamBatch(stream=s, source=self.source) for s in streams}
        )
        timed = {f: (s, t) for f, (s, t) in frames.items() if isinstance(t, datetime)}  # not NIL
        names = self._frame_names(timed)
        # frame -> statements
        content: dict[Node, list[tuple[int, Statement, tuple]]] = defaultdict(list)
        in_graph: dict[Node, set] = defaultdict(set)
        strays: dict[Node, list[Statement]] = {}  # named graphs that are no frame
        for pos, st in enumerate(self.statements):
            if st.graph is not None:
                if st.graph in self.problems:
                    continue  # counted in the frame's rejection
                owner = st.graph if st.graph in frames else None
                if owner is None:
                    strays.setdefault(st.graph, []).append(st)
                elif frames[owner][1] == NIL:
                    result.invariant.append(_stated(st))
                else:
                    content[owner].append((pos, st, (st.s, st.p, st.o)))
                    in_graph[owner].add(st.nt)
                continue
            if self._metadata(st, frames):
                continue
            owner = st.s if st.s in frames else st.o if st.o in frames else None
            if owner is None:
                result.invariant.append(_stated(st))
                continue
            stream, ts = frames[owner]
            s = stream if st.s in frames else st.s  # F written as its stream (see the module doc)
            o = (
                (stream if frames[st.o][1] == ts else URIRef(names.get(st.o, str(st.o))))
                if st.o in frames
                else st.o
            )
            if ts == NIL:
                result.invariant.append(_invariant(s, st.p, o, st.line))
            else:
                content[owner].append((pos, st, (s, st.p, o, "default")))
        for graph, held in strays.items():
            self.file_rejections.append(
                Rejection(
                    self.source,
                    held[0].line,
                    f"graph {to_nt(graph)} is not a frame: the default graph gives it "
                    "no dsv:belongsTo",
                    len(held),
                    to_nt(graph),
                )
            )
        for frame, stated in content.items():
            stream, ts = timed[frame]
            self._add_frame(
                result.batches[str(stream)], names[frame], ts, frame, stated, in_graph[frame]
            )
        for batch in result.batches.values():
            batch.elements.sort(key=lambda e: (e.ts, e.pos))
        if streams:
            result.batches[streams[0]].rejections[:0] = self.file_rejections
        elif self.file_rejections:
            raise InputError(f"{self.path}: {self.file_rejections[0]}")
        return result

    # ----------------------------------------------------------------------------- frames

    def _frames(self) -> dict[Node, tuple[URIRef, datetime | str]]:
        """Frame resource → (stream, time or NIL), after TA-RDF restriction 2."""
        streams: defaultdict[Node, set[Node]] = defaultdict(set)
        stamps: defaultdict[Node, set[Node]] = defaultdict(set)
        generated: defaultdict[Node, set[Node]] = defaultdict(set)
        started: defaultdict[Node, set[Node]] = defaultdict(set)
        lines: dict[Node, int | None] = {}
        for st in self.statements:
            if st.graph is not None:
                continue
            if st.p == DSV_BELONGS_TO:
                streams[st.s].add(st.o)
                lines.setdefault(st.s, st.line)
            elif st.p == DSV_HAS_TIMESTAMP:
                stamps[st.s].add(st.o)
            elif st.p == PROV_GENERATED_AT:
                generated[st.s].add(st.o)
            elif st.p == RSP_START:
                started[st.s].add(st.o)
        frames: dict[Node, tuple[URIRef, datetime | str]] = {}
        self.starts: dict[Node, datetime] = {}
        problems: dict[Node, str] = {}
        horizon = future_horizon()
        for frame, owners in streams.items():
            name = to_nt(frame)
            values = stamps.get(frame) or generated.get(frame) or set()
            times = {frame_time(v) for v in values}
            owner, when = next(iter(owners)), next(iter(times), None)
            if len(owners) > 1:
                problems[frame] = (
                    f"frame {name} dsv:belongsTo {' and '.join(sorted(map(to_nt, owners)))} "
                    "(TA-RDF restriction 2(ii): a frame belongs to one stream)"
                )
            elif not isinstance(owner, URIRef):
                problems[frame] = (
                    f"frame {name} dsv:belongsTo {to_nt(owner)}, which is not a stream IRI"
                )
            elif not values:
                problems[frame] = f"frame {name} has no dsv:hasTimestamp (TA-RDF restriction 2(i))"
            elif when is None or None in times:
                problems[frame] = (
                    f"frame {name} has a dsv:hasTimestamp that is not an xsd:dateTime, an xsd:date "
                    f"or dsv:Nil: {', '.join(sorted(map(to_nt, values)))}"
                )
            elif len(times) > 1:
                problems[frame] = (
                    f"frame {name} has {len(times)} timestamps "
                    "(TA-RDF restriction 2(iii): a frame has one timestamp)"
                )
            elif (
                stamps.get(frame)
                and generated.get(frame)
                and {frame_time(v) for v in generated[frame]} != times
            ):
                problems[frame] = (
                    f"frame {name} has a dsv:hasTimestamp other than its prov:generatedAtTime"
                )
            elif isinstance(when, datetime) and when > horizon:
                problems[frame] = f"frame {name}'s {past_horizon(when, horizon)}"
            elif reason := self._start_problem(frame, when, started.get(frame, set())):
                problems[frame] = reason
            else:
                frames[frame] = (owner, when)
        self.problems = problems
        for frame, reason in problems.items():
            held = sum(1 for st in self.statements if frame in (st.graph, st.s, st.o))
            self.file_rejections.append(
                Rejection(self.source, lines.get(frame), reason, held, to_nt(frame))
            )
        return frames

    def _start_problem(self, frame, when, values: set) -> str | None:
        """Why a frame's ``rsp:start`` is refused, or None (its start noted in ``starts``)."""
        if not values:
            return None
        name = to_nt(frame)
        starts = {time_value(v) if isinstance(v, Literal) else None for v in values}
        if when == NIL:
            return f"frame {name} is at dsv:Nil and has an rsp:start: a time-invariant frame has no interval"
        if len(values) > 1:
            return f"frame {name} has {len(values)} rsp:start values (one interval per frame)"
        [start] = starts
        if start is None:
            return f"frame {name} has an rsp:start that is not an xsd:dateTime: {to_nt(next(iter(values)))}"
        if isinstance(when, datetime) and start > when:
            return (
                f"frame {name} has rsp:start {datetime_lexical(start)} after its time "
                f"{datetime_lexical(when)} (an event's interval ends at its frame's time)"
            )
        if start != when:
            self.starts[frame] = start
        return None

    def _metadata(self, st: Statement, frames: dict) -> bool:
        """A default-graph statement of the dsv vocabulary about a frame or stream (already
        read), or any statement about a rejected frame (counted in its rejection)."""
        if st.s in self.problems or st.o in self.problems:
            return True
        if st.s in frames and st.p in (
            DSV_BELONGS_TO,
            DSV_HAS_TIMESTAMP,
            PROV_GENERATED_AT,
            RSP_START,
        ):
            return True
        return st.p == RDF.type and st.o in (DSV_FRAME, DSV_DATA_STREAM)

    def _frame_names(self, timed: dict) -> dict[Node, str]:
        """Frame resource → the IRI of the stored frame: the first frame of its (stream, time)
        in the file, a blank node named ``<stream>/frame/<time>``."""
        first: dict[tuple, str] = {}
        names = {}
        for frame, (stream, ts) in timed.items():
            own = (
                str(frame)
                if isinstance(frame, URIRef)
                else f"{stream}/frame/{datetime_lexical(ts)}"
            )
            names[frame] = first.setdefault((str(stream), ts), own)
        return names

    def _add_frame(
        self, batch: StreamBatch, name: str, ts: datetime, frame, stated: list, in_graph: set
    ) -> None:
        """One frame resource's statements into the batch: its named graph's as a part, its
        default-graph statements as another, minus what the graph already states."""
        # graph -> (position, statement, N-Triples, object)
        parts: dict[str, list[tuple[int, Statement, tuple[str, str, str], Node]]] = defaultdict(
            list
        )
        for pos, st, triple in stated:
            graph = DEFAULT_GRAPH if len(triple) == 4 else str(frame)
            nt = (to_nt(triple[0]), to_nt(triple[1]), to_nt(triple[2]))
            if graph == DEFAULT_GRAPH and (
                nt in in_graph or (to_nt(frame), nt[1], nt[2]) in in_graph
            ):
                continue  # the translation of a triple the frame's graph states
            parts[graph].append((pos, st, nt, triple[2]))
        start = self.starts.get(frame)  # its events' interval start; None: the instant ts
        # the same triple over another interval is another event (EP-SPARQL §3.2)
        known = {(e.s, e.p, e.o, e.start) for e in batch.elements if e.frame == name}
        for graph, items in parts.items():
            # a part is keyed by its graph: the default graph's statements about one frame
            # resource are named after both
            delivered = f"{DEFAULT_GRAPH}#{to_nt(frame)}" if graph == DEFAULT_GRAPH else str(frame)
            batch.parts.append(
                Part(
                    name,
                    ts,
                    delivered,
                    self.source,
                    items[0][1].line,
                    len(items),
                    frame_checksum((*nt, start) for _, _, nt, _ in items),
                )
            )
            for pos, _triple, nt, obj in items:
                if (*nt, start) in known:
                    batch.duplicates[name] += 1
                    continue
                known.add((*nt, start))
                batch.elements.append(
                    Element(
                        batch.stream,
                        ts,
                        name,
                        *nt,
                        numeric_value(obj),
                        time_value(obj),
                        pos,
                        start,
                    )
                )
