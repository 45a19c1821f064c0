"""Frames into the frame store, fast and idempotently, and the TA-SPARQL look-ups over them.

``load_batch`` writes one ``StreamBatch`` in one transaction, so a failure leaves no partial
frame. Frames are keyed by (stream, ts): one whose checksum and IRI are unchanged is skipped,
a changed one is replaced in place (same row id, triples re-inserted). New frames and all
triples go in by the backend's bulk path (binary COPY on PostgreSQL, executemany batches on
SQLite), never row by row. The batch's rejections replace those of the previous load of the
same source, and the stream's watermark only moves forward, so loading the same batch twice
leaves the same rows.

Look-ups go through the unique (stream_id, ts) index: a point, a range, FIRST, LAST.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import islice
from typing import Iterable, Iterator, Optional, Sequence

from sqlalchemy import Connection, Engine, Table, bindparam, delete, insert, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import StreamBatch
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.models import Frame, FrameTriple, QuarantinedInput, Stream

EXECUTEMANY_ROWS = 10_000  # rows per executemany on SQLite
KEYS_PER_QUERY = 1_000  # values per IN (...) list
FRAME_COLUMNS = ("stream_id", "ts", "frame_iri", "triple_count", "checksum")
TRIPLE_COLUMNS = ("frame_id", "s", "p", "o", "o_num", "o_time")
# INSERT ... ON CONFLICT of the two backends the store runs on
INSERT_ON_CONFLICT = {"postgresql": pg_insert, "sqlite": sqlite_insert}

Triple = tuple[str, str, str]
TripleRow = tuple[int, str, str, str, Optional[float], Optional[datetime]]


@dataclass(frozen=True)
class FrameInfo:
    iri: str
    ts: datetime
    triple_count: int
    checksum: str


@dataclass(frozen=True)
class LoadReport:
    frames_written: int  # inserted or replaced
    frames_unchanged: int  # already stored with the same checksum
    triples_written: int
    quarantined: int  # triples in the batch's rejections: accepted + quarantined = read


@dataclass(frozen=True)
class _BatchFrame:
    ts: datetime
    iri: str
    triples: dict[Triple, tuple[Optional[float], Optional[datetime]]]  # a graph: each triple once
    checksum: str


def frame_checksum(triples: Iterable[Triple]) -> str:
    """sha256 hex of the frame's distinct N-Triples lines ``s p o .``, sorted, UTF-8."""
    lines = sorted({f"{s} {p} {o} .\n" for s, p, o in triples})
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def register_stream(bind: Connection | Session, iri: str, kind: str = "input",
                    query_iri: Optional[str] = None) -> int:
    """The id of stream ``iri``, registering it when new; a stream registered with another
    kind or deriving query is an error, not silently re-declared."""
    conn = bind.connection() if isinstance(bind, Session) else bind
    stream_id, stored_kind, stored_query = _get_or_create_stream(conn, iri, kind, query_iri)
    if (stored_kind, stored_query) != (kind, query_iri):
        derived_by = f" derived by <{stored_query}>" if stored_query else ""
        raise InputError(f"stream <{iri}> is registered as {stored_kind}{derived_by}; "
                         f"cannot register it as {kind}" + (f" derived by <{query_iri}>" if query_iri else ""))
    return stream_id


def load_batch(engine: Engine, batch: StreamBatch) -> LoadReport:
    """Write a batch's frames, triples and rejections in one transaction (see module doc).
    A stream not yet registered is registered as an input stream."""
    with write_transaction(engine) as conn:
        return write_batch(conn, batch)


def write_batch(conn: Connection, batch: StreamBatch, kind: str = "input",
                query_iri: Optional[str] = None) -> LoadReport:
    """``load_batch`` inside the caller's transaction, so that frames can be written together
    with what refers to them (window results, provenance)."""
    frames = _frames_of(batch)
    stream_id = _get_or_create_stream(conn, batch.stream, kind, query_iri)[0]
    stored = _stored_frames(conn, stream_id, [f.ts for f in frames])
    new = [f for f in frames if f.ts not in stored]
    changed = [(stored[f.ts][0], f) for f in frames
               if f.ts in stored and stored[f.ts][1:] != (f.iri, f.checksum)]
    _replace_frames(conn, changed)
    new_ids = _insert_frames(conn, stream_id, new)
    triples = bulk_insert(conn, FrameTriple.__table__, TRIPLE_COLUMNS,
                          _triple_rows([*changed, *zip(new_ids, new)]))
    quarantined = _quarantine(conn, stream_id, batch)
    if frames:
        _advance_watermark(conn, stream_id, max(f.ts for f in frames))
    return LoadReport(len(new) + len(changed), len(frames) - len(new) - len(changed), triples, quarantined)


def frames_in_range(engine: Engine, stream_iri: str, start: datetime, end: datetime) -> list[FrameInfo]:
    """The frames of a stream with ``start <= ts < end`` (a window's bounds), in time order."""
    query = _frames_of_stream(stream_iri).where(Frame.ts >= _aware(start), Frame.ts < _aware(end)).order_by(Frame.ts)
    with engine.connect() as conn:
        return [FrameInfo(*row) for row in conn.execute(query)]


def first_frame(engine: Engine, stream_iri: str) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.asc()).limit(1))


def last_frame(engine: Engine, stream_iri: str) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.desc()).limit(1))


def frame_at(engine: Engine, stream_iri: str, ts: datetime) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).where(Frame.ts == _aware(ts)))


def frame_triples(engine: Engine, frame_iri: str) -> list[Triple]:
    """The triples of a frame as N-Triples terms, sorted; empty for an unknown frame."""
    query = (select(FrameTriple.s, FrameTriple.p, FrameTriple.o)
             .join(Frame, Frame.id == FrameTriple.frame_id).where(Frame.frame_iri == frame_iri))
    with engine.connect() as conn:
        return sorted(tuple(row) for row in conn.execute(query))


def _frames_of(batch: StreamBatch) -> list[_BatchFrame]:
    """Group elements into frames: one IRI per timestamp, one timestamp per IRI (TA-RDF)."""
    grouped: dict[datetime, tuple[str, dict]] = {}
    iri_time: dict[str, datetime] = {}
    for e in batch.elements:
        if e.stream != batch.stream:
            raise InputError(f"{batch.source}: an element of stream <{e.stream}> in a batch of <{batch.stream}>")
        if e.ts.tzinfo is None:
            raise InputError(f"{batch.source}: frame <{e.frame}> has a timestamp without time zone")
        ts = e.ts.astimezone(timezone.utc)
        iri, triples = grouped.setdefault(ts, (e.frame, {}))
        if iri != e.frame:
            raise InputError(f"{batch.source}: frames <{iri}> and <{e.frame}> share the timestamp "
                             f"{ts.isoformat()} (a stream has one frame per timestamp)")
        if iri_time.setdefault(e.frame, ts) != ts:
            raise InputError(f"{batch.source}: frame <{e.frame}> has two timestamps, "
                             f"{iri_time[e.frame].isoformat()} and {ts.isoformat()}")
        if e.o_time is not None and e.o_time.tzinfo is None:
            raise InputError(f"{batch.source}: frame <{e.frame}> has a literal time without time zone: {e.o}")
        triples[(e.s, e.p, e.o)] = (e.o_num, e.o_time)
    return [_BatchFrame(ts, iri, triples, frame_checksum(triples)) for ts, (iri, triples) in grouped.items()]


def _get_or_create_stream(conn: Connection, iri: str, kind: str,
                          query_iri: Optional[str]) -> tuple[int, str, Optional[str]]:
    """Insert-if-absent, then read the row locked (PostgreSQL: FOR UPDATE serialises loads of
    one stream; SQLite: the write transaction already holds the database's write lock)."""
    table = Stream.__table__
    conn.execute(INSERT_ON_CONFLICT[conn.dialect.name](table)
                 .values(iri=iri, kind=kind, query_iri=query_iri)
                 .on_conflict_do_nothing(index_elements=[table.c.iri]))
    row = conn.execute(select(table.c.id, table.c.kind, table.c.query_iri)
                       .where(table.c.iri == iri).with_for_update()).one()
    return row.id, row.kind, row.query_iri


def _stored_frames(conn: Connection, stream_id: int,
                   stamps: Sequence[datetime]) -> dict[datetime, tuple[int, str, str]]:
    """{ts: (id, frame IRI, checksum)} of the stream's stored frames at these timestamps, by
    one range scan over the batch's span: a batch is a time slice, and a long IN list is
    planned badly on a table whose statistics predate the batch."""
    if not stamps:
        return {}
    query = (select(Frame.ts, Frame.id, Frame.frame_iri, Frame.checksum)
             .where(Frame.stream_id == stream_id, Frame.ts.between(min(stamps), max(stamps))))
    wanted = set(stamps)
    return {row.ts: (row.id, row.frame_iri, row.checksum) for row in conn.execute(query) if row.ts in wanted}


def _replace_frames(conn: Connection, changed: list[tuple[int, _BatchFrame]]) -> None:
    if not changed:
        return
    for chunk in _chunks([frame_id for frame_id, _ in changed], KEYS_PER_QUERY):
        conn.execute(delete(FrameTriple).where(FrameTriple.frame_id.in_(chunk)))
    table = Frame.__table__
    conn.execute(update(table).where(table.c.id == bindparam("frame_id"))
                 .values(frame_iri=bindparam("iri"), triple_count=bindparam("count"),
                         checksum=bindparam("sum")),
                 [{"frame_id": frame_id, "iri": f.iri, "count": len(f.triples), "sum": f.checksum}
                  for frame_id, f in changed])


def _insert_frames(conn: Connection, stream_id: int, frames: list[_BatchFrame]) -> list[int]:
    """Bulk-insert frames, then read their ids back by timestamp (in the frames' order)."""
    if not frames:
        return []
    bulk_insert(conn, Frame.__table__, FRAME_COLUMNS,
                ((stream_id, f.ts, f.iri, len(f.triples), f.checksum) for f in frames))
    stored = _stored_frames(conn, stream_id, [f.ts for f in frames])
    return [stored[f.ts][0] for f in frames]


def _triple_rows(frames: Iterable[tuple[int, _BatchFrame]]) -> Iterator[TripleRow]:
    for frame_id, frame in frames:
        for (s, p, o), (o_num, o_time) in frame.triples.items():
            yield frame_id, s, p, o, o_num, o_time


def bulk_insert(conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """Insert rows (tuples in ``columns`` order) by the backend's fast path; returns the count."""
    return BULK_WRITERS[conn.dialect.name](conn, table, columns, rows)


def _copy_rows(conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """PostgreSQL: binary COPY ... FROM STDIN on the transaction's own driver connection, typed
    by the table's actual column types."""
    oids = dict(conn.execute(text("SELECT attname, atttypid FROM pg_attribute WHERE attrelid = CAST(:t AS regclass)"),
                             {"t": table.name}).all())
    statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    count = 0
    try:
        with conn.connection.driver_connection.cursor() as cursor, cursor.copy(statement) as copy:
            copy.set_types([oids[name] for name in columns])
            for row in rows:
                copy.write_row(row)
                count += 1
    except conn.dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy raises it on the SQLite path
        raise DBAPIError.instance(statement, None, exc, conn.dialect.loaded_dbapi.Error) from exc
    return count


def _executemany_rows(conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[tuple]) -> int:
    """SQLite: one prepared INSERT run by the driver over batches of rows, converted by the
    columns' own types where they need it (times become the UTC text the store compares)."""
    dialect = conn.dialect
    converters = [(i, convert) for i, name in enumerate(columns)
                  if (convert := table.c[name].type.dialect_impl(dialect).bind_processor(dialect))]
    statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
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


# each backend's fast path (DESIGN.md: the store runs on SQLite or PostgreSQL)
BULK_WRITERS = {"postgresql": _copy_rows, "sqlite": _executemany_rows}


def _quarantine(conn: Connection, stream_id: int, batch: StreamBatch) -> int:
    """The batch's rejections replace those from an earlier load of the same source."""
    sources = {batch.source, *(r.file for r in batch.rejections)}
    conn.execute(delete(QuarantinedInput)
                 .where(QuarantinedInput.stream_id == stream_id, QuarantinedInput.source_file.in_(sources)))
    if batch.rejections:
        conn.execute(insert(QuarantinedInput.__table__),
                     [{"stream_id": stream_id, "source_file": r.file, "line": r.line, "reason": r.reason,
                       "triples": r.triples, "text": r.text} for r in batch.rejections])
    return batch.rejected_triples


def advance_watermark(conn: Connection, stream: str, ts: datetime, kind: str = "input",
                      query_iri: Optional[str] = None) -> None:
    """Move a stream's watermark forward to ``ts`` (never back), registering the stream if new."""
    _advance_watermark(conn, register_stream(conn, stream, kind, query_iri), ts)


def _advance_watermark(conn: Connection, stream_id: int, ts: datetime) -> None:
    conn.execute(update(Stream).where(Stream.id == stream_id, or_(Stream.watermark.is_(None), Stream.watermark < ts))
                 .values(watermark=ts))


def _frames_of_stream(stream_iri: str):
    """The stream id as a scalar subquery, not a join: then the planner walks the unique
    (stream_id, ts) index in order (PostgreSQL sorts every frame of the stream for LAST
    when the id comes from a join)."""
    stream_id = select(Stream.id).where(Stream.iri == stream_iri).scalar_subquery()
    return select(Frame.frame_iri, Frame.ts, Frame.triple_count, Frame.checksum).where(Frame.stream_id == stream_id)


def _aware(ts: datetime) -> datetime:
    if ts.tzinfo is None:
        raise ValueError(f"naive datetime {ts.isoformat()}: give its time zone (the store keeps UTC)")
    return ts


def _one(engine: Engine, query) -> Optional[FrameInfo]:
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return FrameInfo(*row) if row else None


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
