"""Read stream files in the RSP data model.

Two serializations of an RDF stream are read, in TriG or N-Quads files:

- **frames**: each named graph is a time-annotated graph, and the default graph states its time
  with ``<graph> prov:generatedAtTime "..."^^xsd:dateTime``;
- **timestamped triples** (C-SPARQL, Barbieri et al. 2009, §3.1: "N-Quads ... we use as context
  the timestamp encoded as a RDF literal of type xsd:dateTime"): an N-Quads line whose fourth
  term is that literal is a triple of the stream at that time.

C-SPARQL §3.1: "Any (unbounded, though finite) number of consecutive triples can have the same
timestamp, meaning that they occur at the same time, although sequenced in the stream according
to some positional order." TA-RDF (Rodriguez et al. 2009, restriction 2(iii)-(iv)): a stream has
one frame per time. So every graph and every timestamped triple of one time is a *part* of the
one frame of that time: parts are merged (their union of triples), never dropped. The frame is
named by its first part in the file (a named graph's IRI, or ``<stream>/frame/<time>`` for
timestamped triples); each part keeps its graph IRI, file and line for provenance
(``Part``), and each triple its position in the file (``Element.pos``), which orders the
triples of one time for ``[TRIPLES n]`` windows.

A frame is an RDF graph: a triple stated again in the same frame (in the same part or another)
is in it once; the repeat is counted (``StreamBatch.duplicates``), not lost. Nothing is dropped
silently: every rejected line or graph is a ``Rejection`` with the file, the line where known,
the reason and how many triples it held, so that for every file
``read == accepted + duplicates + rejected`` (``StreamBatch.read_triples``).
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.exceptions import ParserError
from rdflib.plugins.parsers.notation3 import BadSyntax, RDFSink
from rdflib.plugins.parsers.ntriples import W3CNTriplesParser, r_nodeid, r_tail, r_wspace
from rdflib.plugins.parsers.trig import TrigSinkParser
from rdflib.term import Node

from rsp_jobs import settings
from rsp_jobs.errors import InputError
from rsp_jobs.terms import numeric_value, time_value, to_nt
from rsp_jobs.textfile import decode
from rsp_jobs.times import datetime_lexical, to_us

PROV_GENERATED_AT = URIRef("http://www.w3.org/ns/prov#generatedAtTime")
# a graph's interval start: its triples are derived events over [start, its generatedAtTime]
# (EP-SPARQL §3.2; what ``rsp export`` writes of a REGISTER STREAM pattern's matches)
RSP_START = URIRef("urn:rsp:ns:start")
FORMATS = {".trig": "trig", ".nq": "nquads", ".nquads": "nquads"}
# The reason of the rejection that holds the default graph's triples other than frame times
# (store.tardf takes TA-RDF statements out of it on import).
OUTSIDE_FRAMES = (
    "triples in the default graph other than prov:generatedAtTime and rsp:start belong to no frame"
)


# Element and Statement are made a million times a file: slotted, and hashable by value like
# a frozen dataclass, but without frozen's __init__ (five times as slow); nothing assigns to them.
@dataclass(slots=True, unsafe_hash=True)
class Element:
    """One stream element in the design's columns; ``pos``: the triple's position in its file
    (the first statement of it in its frame), C-SPARQL's positional order within one time."""

    stream: str
    ts: datetime
    frame: str
    s: str
    p: str
    o: str
    o_num: float | None
    o_time: datetime | None
    pos: int = 0
    start: datetime | None = (
        None  # a derived event's interval start (EP-SPARQL 3.2); None: [ts, ts]
    )


@dataclass(frozen=True)
class Part:
    """One delivered piece of a frame: a named graph, or the triples of one timestamp literal,
    of one file. ``statements``: how many triples it stated (repeats included); ``checksum``:
    ``frame_checksum`` of its distinct triples, which tells a re-delivered part from a changed one."""

    frame: str  # the IRI of the frame it is part of
    ts: datetime
    graph: str  # the graph's IRI as delivered (the frame's own IRI for its first part)
    source: str
    line: int | None
    statements: int
    checksum: str


@dataclass(frozen=True)
class Rejection:
    file: str
    line: int | None
    reason: str
    triples: int = 1
    text: str = ""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


@dataclass
class StreamBatch:
    """What one file yielded: accepted elements (each frame a set of triples), the parts each
    frame was merged from, repeated triples counted per frame, and everything rejected.
    ``order``: where the file comes among its stream's files (delivery order), which orders
    triples of one time that several files bring (``Lake.write``)."""

    stream: str
    source: str
    elements: list[Element] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    duplicates: Counter = field(default_factory=Counter)  # frame IRI -> statements already in it
    order: int = 0
    sha256: str | None = (
        None  # of the bytes that were parsed: what a caller compares a file's checksum to
    )

    @property
    def frames(self) -> int:
        return len({e.frame for e in self.elements})

    @property
    def rejected_triples(self) -> int:
        return sum(r.triples for r in self.rejections)

    @property
    def read_triples(self) -> int:
        """Every triple statement the file held: accepted, repeated within a frame, or rejected."""
        return len(self.elements) + sum(self.duplicates.values()) + self.rejected_triples

    def drop_frames(self, frames: dict[str, str], source: str | None = None) -> int:
        """Move whole frames (IRI -> reason) to the rejections (of ``source``, default the
        batch's), repeats included; returns the number of elements removed."""
        counts = Counter(e.frame for e in self.elements if e.frame in frames)
        self.elements = [e for e in self.elements if e.frame not in frames]
        self.parts = [p for p in self.parts if p.frame not in frames]
        for frame, reason in frames.items():
            self.rejections.append(
                Rejection(
                    source or self.source,
                    None,
                    reason,
                    counts[frame] + self.duplicates.pop(frame, 0),
                    frame,
                )
            )
        return sum(counts.values())


def stream_format(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"{path}: unknown stream file type '{path.suffix}'; "
            f"expected one of {', '.join(sorted(FORMATS))}"
        ) from None


@contextmanager
def many_small_objects():
    """Pause Python's cyclic garbage collector while a file's statements and elements are
    made. They are hundreds of thousands of small objects without cycles (reference counting
    frees them), and each few hundred of them would start a collection that walks all those
    made so far: with it running, reading a day of CityBench (180k triples) into the lake
    took 2.5 s instead of 1.4 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@many_small_objects()
def read_stream_file(
    path: str | Path, stream_iri: str, order: int = 0, outside: list[Statement] | None = None
) -> StreamBatch:
    """Parse one stream file into elements of ``stream_iri``, rejecting what is malformed;
    ``order``: the file's place among the stream's files (see ``StreamBatch``)."""
    batch = StreamBatch(stream=stream_iri, source=str(Path(path)), order=order)
    _to_frames(read_statements(path, batch), batch, outside)
    return batch


def chunk_bytes() -> int:
    """How much of an N-Quads file is parsed at a time (``RSP_STREAM_CHUNK_BYTES``, default
    8 MiB): a larger file is read in chunks of whole frames (``read_stream_chunks``)."""
    text = os.environ.get("RSP_STREAM_CHUNK_BYTES", str(8 << 20)).strip()
    if not text.isdigit() or int(text) <= 0:
        raise InputError(f"RSP_STREAM_CHUNK_BYTES: a positive number of bytes, got {text!r}")
    return int(text)


def read_stream_chunks(
    path: str | Path, stream_iri: str, order: int = 0, limit: int | None = None
) -> Iterator[StreamBatch]:
    """``read_stream_file`` in batches of whole frames, so that a large file is never held
    whole: each batch holds every part of the frames it holds (all graphs and timestamped
    triples of their times), and together they hold what ``read_stream_file`` returns (the same
    elements, positions, repeats and rejections; the rejections in another order). An N-Quads
    file larger than ``chunk_bytes()`` is read three times (hashed; its graphs' times and last
    lines noted; then parsed, each frame handed on once its last line was read, in batches of
    about ``chunk_bytes()`` of lines), and what stays in memory between batches is a few
    values per frame and the frames whose lines are still to come: one batch's worth for a file
    in time order. Anything else is read whole: a TriG file, as rdflib's parser names a blank
    node label once per document. ``limit``: another size than ``chunk_bytes()``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: stream file not found")
    limit = limit or chunk_bytes()
    if stream_format(path) != "nquads" or path.stat().st_size <= limit:
        yield read_stream_file(path, stream_iri, order)
        return
    with many_small_objects():
        yield from _nquads_chunks(path, stream_iri, order, limit)


KNOWN_TOKENS = 20_000
NO_TIME = -(
    1 << 63
)  # a graph's time when it has none, or several  # tokens a chunked read keeps parsed; past it they are parsed again

# what a chunked read gathers a graph's statements under: its frame's time (µs), or the graph
# alone when it has no time
_Group = int | tuple[str, Node]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, as ``text.splitlines()`` of the decoded file numbers them;
    a byte that is not UTF-8 is the InputError ``decode`` raises for the whole file."""
    number, offset = 0, 0
    with path.open("rb") as raw:
        for data in raw:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = offset + exc.start
                with path.open("rb") as again:
                    line = again.read(bad).count(b"\n") + 1
                raise InputError(
                    f"{path}:{line}: the stream file is not UTF-8 text "
                    f"(byte {bad}: {data[exc.start : exc.start + 1]!r})"
                ) from None
            offset += len(data)
            for piece in text.splitlines():
                number += 1
                yield number, piece


def _nquads_chunks(path: Path, stream_iri: str, order: int, limit: int) -> Iterator[StreamBatch]:
    source = str(path)
    sha1, sha256, may_hold_nul = hashlib.sha1(), hashlib.sha256(), False
    with path.open("rb") as raw:
        for data in iter(lambda: raw.read(1 << 20), b""):
            sha1.update(data)
            sha256.update(data)
    with path.open("rb") as raw:  # line by line, so that no escape is cut in two
        may_hold_nul = any(
            b"\x00" in data or b"\\u0000" in data or b"\\U00000000" in data for data in raw
        )
    salt, digest, max_literal = (
        sha1.hexdigest()[:12],
        sha256.hexdigest(),
        settings.max_literal_bytes(),
    )

    def statements(batch: StreamBatch) -> Iterator[tuple[int, Statement, int]]:
        """(position, statement, line length) of each statement the store can keep."""
        parser, pos = _QuadLine(salt), 0
        for number, line in _lines(path):
            # a term per line (frame IRIs, readings) would fill it
            if len(parser.known) > KNOWN_TOKENS:
                parser.known.clear()
            try:
                st = parser.quad(line, number)
            except (ParserError, ValueError) as exc:
                batch.rejections.append(
                    Rejection(
                        source, number, f"malformed N-Quads line: {_error_text(exc)}", 1, line[:500]
                    )
                )
                continue
            if st is None:
                continue
            if (
                may_hold_nul or (isinstance(st.o, Literal) and len(st.o) > max_literal // 4)
            ) and not _keep(st, batch, max_literal):
                continue
            yield pos, st, len(line)
            pos += 1

    # first reading: each graph's last position, and the frame times the default graph states
    # (as µs; NO_TIME when not one xsd:dateTime): a few small values per frame
    last: dict[Node, int] = {}
    stamps: dict[object, int] = {}  # subject -> its time
    stamped: dict[object, int] = {}  # subject -> where its last time was stated
    for pos, st, _ in statements(StreamBatch(stream_iri, source)):
        if st.graph is not None:
            last[st.graph] = pos
        elif st.p == PROV_GENERATED_AT:
            ts = time_value(st.o) if isinstance(st.o, Literal) else None
            stamps[st.s] = NO_TIME if ts is None or st.s in stamps else to_us(ts)
            stamped[st.s] = max(stamped.get(st.s, pos), pos)
        elif st.p == RSP_START:  # read with its graph's frame, so it may close the frame
            stamped[st.s] = max(stamped.get(st.s, pos), pos)
    group_of: dict[Node, _Group] = {}  # graph -> its frame's time (or ("graph", graph): alone)
    closes: dict[_Group, int] = {}  # frame time -> where its last statement is
    while last:
        graph, end = last.popitem()
        if isinstance(graph, Literal):
            label_time = time_value(graph)
            time_us = NO_TIME if label_time is None else to_us(label_time)
        else:
            time_us = stamps.get(graph, NO_TIME)
            end = max(end, stamped.get(graph, end))
        group: _Group = time_us if time_us != NO_TIME else ("graph", graph)
        group_of[graph] = group
        closes[group] = max(closes.get(group, -1), end)
    del stamps, stamped

    # second reading: a frame's statements are handed on once its last one is read
    # what the reading rejects, handed on with the next batch
    found = StreamBatch(stream_iri, source)
    batch = StreamBatch(stream_iri, source, order=order, sha256=digest)
    pending: dict[_Group, list[tuple[int, Statement]]] = {}
    ready: list[tuple[int, Statement]] = []
    ready_bytes, outside, first_outside = 0, 0, None
    sizes: dict[_Group, int] = {}
    for pos, st, size in statements(found):
        if st.graph is not None:
            group = group_of[st.graph]
        elif st.p in (PROV_GENERATED_AT, RSP_START) and st.s in group_of:
            group = group_of[st.s]
        elif st.p in (PROV_GENERATED_AT, RSP_START):
            continue  # the time of a graph that has no triples: no frame, as when read whole
        else:
            outside += 1
            first_outside = first_outside or st.line
            continue
        pending.setdefault(group, []).append((pos, st))
        sizes[group] = sizes.get(group, 0) + size
        if closes[group] == pos:  # the frame's last statement
            ready += pending.pop(group)
            ready_bytes += sizes.pop(group)
        if ready_bytes >= limit:
            batch.rejections += found.rejections
            found.rejections.clear()
            yield _frames_batch(batch, ready)
            batch = StreamBatch(stream_iri, source, order=order, sha256=digest)
            ready, ready_bytes = [], 0
    for rest in pending.values():
        ready += rest
    batch.rejections += found.rejections
    if outside:
        batch.rejections.append(Rejection(source, first_outside, OUTSIDE_FRAMES, outside))
    yield _frames_batch(batch, ready)


def _frames_batch(batch: StreamBatch, statements: list[tuple[int, Statement]]) -> StreamBatch:
    statements.sort(key=lambda item: item[0])
    _to_frames([st for _, st in statements], batch, positions=[pos for pos, _ in statements])
    return batch


def read_statements(path: str | Path, batch: StreamBatch) -> list[Statement]:
    """The statements of a TriG or N-Quads file in order, with their lines; an N-Quads line
    that does not parse goes to ``batch.rejections``, a TriG syntax error is an InputError."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: stream file not found")
    fmt = stream_format(path)
    data = path.read_bytes()
    text = decode(data, path, "stream")
    # blank nodes are named from the file's content, so loading the same file again names them alike
    salt = hashlib.sha1(data).hexdigest()[:12]
    batch.sha256 = hashlib.sha256(data).hexdigest()
    statements = _nquads(text, batch, salt) if fmt == "nquads" else _trig(text, path, salt, batch)
    # a term holds U+0000 only where the text does, as it is or escaped (\u0000, \U00000000)
    return _storable(
        statements, batch, may_hold_nul="\x00" in text or "\\u0000" in text or "\\U00000000" in text
    )


NUL_TERM = "a term holds U+0000 (NUL), which the store cannot keep (PostgreSQL text excludes it)"


def _storable(
    statements: list[Statement], batch: StreamBatch, may_hold_nul: bool
) -> list[Statement]:
    """The statements the store can keep alike on every backend; each other one is rejected:
    a term with U+0000 (SQLite would store it, PostgreSQL refuse it), a literal longer than
    ``RSP_MAX_LITERAL_BYTES``. ``may_hold_nul``: False when the file's text cannot give a
    term U+0000, and then, unless a literal is long, the statements are all kept at once."""
    limit = settings.max_literal_bytes()
    if not may_hold_nul and not any(
        isinstance(st.o, Literal) and len(st.o) > limit // 4 for st in statements
    ):
        return statements
    return [st for st in statements if _keep(st, batch, limit)]


def _keep(st: Statement, batch: StreamBatch, limit: int) -> bool:
    """Whether the store can keep ``st`` (see ``_storable``); if not, it is rejected in ``batch``."""
    s, p, o = st.nt  # N-Triples keeps U+0000 as it is (only \\, ", \n and \r are escaped)
    reason = None
    if (
        "\x00" in s
        or "\x00" in p
        or "\x00" in o
        or (st.graph is not None and "\x00" in str(st.graph))
    ):
        reason = NUL_TERM
    elif (
        isinstance(st.o, Literal)
        and len(st.o) > limit // 4
        and (size := len(str(st.o).encode())) > limit
    ):
        reason = f"a literal of {size} bytes is longer than RSP_MAX_LITERAL_BYTES ({limit})"
    if reason is None:
        return True
    text = " ".join(st.nt).replace("\x00", "\\u0000")
    batch.rejections.append(Rejection(batch.source, st.line, reason, 1, text[:500]))
    return False


@dataclass(slots=True, unsafe_hash=True)
class Statement:
    """A parsed statement: ``graph`` None (default graph), an IRI or blank node, or the
    timestamp literal of C-SPARQL's N-Quads form. ``nt``: the N-Triples text of ``s p o``, and
    ``values``: the object's numeric and time values (the lake's ``o_num``, ``o_time``); a
    reader that has them already passes them, else ``of`` computes them from the terms."""

    graph: Node | None
    s: Node
    p: Node
    o: Node
    line: int | None
    nt: tuple[str, str, str]
    values: tuple[float | None, datetime | None]

    @classmethod
    def of(cls, graph: Node | None, s: Node, p: Node, o: Node, line: int | None) -> Statement:
        """The statement of these terms, its N-Triples text and values computed."""
        return cls(
            graph, s, p, o, line, (to_nt(s), to_nt(p), to_nt(o)), (numeric_value(o), time_value(o))
        )


class _QuadLine(W3CNTriplesParser):
    """rdflib's N-Triples tokenizer over one N-Quads line whose graph label may also be a
    literal (the timestamp context of C-SPARQL §3.1). ``_:label`` is named from the file's
    content and the label, so loading the same file again names its blank nodes alike."""

    def __init__(self, salt: str):
        super().__init__()
        self.salt = salt
        # a token's text -> (term, N-Triples text, values): a stream repeats the same few IRIs
        # and values on every line, and rdflib's Literal (which normalises) costs microseconds
        self.known: dict[str, tuple] = {}

    def nodeid(self, bnode_context=None):
        if not self.peek("_"):
            return False
        return BNode(f"b{self.salt}{self.eat(r_nodeid).group(1)}")

    def quad(self, line: str, number: int) -> Statement | None:
        tokens = line.split(" ")  # most lines: plain tokens between single spaces
        if 4 <= len(tokens) <= 5 and tokens[-1] == ".":
            known, checked = self.known, self._checked
            s = known.get(tokens[0]) or checked(tokens[0])
            p = known.get(tokens[1]) or checked(tokens[1])
            o = known.get(tokens[2]) or checked(tokens[2])
            g = (known.get(tokens[3]) or checked(tokens[3])) if len(tokens) == 5 else _NO_GRAPH
            if s and p and o and g and s[1][0] in "<_" and p[1][0] == "<":
                return Statement(g[0], s[0], p[0], o[0], number, (s[1], p[1], o[1]), o[2])
        plain = _PLAIN_QUAD.match(line)
        if plain is not None:
            known, term = self.known, self._term
            s_token, p_token, o_token, g_token = plain.groups()
            s = known.get(s_token) or term(s_token)
            p = known.get(p_token) or term(p_token)
            o = known.get(o_token) or term(o_token)
            graph = None if g_token is None else (known.get(g_token) or term(g_token))[0]
            return Statement(graph, s[0], p[0], o[0], number, (s[1], p[1], o[1]), o[2])
        self.line = line
        self.eat(r_wspace)
        if not self.line or self.line.startswith("#"):
            return None
        subject = self.subject()
        self.eat(r_wspace)
        predicate = self.predicate()
        self.eat(r_wspace)
        obj = self.object()
        self.eat(r_wspace)
        graph = None  # an empty literal is falsy: test for "no match" (False), not truth
        for read in (self.uriref, self.nodeid, self.literal):
            label = read()
            if label is not False and label is not None:
                graph = label
                break
        self.eat(r_tail)
        if self.line:
            raise ParserError(f"trailing garbage: {self.line[:60]}")
        return Statement.of(graph, subject, predicate, obj, number)

    def _checked(self, token: str) -> tuple | None:
        """``_term`` of a token the split found, if it is one whole plain token (else None: the
        line goes to the one-match path, then to the tokenizer). A token between single spaces
        that is whole is the token the tokenizer reads there, as no plain token holds a space."""
        return self._term(token) if _PLAIN_TOKEN.fullmatch(token) else None

    def _term(self, token: str) -> tuple:
        """A plain token's term, as rdflib's tokenizer makes it, with its N-Triples text and
        values (an IRI or blank node token is its own N-Triples text, a literal is normalised)."""
        found = self.known.get(token)
        if found is None:
            if token[0] == "<":
                found = (URIRef(token[1:-1]), token, _NO_VALUES)
            elif token[0] == "_":
                node = BNode(f"b{self.salt}{token[2:]}")
                found = (node, f"_:{node}", _NO_VALUES)
            else:
                literal = _PLAIN_LITERAL.fullmatch(token)
                if literal is None:  # callers pass the tokens _PLAIN_TOKEN or _PLAIN_QUAD found
                    raise ParserError(f"not a plain token: {token[:60]}")
                lexical, lang, datatype = literal.groups()
                term = Literal(
                    lexical, lang or None, self._term(f"<{datatype}>")[0] if datatype else None
                )
                found = (term, to_nt(term), (numeric_value(term), time_value(term)))
            self.known[token] = found
        return found


_NO_VALUES = (None, None)
# A line of plain tokens (no backslash escape anywhere) between single spaces is split on them
# (``quad``: the eight-day CityBench file parsed in 9-9.5 s instead of 15-16.6 s); any other
# line of plain tokens is read in one match, so that most lines skip the token-by-token
# tokenizer (about three times slower). Each token is rdflib's own N-Triples regex without
# backslashes, in an atomic group: the line splits exactly as the tokenizer eats it, and a line
# the tokenizer rejects is never accepted here (it falls through to it instead).
_IRI = r'<[^:\\]+:[^\s"<>\\]*>'
_BNODE = r"_:[A-Za-z0-9_:](?:[-A-Za-z0-9_:.]*[-A-Za-z0-9_:])?"
_LANG = r"[a-zA-Z]+(?:-[a-zA-Z0-9]+)*"
_LITERAL = rf'"[^"\\]*"(?:@{_LANG}|\^\^{_IRI})?'
_W = r"[ \t]*"
_PLAIN_QUAD = re.compile(
    rf"{_W}((?>{_IRI}|{_BNODE})){_W}((?>{_IRI})){_W}((?>{_IRI}|{_BNODE}|{_LITERAL})){_W}"
    rf"((?>{_IRI}|{_BNODE}|{_LITERAL}))?{_W}\.{_W}(?:#.*)?$"
)
_PLAIN_LITERAL = re.compile(rf'"([^"\\]*)"(?:@({_LANG})|\^\^<([^>]*)>)?')
_PLAIN_TOKEN = re.compile(f"{_IRI}|{_BNODE}|{_LITERAL}")  # fullmatch: one token, whole
_NO_GRAPH = (None,)  # a triple line's graph: the default graph


def _nquads(text: str, batch: StreamBatch, salt: str) -> list[Statement]:
    """N-Quads are line based, so a bad line is quarantined on its own and the rest is kept."""
    parser = _QuadLine(salt)
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            statement = parser.quad(line, number)
        except (ParserError, ValueError) as exc:
            batch.rejections.append(
                Rejection(
                    batch.source,
                    number,
                    f"malformed N-Quads line: {_error_text(exc)}",
                    1,
                    line[:500],
                )
            )
            continue
        if statement is not None:
            out.append(statement)
    return out


_DEFAULT_GRAPH = URIRef(
    "urn:x-rsp:default-graph"
)  # what rdflib's TriG parser names the default graph by


class _RecordingSink(RDFSink):
    """What rdflib's TriG parser states, in order, with the line it had reached."""

    def __init__(self, salt: str):
        super().__init__(Graph(identifier=_DEFAULT_GRAPH))
        self.uuid = salt  # rdflib names anonymous blank nodes n<uuid>b<counter>
        self.parser: TrigSinkParser | None = None
        self.statements: list[Statement] = []

    def makeStatement(self, quadruple, why=None) -> None:
        if self.parser is None:
            raise RuntimeError("_RecordingSink.parser is set before the parser states anything")
        f, p, s, o = quadruple
        graph = (
            None
            if f is self.rootFormula or f is None or f.identifier == _DEFAULT_GRAPH
            else f.identifier
        )
        self.statements.append(
            Statement.of(
                graph,
                self.normalise(f, s),
                self.normalise(f, p),
                self.normalise(f, o),
                self.parser.lines + 1,
            )
        )


# what rdflib's TriG parser raises on bad input (a malformed string is an AssertionError there)
_TRIG_ERRORS = (BadSyntax, ParserError, SyntaxError, AssertionError, ValueError)


def _trig(text: str, path: Path, salt: str, batch: StreamBatch) -> list[Statement]:
    """A TriG file's statements. When the file does not parse, it is read again part by part
    (each directive, graph block and default-graph statement), so that a malformed part is
    quarantined with its line, as a malformed N-Quads line is, and the rest is kept. A file in
    which no graph or statement parses is not TriG at all: an InputError."""
    try:
        return _parse_trig(text, path, salt)
    except _TRIG_ERRORS as exc:
        whole = exc
    statements: list[Statement] = []
    parsed = 0
    directives: list[str] = []
    for number, (line, chunk) in enumerate(_trig_parts(text)):
        # the directives so far on line 1, the part on its own line: its line numbers stay the file's
        prefix = " ".join(directives)
        source = prefix + "\n" * (line - 1) + chunk if line > 1 else prefix + " " + chunk
        try:
            found = _parse_trig(source, path, f"{salt}p{number}")
        except _TRIG_ERRORS as exc:
            where = _error_line(exc)
            batch.rejections.append(
                Rejection(
                    batch.source,
                    int(where) if where.isdigit() else line,
                    f"malformed TriG: {_error_text(exc).split(' at ^ in')[0]}",
                    1,
                    chunk[:500],
                )
            )
            continue
        if _TRIG_DIRECTIVE.match(chunk):
            directives.append(" ".join(chunk.split()))
        else:
            parsed += 1
        statements += found
    if not parsed:
        raise InputError(
            f"{path}:{_error_line(whole)}: not valid TriG: {_error_text(whole)}"
        ) from whole
    return statements


def _parse_trig(text: str, path: Path, salt: str) -> list[Statement]:
    sink = _RecordingSink(salt)
    parser = TrigSinkParser(sink, baseURI=path.resolve().as_uri(), turtle=True)
    sink.parser = parser
    parser.loadBuf(text.encode("utf-8"))
    return sink.statements


# What delimits TriG's top-level parts: comments, IRIs and strings (which may hold braces and
# dots) are skipped whole; braces nest; a dot before a space ends a statement; SPARQL-style
# PREFIX and BASE end with their IRI.
_TRIG_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<iri><[^<>"{}|^`\\\s]*>)
  | (?P<long>"{3}(?:[^"\\]|\\.|"(?!""))*"{3}|'{3}(?:[^'\\]|\\.|'(?!''))*'{3})
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<open>\{) | (?P<close>\}) | (?P<dot>\.(?=\s|\#|$))
  | (?P<keyword>(?<![@\w:])(?i:PREFIX|BASE)\b)
  | (?P<other>[^\s\#<"'{}.]+|[.<"'])
""",
    re.VERBOSE,
)
_TRIG_DIRECTIVE = re.compile(r"\s*(?:@prefix|@base|PREFIX|BASE)\b", re.IGNORECASE)


def _trig_parts(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each top-level part of a TriG document: a directive, a graph
    block ``<g> { ... }`` or a default-graph statement ending in a dot."""
    depth, start, sparql_directive = 0, None, False
    for m in _TRIG_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "comment":
            continue
        if start is None:
            start, sparql_directive = m.start(), kind == "keyword"
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        if (kind == "close" and depth <= 0) or (
            depth == 0 and (kind == "dot" or (kind == "iri" and sparql_directive))
        ):
            yield text.count("\n", 0, start) + 1, text[start : m.end()]
            start, depth = None, 0
    if start is not None:
        yield text.count("\n", 0, start) + 1, text[start:]


@dataclass
class _Part:
    line: int | None
    statements: list[tuple[int, Statement]] = field(default_factory=list)  # (position, statement)


def _to_frames(
    statements: Sequence[Statement],
    batch: StreamBatch,
    outside: list[Statement] | None = None,
    positions: Sequence[int] | None = None,
) -> None:
    """Parts (named graphs, timestamp contexts) → one frame per time, in time order. The
    default graph's other statements are rejected, or collected in ``outside`` when given
    (a TA-RDF import keeps them as time-invariant statements). ``positions``: each statement's
    place in its file (default: its index in ``statements``)."""
    collect = outside
    stamps: dict[object, list] = {}
    starts: dict[Node, list] = {}  # graph -> its rsp:start values, with their lines
    outside = []
    parts: dict[Node, _Part] = {}
    for pos, st in zip(positions, statements) if positions is not None else enumerate(statements):
        if st.graph is None:
            if st.p == PROV_GENERATED_AT:
                stamps.setdefault(st.s, []).append(st.o)
            elif st.p == RSP_START and not isinstance(st.s, Literal):
                starts.setdefault(st.s, []).append((st.o, st.line))
            else:
                outside.append(st)
            continue
        part = parts.get(st.graph)
        if part is None:
            part = parts[st.graph] = _Part(st.line)
        part.statements.append((pos, st))
    timed: list[tuple[datetime, int, str, _Part, datetime | None]] = []
    # time, position, the part's graph IRI, the part, its events' interval start
    horizon = future_horizon()
    for key, part in parts.items():
        if isinstance(key, Literal):
            ts = time_value(key)
            if ts is None:
                batch.rejections.append(
                    Rejection(
                        batch.source,
                        part.line,
                        f"the graph label {to_nt(key)} is neither a graph name nor an "
                        "xsd:dateTime timestamp (C-SPARQL's N-Quads form)",
                        len(part.statements),
                    )
                )
                continue
            graph = f"{batch.stream}/frame/{datetime_lexical(ts)}"
        else:
            reason = _frame_time_problem(key, stamps.get(key, []))
            if reason:
                batch.rejections.append(
                    Rejection(batch.source, part.line, reason, len(part.statements))
                )
                continue
            graph = str(key)
            ts = time_value(stamps[key][0])
            if ts is None:
                raise AssertionError(f"frame <{key}>: _frame_time_problem passed a non-time")
        if ts > horizon:  # a wrong clock or a typo: it must not move the stream's watermark
            batch.rejections.append(
                Rejection(
                    batch.source,
                    part.line,
                    f"the frame's {past_horizon(ts, horizon)}",
                    len(part.statements),
                )
            )
            continue
        start, refused = _interval_start(key, ts, starts.pop(key, []))
        if refused:
            why, line = refused
            batch.rejections.append(
                Rejection(batch.source, line or part.line, why, len(part.statements))
            )
            continue
        timed.append((ts, part.statements[0][0], graph, part, start))
    # the frame of a time is named by its first part in the file; frames leave in time order
    frame_of: dict[datetime, str] = {}
    seen: dict[str, set] = {}
    for ts, _, graph, part, start in sorted(timed, key=lambda item: (item[0], item[1])):
        frame = frame_of.setdefault(ts, graph)
        triples = seen.setdefault(frame, set())
        batch.parts.append(
            Part(
                frame,
                ts,
                graph,
                batch.source,
                part.line,
                len(part.statements),
                frame_checksum((*st.nt, start) for _, st in part.statements),
            )
        )
        for pos, st in part.statements:
            if (st.nt, start) in triples:  # the same triple over another interval is another event
                batch.duplicates[frame] += 1
                continue
            triples.add((st.nt, start))
            batch.elements.append(Element(batch.stream, ts, frame, *st.nt, *st.values, pos, start))
    batch.elements.sort(key=attrgetter("ts", "pos"))
    for subject, stated in starts.items():  # an rsp:start of no graph of the file: not dropped
        outside.extend(
            Statement.of(None, subject, RSP_START, value, line) for value, line in stated
        )
    if collect is not None:
        collect.extend(outside)
    elif outside:
        batch.rejections.append(
            Rejection(batch.source, outside[0].line, OUTSIDE_FRAMES, len(outside))
        )


def future_horizon() -> datetime:
    """The latest time a frame may have: now + ``RSP_FUTURE_HORIZON``."""
    return datetime.now(UTC) + settings.future_horizon()


def past_horizon(ts: datetime, horizon: datetime) -> str:
    """Why a frame at ``ts`` past ``horizon`` is quarantined."""
    return f"time {datetime_lexical(ts)} is past the horizon of {datetime_lexical(horizon)} (now + RSP_FUTURE_HORIZON)"


def frame_checksum(triples: Iterable[tuple]) -> str:
    """sha256 hex of a graph's distinct N-Triples lines ``s p o .``, sorted, UTF-8: a frame's
    (or a part's) identity by content, whatever the order or repeats of its triples.

    A triple may come as ``(s, p, o, start)``: a derived event over [start, the frame's time]
    (EP-SPARQL §3.2) is another event than the same triple at the frame's instant, so its line
    carries the start (``s p o . # start <UTC lexical form>``); a start of None adds nothing,
    so frames without derived events keep the checksums stored before starts were."""
    lines = sorted({_checksum_line(*t) for t in triples})
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def _checksum_line(s: str, p: str, o: str, start: datetime | None = None) -> str:
    if start is None:
        return f"{s} {p} {o} .\n"
    return f"{s} {p} {o} . # start {datetime_lexical(start)}\n"


def merge_known_frames(batch: StreamBatch, known: dict[datetime, str]) -> None:
    """Name the batch's frames after the frames already known at their times (``known``: time
    → frame IRI, e.g. from earlier files of the stream or from the store), so that one time is
    one frame wherever its parts come from (TA-RDF restriction 2); ``known`` is extended with
    the batch's new frames. Its parts keep their own graph IRIs."""
    rename = {}
    for part in batch.parts:
        target = known.setdefault(part.ts, part.frame)
        if target != part.frame:
            rename[part.frame] = target
    if not rename:
        return
    batch.elements = [replace(e, frame=rename.get(e.frame, e.frame)) for e in batch.elements]
    batch.parts = [replace(p, frame=rename.get(p.frame, p.frame)) for p in batch.parts]
    batch.duplicates = Counter({rename.get(f, f): n for f, n in batch.duplicates.items()})


def _interval_start(
    graph, ts: datetime, stated: list[tuple[Node, int | None]]
) -> tuple[datetime | None, tuple[str, int | None] | None]:
    """The interval start a graph's ``rsp:start`` gives its events (None: the instant ``ts``),
    or why its part is rejected, with the line that says so."""
    if not stated:
        return None, None
    name = to_nt(graph)
    values = {value for value, _ in stated}
    line = stated[0][1]
    if len(values) > 1:
        return None, (
            f"graph {name} has {len(values)} rsp:start values (one interval per graph)",
            line,
        )
    start = time_value(stated[0][0]) if isinstance(stated[0][0], Literal) else None
    if start is None:
        return None, (
            f"graph {name} has an rsp:start that is not an xsd:dateTime: {to_nt(stated[0][0])}",
            line,
        )
    if start > ts:
        return None, (
            f"graph {name} has rsp:start {datetime_lexical(start)} after its time "
            f"{datetime_lexical(ts)} (an event's interval ends at its frame's time)",
            line,
        )
    return (None if start == ts else start.astimezone(UTC)), None


def _frame_time_problem(frame, times: list) -> str | None:
    if not times:
        return f"frame <{frame}> has no prov:generatedAtTime in the default graph"
    if len(times) > 1:
        return f"frame <{frame}> has {len(times)} prov:generatedAtTime values"
    if not isinstance(times[0], Literal) or time_value(times[0]) is None:
        return (
            f"frame <{frame}> has a prov:generatedAtTime that is not an xsd:dateTime: {times[0]!s}"
        )
    return None


def _error_line(exc: Exception) -> str:
    if isinstance(exc, BadSyntax):
        return str(exc.lines + 1)  # rdflib counts the lines before the error
    line = getattr(exc, "line", None)
    return str(line) if line is not None else "?"


def _error_text(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]
