"""Read stream files in the RSP data model: TriG or N-Quads where each named graph is one
time-annotated frame and the default graph states its time with
``<frame> prov:generatedAtTime "..."^^xsd:dateTime``.

Nothing is dropped silently: every rejected line or frame is returned as a ``Rejection`` with
the file, the line where known, the reason and how many triples it held, so that
``read == accepted + rejected`` can be checked by whoever loads the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional

from rdflib import Dataset, Graph, Literal, URIRef
from rdflib.exceptions import ParserError
from rdflib.plugins.parsers.notation3 import BadSyntax

from rsp_jobs.errors import InputError
from rsp_jobs.terms import numeric_value, time_value, to_nt

PROV_GENERATED_AT = URIRef("http://www.w3.org/ns/prov#generatedAtTime")
FORMATS = {".trig": "trig", ".nq": "nquads", ".nquads": "nquads"}


@dataclass(frozen=True)
class Element:
    """One stream element in the design's columns."""

    stream: str
    ts: datetime
    frame: str
    s: str
    p: str
    o: str
    o_num: Optional[float]
    o_time: Optional[datetime]


@dataclass(frozen=True)
class Rejection:
    file: str
    line: Optional[int]
    reason: str
    triples: int = 1
    text: str = ""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


@dataclass
class StreamBatch:
    """What one file yielded: accepted elements and everything rejected, with counts."""

    stream: str
    source: str
    elements: list[Element] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return len({e.frame for e in self.elements})

    @property
    def rejected_triples(self) -> int:
        return sum(r.triples for r in self.rejections)


def stream_format(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise InputError(f"{path}: unknown stream file type '{path.suffix}'; "
                         f"expected one of {', '.join(sorted(FORMATS))}") from None


def read_stream_file(path: str | Path, stream_iri: str) -> StreamBatch:
    """Parse one stream file into elements of ``stream_iri``, rejecting what is malformed."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: stream file not found")
    fmt = stream_format(path)
    batch = StreamBatch(stream=stream_iri, source=str(path))
    if fmt == "nquads":
        dataset = _parse_nquads_lines(path, batch)
    else:
        dataset = Dataset()
        try:
            dataset.parse(path, format="trig")
        except (BadSyntax, ParserError, SyntaxError) as exc:
            raise InputError(f"{path}:{_error_line(exc)}: not valid TriG: {_error_text(exc)}") from exc
    _frames_to_elements(dataset, batch)
    return batch


def _parse_nquads_lines(path: Path, batch: StreamBatch) -> Dataset:
    """N-Quads are line based, so a bad line is quarantined on its own and the rest is kept."""
    text = path.read_text(encoding="utf-8")
    dataset = Dataset()
    try:
        dataset.parse(data=text, format="nquads")
        return dataset
    except Exception:  # rdflib raises several kinds; find the offending lines one by one
        pass
    good = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            Dataset().parse(data=line + "\n", format="nquads")
            good.append(line)
        except Exception as exc:
            batch.rejections.append(Rejection(str(path), number, f"malformed N-Quads line: {_error_text(exc)}",
                                              1, line[:500]))
    dataset = Dataset()
    dataset.parse(data="\n".join(good) + "\n", format="nquads")
    return dataset


def _frames_to_elements(dataset: Dataset, batch: StreamBatch) -> None:
    default = dataset.default_graph
    stamps: dict[URIRef, list] = {}
    for frame, _, stamp in default.triples((None, PROV_GENERATED_AT, None)):
        stamps.setdefault(frame, []).append(stamp)
    seen_times: dict[datetime, str] = {}

    def time_order(graph: Graph) -> tuple:
        """Frames leave in time order (the input gate checks it), ties and untimed by IRI."""
        times = stamps.get(graph.identifier, [])
        ts = time_value(times[0]) if len(times) == 1 and isinstance(times[0], Literal) else None
        return (ts is None, ts or datetime.min.replace(tzinfo=timezone.utc), str(graph.identifier))

    for graph in sorted(_named_graphs(dataset), key=time_order):
        frame = graph.identifier
        triples = len(graph)
        if not triples:
            continue
        times = stamps.get(frame, [])
        reason = _frame_time_problem(frame, times)
        if reason:
            batch.rejections.append(Rejection(batch.source, None, reason, triples))
            continue
        ts = time_value(times[0])
        if ts in seen_times:
            batch.rejections.append(Rejection(
                batch.source, None,
                f"frame <{frame}> has the same timestamp {ts.isoformat()} as frame <{seen_times[ts]}>"
                " (a stream has one frame per timestamp)", triples))
            continue
        seen_times[ts] = str(frame)
        frame_nt = str(frame)
        for s, p, o in graph:
            batch.elements.append(Element(batch.stream, ts, frame_nt, to_nt(s), to_nt(p), to_nt(o),
                                          numeric_value(o), time_value(o)))
    extra = [t for t in default if t[1] != PROV_GENERATED_AT]
    if extra:
        batch.rejections.append(Rejection(batch.source, None,
                                          "triples in the default graph other than prov:generatedAtTime"
                                          " belong to no frame", len(extra)))


def _named_graphs(dataset: Dataset) -> Iterator[Graph]:
    for graph in dataset.graphs():
        if graph.identifier != dataset.default_graph.identifier:
            yield graph


def _frame_time_problem(frame, times: list) -> Optional[str]:
    if not times:
        return f"frame <{frame}> has no prov:generatedAtTime in the default graph"
    if len(times) > 1:
        return f"frame <{frame}> has {len(times)} prov:generatedAtTime values"
    if not isinstance(times[0], Literal) or time_value(times[0]) is None:
        return f"frame <{frame}> has a prov:generatedAtTime that is not an xsd:dateTime: {times[0]!s}"
    return None


def _error_line(exc: Exception) -> str:
    if isinstance(exc, BadSyntax):
        return str(exc.lines + 1)  # rdflib counts the lines before the error
    line = getattr(exc, "line", None)
    return str(line) if line is not None else "?"


def _error_text(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]
