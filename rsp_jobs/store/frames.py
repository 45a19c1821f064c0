"""Frames into the frame store, fast and idempotently, and the TA-SPARQL look-ups over them.

``load_batch`` writes one ``StreamBatch`` in one transaction, so a failure leaves no partial
frame. A stream has one frame per time (TA-RDF restriction 2; C-SPARQL §3.1: several triples
and graphs may share a timestamp), the union of the *parts* delivered for that time: the named
graphs or timestamped triples of files, or one evaluation's result (``frame_parts``). So a
batch's frame at a time the stream already has is

- unchanged, when each of its parts is stored with the same checksum (a re-load), or when its
  triples are the stored frame's (same checksum) whatever file, format or graph names brought
  them: an N-Quads export imported into a store that holds the stream from its TriG export.
  Nothing is written for it, not even the new parts: they would make the frame one merged
  from two files, whose later correction from either file would then be refused;
- replaced in place (same row id, triples re-inserted), when the stored frame consists only of
  parts of this batch's source (a corrected file, a re-run of an evaluation);
- merged into the stored frame (which keeps its IRI and id) otherwise: its new parts are
  recorded and the triples the frame lacks are added; a part that another file's parts were
  merged with and that now brings other triples is refused (``InputError``), as the stored
  frame cannot tell its earlier triples from the other parts'.

New frames and all triples go in by the backend's bulk path (binary COPY on PostgreSQL,
executemany batches on SQLite), never row by row. The batch's rejections replace those of the
previous load of the same source, and the stream's watermark only moves forward, so loading the
same batch twice leaves the same rows.

Look-ups go through the unique (stream_id, ts) index: a point, a range, FIRST, LAST.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice

from sqlalchemy import (
    Connection,
    Engine,
    Table,
    bindparam,
    delete,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import Part, StreamBatch, frame_checksum
from rsp_jobs.store.db import driver_connection, write_transaction
from rsp_jobs.store.models import Frame, FramePart, FrameTriple, QuarantinedInput, Stream, table_of

__all__ = [
    "first_frame",
    "frame_at",
    "frame_checksum",
    "frame_events",
    "frame_parts",
    "frame_triples",
    "frames_in_range",
    "known_frames",
    "last_frame",
    "load_batch",
    "register_stream",
    "write_batch",
]

EXECUTEMANY_ROWS = 10_000  # rows per executemany on SQLite
KEYS_PER_QUERY = 1_000  # values per IN (...) list
FRAME_COLUMNS = ("stream_id", "ts", "frame_iri", "triple_count", "checksum")
TRIPLE_COLUMNS = ("frame_id", "s", "p", "o", "o_num", "o_time", "start")
PART_COLUMNS = ("frame_id", "source", "graph_iri", "line", "statements", "checksum")
# INSERT ... ON CONFLICT of the two backends the store runs on
# typed so that what a dialect's INSERT adds (ON CONFLICT, ``excluded``) is known after ``[name]``
INSERT_ON_CONFLICT: dict[str, Callable[[Table], postgresql.Insert | sqlite.Insert]] = {
    "postgresql": pg_insert,
    "sqlite": sqlite_insert,
}

Triple = tuple[str, str, str]
# a triple and the start of the interval it holds over when it is a derived event (None: the
# frame's instant); the same triple with two starts is two events (EP-SPARQL §3.2)
Event = tuple[str, str, str, datetime | None]
TripleRow = tuple[int, str, str, str, float | None, datetime | None, datetime | None]


@dataclass(frozen=True)
class FrameInfo:
    iri: str
    ts: datetime
    triple_count: int
    checksum: str


@dataclass(frozen=True)
class LoadReport:
    frames_written: int  # inserted, replaced or merged into
    frames_unchanged: int  # already stored: with the same parts, or the same triples
    triples_written: int
    quarantined: int  # triples in the batch's rejections: accepted + quarantined = read
    frames_merged: int = 0  # of frames_written: stored frames that gained a part of another source
    invariant: int = 0  # time-invariant statements stored (TA-RDF imports)
    frames_replaced: int = 0  # of frames_written: stored frames whose source brought them anew

    @property
    def frames_new(self) -> int:
        """Frames the store did not hold at their (stream, time) before this load."""
        return self.frames_written - self.frames_merged - self.frames_replaced


@dataclass(frozen=True)
class _BatchFrame:
    ts: datetime
    iri: str
    triples: dict[
        Event, tuple[float | None, datetime | None]
    ]  # a graph: each event (triple and start) once, in order
    parts: tuple[Part, ...]

    @property
    def checksum(self) -> str:
        return frame_checksum(self.triples)


def register_stream(
    bind: Connection | Session, iri: str, kind: str = "input", query_iri: str | None = None
) -> int:
    """The id of stream ``iri``, registering it when new; a stream registered with another
    kind or deriving query is an error, not silently re-declared."""
    conn = bind.connection() if isinstance(bind, Session) else bind
    stream_id, stored_kind, stored_query = _get_or_create_stream(conn, iri, kind, query_iri)
    if (stored_kind, stored_query) != (kind, query_iri):
        derived_by = f" derived by <{stored_query}>" if stored_query else ""
        raise InputError(
            f"stream <{iri}> is registered as {stored_kind}{derived_by}; "
            f"cannot register it as {kind}" + (f" derived by <{query_iri}>" if query_iri else "")
        )
    return stream_id


def load_batch(engine: Engine, batch: StreamBatch) -> LoadReport:
    """Write a batch's frames, triples and rejections in one transaction (see module doc).
    A stream not yet registered is registered as an input stream."""
    with write_transaction(engine) as conn:
        return write_batch(conn, batch)


def write_batch(
    conn: Connection, batch: StreamBatch, kind: str = "input", query_iri: str | None = None
) -> LoadReport:
    """``load_batch`` inside the caller's transaction, so that frames can be written together
    with what refers to them (window results, provenance)."""
    frames = _frames_of(batch)
    stream_id = _get_or_create_stream(conn, batch.stream, kind, query_iri)[0]
    stored = _stored_frames(conn, stream_id, [f.ts for f in frames])
    _check_frame_streams(conn, batch, stream_id, [f for f in frames if f.ts not in stored])
    stored_parts = _stored_parts(conn, [row[0] for row in stored.values()])
    new, replaced, merged = [], [], []
    for f in frames:
        if f.ts not in stored:
            new.append(f)
            continue
        frame_id, iri, checksum = stored[f.ts]
        parts = stored_parts.get(frame_id, {})
        mine = {(p.source, p.graph): p.checksum for p in f.parts}
        if all(parts.get(key) == value for key, value in mine.items()):
            continue  # a re-load: every part is stored as it is
        if checksum == f.checksum:
            continue  # the frame as stored, from another file or format (see the module doc)
        if set(parts) <= set(mine):  # the batch is the whole frame: replace it
            replaced.append((frame_id, f))
            continue
        changed = [key for key in mine if key in parts and parts[key] != mine[key]]
        if changed:
            others = sorted(
                {source or "(unknown)" for source, _ in parts} - {source for source, _ in changed}
            )
            raise InputError(
                f"{batch.source}: frame <{iri}> at {f.ts.isoformat()} merges parts from {', '.join(others)}; "
                f"this file now brings other triples for its part <{changed[0][1]}> than when it was loaded, "
                "and a part of a merged frame cannot be replaced (its earlier triples cannot be told from the "
                "other parts'): deliver the change as a new part (another graph or file)"
            )
        merged.append((frame_id, f))
    _replace_frames(conn, replaced)
    additions = _merge_frames(conn, merged)
    new_ids = _insert_frames(conn, stream_id, new)
    triples = bulk_insert(
        conn,
        table_of(FrameTriple),
        TRIPLE_COLUMNS,
        _triple_rows([*replaced, *zip(new_ids, new), *additions]),
    )
    _write_parts(
        conn,
        [(frame_id, p) for frame_id, f in [*replaced, *zip(new_ids, new)] for p in f.parts]
        + [
            (frame_id, p)
            for frame_id, f in merged
            for p in f.parts
            if (p.source, p.graph) not in stored_parts[frame_id]
        ],
    )
    quarantined = _quarantine(conn, stream_id, batch)
    if frames:
        _advance_watermark(conn, stream_id, max(f.ts for f in frames))
    written = len(new) + len(replaced) + len(merged)
    return LoadReport(
        written,
        len(frames) - written,
        triples,
        quarantined,
        len(merged),
        frames_replaced=len(replaced),
    )


def known_frames(
    bind: Connection | Engine, stream_iri: str, stamps: Sequence[datetime]
) -> dict[datetime, str]:
    """{ts: frame IRI} of the stream's stored frames at these times: what a new file's parts at
    those times merge into (``rdf_stream.merge_known_frames``)."""
    if not stamps:
        return {}
    stream_id = select(Stream.id).where(Stream.iri == stream_iri).scalar_subquery()
    query = select(Frame.ts, Frame.frame_iri).where(
        Frame.stream_id == stream_id, Frame.ts.between(min(stamps), max(stamps))
    )
    wanted = set(stamps)
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            rows = conn.execute(query).all()
    else:
        rows = bind.execute(query).all()
    return {row.ts: row.frame_iri for row in rows if row.ts in wanted}


def frames_in_range(
    engine: Engine, stream_iri: str, start: datetime, end: datetime
) -> list[FrameInfo]:
    """The frames of a stream with ``start <= ts < end`` (a window's bounds), in time order."""
    query = (
        _frames_of_stream(stream_iri)
        .where(Frame.ts >= _aware(start), Frame.ts < _aware(end))
        .order_by(Frame.ts)
    )
    with engine.connect() as conn:
        return [FrameInfo(*row) for row in conn.execute(query)]


def first_frame(engine: Engine, stream_iri: str) -> FrameInfo | None:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.asc()).limit(1))


def last_frame(engine: Engine, stream_iri: str) -> FrameInfo | None:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.desc()).limit(1))


def frame_at(engine: Engine, stream_iri: str, ts: datetime) -> FrameInfo | None:
    return _one(engine, _frames_of_stream(stream_iri).where(Frame.ts == _aware(ts)))


def frame_triples(engine: Engine, frame_iri: str) -> list[Triple]:
    """The triples of a frame as N-Triples terms, sorted, each once (a derived triple over two
    intervals is two events, ``frame_events``, but one triple of the graph); empty for an
    unknown frame."""
    query = (
        select(FrameTriple.s, FrameTriple.p, FrameTriple.o)
        .join(Frame, Frame.id == FrameTriple.frame_id)
        .where(Frame.frame_iri == frame_iri)
    )
    with engine.connect() as conn:
        return sorted({(s, p, o) for s, p, o in conn.execute(query)})


def frame_events(engine: Engine, frame_iri: str) -> list[Event]:
    """``frame_triples`` with each triple's interval start (None: the frame's instant): what
    the frame's checksum sums, so what an audit recomputes it from."""
    query = (
        select(FrameTriple.s, FrameTriple.p, FrameTriple.o, FrameTriple.start)
        .join(Frame, Frame.id == FrameTriple.frame_id)
        .where(Frame.frame_iri == frame_iri)
    )
    with engine.connect() as conn:
        events = [(s, p, o, start) for s, p, o, start in conn.execute(query)]
    return sorted(events, key=lambda e: (*e[:3], e[3] is not None, e[3] or datetime.min))


def frame_parts(engine: Engine, frame_iri: str) -> list[tuple[str, str, int | None, int]]:
    """The parts a frame was merged from: (source, graph IRI, line, statements), in the order
    they were stored."""
    query = (
        select(FramePart.source, FramePart.graph_iri, FramePart.line, FramePart.statements)
        .join(Frame, Frame.id == FramePart.frame_id)
        .where(Frame.frame_iri == frame_iri)
        .order_by(FramePart.id)
    )
    with engine.connect() as conn:
        return [
            (source, graph, line, statements)
            for source, graph, line, statements in conn.execute(query)
        ]


def _frames_of(batch: StreamBatch) -> list[_BatchFrame]:
    """Group the batch into frames, one per timestamp, with the parts each was merged from
    (a batch built without parts, e.g. by hand, has one part per frame IRI it names). A frame
    is named by its first part; a frame IRI names one time (TA-RDF)."""
    triples: dict[datetime, dict] = {}
    named: dict[
        datetime, dict[str, list[Event]]
    ] = {}  # time -> frame IRI -> its events, as the elements name them
    iri_time: dict[str, datetime] = {}
    for e in batch.elements:
        if e.stream != batch.stream:
            raise InputError(
                f"{batch.source}: an element of stream <{e.stream}> in a batch of <{batch.stream}>"
            )
        ts = _utc(e.ts, batch.source, e.frame)
        if iri_time.setdefault(e.frame, ts) != ts:
            raise InputError(
                f"{batch.source}: frame <{e.frame}> has two timestamps, "
                f"{iri_time[e.frame].isoformat()} and {ts.isoformat()}"
            )
        if e.o_time is not None and e.o_time.tzinfo is None:
            raise InputError(
                f"{batch.source}: frame <{e.frame}> has a literal time without time zone: {e.o}"
            )
        start = _start(e.start, ts, batch.source, e.frame)
        triples.setdefault(ts, {}).setdefault((e.s, e.p, e.o, start), (e.o_num, e.o_time))
        named.setdefault(ts, {}).setdefault(e.frame, []).append((e.s, e.p, e.o, start))
    parts: dict[datetime, list[Part]] = defaultdict(list)
    for part in batch.parts:
        parts[_utc(part.ts, batch.source, part.frame)].append(part)
    for ts, names in named.items():
        if not parts[ts]:  # no parts given: each frame IRI the elements name is a part
            parts[ts] = [
                Part(name, ts, name, batch.source, None, len(mine), frame_checksum(mine))
                for name, mine in names.items()
            ]
    return [
        _BatchFrame(ts, ps[0].frame, triples.get(ts, {}), tuple(ps))
        for ts, ps in sorted(parts.items())
    ]


def _utc(ts: datetime, source: str, frame: str) -> datetime:
    if ts.tzinfo is None:
        raise InputError(f"{source}: frame <{frame}> has a timestamp without time zone")
    return ts.astimezone(UTC)


def _start(start: datetime | None, ts: datetime, source: str, frame: str) -> datetime | None:
    """A derived event's interval start as stored: UTC, None for the frame's instant (an
    interval [ts, ts] is the instant, and is stored as every other triple is)."""
    if start is None:
        return None
    start = _utc(start, source, frame)
    if start > ts:
        raise InputError(
            f"{source}: frame <{frame}> at {ts.isoformat()} has an event starting later, at "
            f"{start.isoformat()} (an event's interval [start, end] ends at its frame's time)"
        )
    return None if start == ts else start


def _check_frame_streams(
    conn: Connection, batch: StreamBatch, stream_id: int, new: list[_BatchFrame]
) -> None:
    """A frame IRI names one frame of one stream (TA-RDF restriction 2(ii)): a new frame named
    like a frame stored for another stream, or at another time, is refused before anything
    is written."""
    by_iri = {f.iri: f for f in new}
    for chunk in _chunks(list(by_iri), KEYS_PER_QUERY):
        rows = conn.execute(
            select(Frame.frame_iri, Frame.ts, Stream.iri)
            .join(Stream, Stream.id == Frame.stream_id)
            .where(Frame.frame_iri.in_(chunk))
        )
        for iri, ts, owner in rows:
            if owner != batch.stream:
                raise InputError(
                    f"{batch.source}: frame <{iri}> belongs to stream <{owner}>; it cannot also be a "
                    f"frame of <{batch.stream}> (TA-RDF restriction 2(ii): a frame belongs to one "
                    "stream). Nothing of this file was loaded"
                )
            raise InputError(
                f"{batch.source}: frame <{iri}> of <{owner}> is stored at {ts.isoformat()}; "
                f"it cannot also be the frame at {by_iri[iri].ts.isoformat()} (TA-RDF restriction "
                "2(iii): a frame has one timestamp). Nothing of this file was loaded"
            )


def _get_or_create_stream(
    conn: Connection, iri: str, kind: str, query_iri: str | None
) -> tuple[int, str, str | None]:
    """Insert-if-absent, then read the row locked (PostgreSQL: FOR UPDATE serialises loads of
    one stream; SQLite: the write transaction already holds the database's write lock)."""
    table = table_of(Stream)
    conn.execute(
        INSERT_ON_CONFLICT[conn.dialect.name](table)
        .values(iri=iri, kind=kind, query_iri=query_iri)
        .on_conflict_do_nothing(index_elements=[table.c.iri])
    )
    row = conn.execute(
        select(table.c.id, table.c.kind, table.c.query_iri)
        .where(table.c.iri == iri)
        .with_for_update()
    ).one()
    return row.id, row.kind, row.query_iri


def _stored_frames(
    conn: Connection, stream_id: int, stamps: Sequence[datetime]
) -> dict[datetime, tuple[int, str, str]]:
    """{ts: (id, frame IRI, checksum)} of the stream's stored frames at these timestamps, by
    one range scan over the batch's span: a batch is a time slice, and a long IN list is
    planned badly on a table whose statistics predate the batch."""
    if not stamps:
        return {}
    query = select(Frame.ts, Frame.id, Frame.frame_iri, Frame.checksum).where(
        Frame.stream_id == stream_id, Frame.ts.between(min(stamps), max(stamps))
    )
    wanted = set(stamps)
    return {
        row.ts: (row.id, row.frame_iri, row.checksum)
        for row in conn.execute(query)
        if row.ts in wanted
    }


def _stored_parts(
    conn: Connection, frame_ids: Sequence[int]
) -> dict[int, dict[tuple[str, str], str]]:
    """{frame id: {(source, graph IRI): checksum}} of the stored parts of these frames."""
    found: dict[int, dict[tuple[str, str], str]] = defaultdict(dict)
    for chunk in _chunks(frame_ids, KEYS_PER_QUERY):
        rows = conn.execute(
            select(
                FramePart.frame_id, FramePart.source, FramePart.graph_iri, FramePart.checksum
            ).where(FramePart.frame_id.in_(chunk))
        )
        for row in rows:
            found[row.frame_id][(row.source, row.graph_iri)] = row.checksum
    return found


def _replace_frames(conn: Connection, changed: list[tuple[int, _BatchFrame]]) -> None:
    """Frames the batch brings whole: their triples and parts go, the row stays (its id is
    referred to), renamed, recounted and re-summed."""
    if not changed:
        return
    for chunk in _chunks([frame_id for frame_id, _ in changed], KEYS_PER_QUERY):
        conn.execute(delete(FrameTriple).where(FrameTriple.frame_id.in_(chunk)))
        conn.execute(delete(FramePart).where(FramePart.frame_id.in_(chunk)))
    _update_frames(conn, [(frame_id, f.iri, len(f.triples), f.checksum) for frame_id, f in changed])


def _merge_frames(
    conn: Connection, merged: list[tuple[int, _BatchFrame]]
) -> list[tuple[int, _BatchFrame]]:
    """Stored frames that gain parts: the triples they lack are returned, to be inserted, and
    their count and checksum become those of the union. They keep their IRI."""
    if not merged:
        return []
    stored: dict[int, set] = defaultdict(set)
    iris: dict[int, str] = {}
    for chunk in _chunks([frame_id for frame_id, _ in merged], KEYS_PER_QUERY):
        for row in conn.execute(
            select(
                FrameTriple.frame_id, FrameTriple.s, FrameTriple.p, FrameTriple.o, FrameTriple.start
            ).where(FrameTriple.frame_id.in_(chunk))
        ):
            stored[row.frame_id].add((row.s, row.p, row.o, row.start))
        iris.update(
            conn.execute(select(Frame.id, Frame.frame_iri).where(Frame.id.in_(chunk))).all()
        )
    additions, updates = [], []
    for frame_id, f in merged:
        lacking = {t: v for t, v in f.triples.items() if t not in stored[frame_id]}
        union = stored[frame_id] | set(lacking)
        additions.append((frame_id, _BatchFrame(f.ts, iris[frame_id], lacking, f.parts)))
        updates.append((frame_id, iris[frame_id], len(union), frame_checksum(union)))
    _update_frames(conn, updates)
    return additions


def _update_frames(conn: Connection, rows: list[tuple[int, str, int, str]]) -> None:
    table = table_of(Frame)
    conn.execute(
        update(table)
        .where(table.c.id == bindparam("frame_id"))
        .values(
            frame_iri=bindparam("iri"), triple_count=bindparam("count"), checksum=bindparam("sum")
        ),
        [
            {"frame_id": frame_id, "iri": iri, "count": count, "sum": checksum}
            for frame_id, iri, count, checksum in rows
        ],
    )


def _write_parts(conn: Connection, parts: Iterable[tuple[int, Part]]) -> None:
    bulk_insert(
        conn,
        table_of(FramePart),
        PART_COLUMNS,
        ((frame_id, p.source, p.graph, p.line, p.statements, p.checksum) for frame_id, p in parts),
    )


def _insert_frames(conn: Connection, stream_id: int, frames: list[_BatchFrame]) -> list[int]:
    """Bulk-insert frames, then read their ids back by timestamp (in the frames' order)."""
    if not frames:
        return []
    bulk_insert(
        conn,
        table_of(Frame),
        FRAME_COLUMNS,
        ((stream_id, f.ts, f.iri, len(f.triples), f.checksum) for f in frames),
    )
    stored = _stored_frames(conn, stream_id, [f.ts for f in frames])
    return [stored[f.ts][0] for f in frames]


def _triple_rows(frames: Iterable[tuple[int, _BatchFrame]]) -> Iterator[TripleRow]:
    for frame_id, frame in frames:
        for (s, p, o, start), (o_num, o_time) in frame.triples.items():
            yield frame_id, s, p, o, stored_number(o_num), o_time, start


def stored_number(value: float | None) -> float | None:
    """A literal's numeric value as the store keeps it: NaN as NULL, on both backends (SQLite
    cannot hold NaN, and PostgreSQL's NaN equals itself and sorts above every number, where
    SPARQL's compares false with everything). The term itself keeps "NaN"."""
    return None if value is not None and math.isnan(value) else value


def bulk_insert(
    conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]
) -> int:
    """Insert rows (tuples in ``columns`` order) by the backend's fast path; returns the count."""
    return BULK_WRITERS[conn.dialect.name](conn, table, columns, rows)


def _copy_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]
) -> int:
    """PostgreSQL: binary COPY ... FROM STDIN on the transaction's own driver connection, typed
    by the table's actual column types."""
    oids: dict[str, int] = dict(
        conn.execute(
            text(
                "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = CAST(:t AS regclass)"
            ),
            {"t": table.name},
        ).all()
    )
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    count = 0
    try:
        with driver_connection(conn).cursor() as cursor, cursor.copy(statement) as copy:
            copy.set_types([oids[name] for name in columns])
            for row in rows:
                copy.write_row(row)
                count += 1
    except conn.dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy raises it on the SQLite path
        raise DBAPIError.instance(statement, None, exc, conn.dialect.loaded_dbapi.Error) from exc
    return count


def _executemany_rows(
    conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]
) -> int:
    """SQLite: one prepared INSERT run by the driver over batches of rows, converted by the
    columns' own types where they need it (times become the UTC text the store compares)."""
    dialect = conn.dialect
    converters = [
        (i, convert)
        for i, name in enumerate(columns)
        if (convert := table.c[name].type.dialect_impl(dialect).bind_processor(dialect))
    ]
    statement = (
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )
    count = 0
    for chunk in _chunks(rows, EXECUTEMANY_ROWS):
        if converters:
            chunk = [_converted(row, converters) for row in chunk]
        conn.exec_driver_sql(statement, chunk)
        count += len(chunk)
    return count


def _converted(row: tuple, converters: list) -> tuple:
    values = list(row)
    for i, convert in converters:
        values[i] = convert(values[i])
    return tuple(values)


# each backend's fast path (../shared/DESIGN.md: the store runs on SQLite or PostgreSQL)
BULK_WRITERS = {"postgresql": _copy_rows, "sqlite": _executemany_rows}


def _quarantine(conn: Connection, stream_id: int, batch: StreamBatch) -> int:
    """The batch's rejections replace those from an earlier load of the same source; they are
    quarantined at one time, the load's (``rsp quarantine`` lists a load's parts by line)."""
    sources = {batch.source, *(r.file for r in batch.rejections)}
    conn.execute(
        delete(QuarantinedInput).where(
            QuarantinedInput.stream_id == stream_id, QuarantinedInput.source_file.in_(sources)
        )
    )
    if batch.rejections:
        now = datetime.now(UTC)
        conn.execute(
            insert(table_of(QuarantinedInput)),
            [
                {
                    "stream_id": stream_id,
                    "source_file": r.file,
                    "line": r.line,
                    "reason": r.reason,
                    "triples": r.triples,
                    "text": r.text,
                    "created_at": now,
                }
                for r in batch.rejections
            ],
        )
    return batch.rejected_triples


def advance_watermark(
    conn: Connection, stream: str, ts: datetime, kind: str = "input", query_iri: str | None = None
) -> None:
    """Move a stream's watermark forward to ``ts`` (never back), registering the stream if new."""
    _advance_watermark(conn, register_stream(conn, stream, kind, query_iri), ts)


def _advance_watermark(conn: Connection, stream_id: int, ts: datetime) -> None:
    conn.execute(
        update(Stream)
        .where(Stream.id == stream_id, or_(Stream.watermark.is_(None), Stream.watermark < ts))
        .values(watermark=ts)
    )


def _frames_of_stream(stream_iri: str):
    """The stream id as a scalar subquery, not a join: then the planner walks the unique
    (stream_id, ts) index in order (PostgreSQL sorts every frame of the stream for LAST
    when the id comes from a join)."""
    stream_id = select(Stream.id).where(Stream.iri == stream_iri).scalar_subquery()
    return select(Frame.frame_iri, Frame.ts, Frame.triple_count, Frame.checksum).where(
        Frame.stream_id == stream_id
    )


def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(
            f"naive datetime {ts.isoformat()}: give its time zone (the store keeps UTC)"
        )
    return ts


def _one(engine: Engine, query) -> FrameInfo | None:
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return FrameInfo(*row) if row else None


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
