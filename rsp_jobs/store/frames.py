"""Frames into the frame store, fast and idempotently, and the TA-SPARQL look-ups over them.

``load_batch`` writes one ``StreamBatch`` in one transaction, so a failure leaves no partial
frame: frames are keyed by (stream, ts); one whose checksum and IRI are unchanged is skipped,
a changed one is replaced in place (same row id, triples re-inserted); triples go in through
the backend's bulk path (COPY on PostgreSQL, executemany batches on SQLite), never row by row;
the batch's rejections replace those of the previous load of the same source; the stream's
watermark only moves forward. Loading the same batch twice therefore leaves the same rows.

Look-ups go through the unique (stream_id, ts) index: a point, a range, FIRST, LAST.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import islice
from typing import Iterable, Iterator, Optional, Sequence

from sqlalchemy import Connection, Engine, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import StreamBatch
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.models import Frame, FrameTriple, QuarantinedInput, Stream, utcnow

EXECUTEMANY_ROWS = 10_000  # triples per executemany on SQLite
KEYS_PER_QUERY = 1_000  # values per IN (...) list
TRIPLE_COLUMNS = ("frame_id", "s", "p", "o", "o_num", "o_time")
# INSERT ... ON CONFLICT of the two backends the store runs on
_INSERT_ON_CONFLICT = {"postgresql": pg_insert, "sqlite": sqlite_insert}

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
    frames = _frames_of(batch)
    with write_transaction(engine) as conn:
        stream_id = _get_or_create_stream(conn, batch.stream, "input", None)[0]
        stored = _stored_frames(conn, stream_id, [f.ts for f in frames])
        new = [f for f in frames if f.ts not in stored]
        changed = [(stored[f.ts][0], f) for f in frames
                   if f.ts in stored and stored[f.ts][1:] != (f.iri, f.checksum)]
        _replace_frames(conn, changed)
        new_ids = _insert_frames(conn, stream_id, new)
        bulk_write = BULK_WRITERS[conn.dialect.name]
        triples = bulk_write(conn, _triple_rows([*changed, *zip(new_ids, new)]))
        quarantined = _quarantine(conn, stream_id, batch)
        if frames:
            _advance_watermark(conn, stream_id, max(f.ts for f in frames))
    return LoadReport(len(new) + len(changed), len(frames) - len(new) - len(changed), triples, quarantined)


def frames_in_range(engine: Engine, stream_iri: str, start: datetime, end: datetime) -> list[FrameInfo]:
    """The frames of a stream with ``start <= ts < end`` (a window's bounds), in time order."""
    query = _frames_of_stream(stream_iri).where(Frame.ts >= start, Frame.ts < end).order_by(Frame.ts)
    with engine.connect() as conn:
        return [FrameInfo(*row) for row in conn.execute(query)]


def first_frame(engine: Engine, stream_iri: str) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.asc()).limit(1))


def last_frame(engine: Engine, stream_iri: str) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).order_by(Frame.ts.desc()).limit(1))


def frame_at(engine: Engine, stream_iri: str, ts: datetime) -> Optional[FrameInfo]:
    return _one(engine, _frames_of_stream(stream_iri).where(Frame.ts == ts))


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
    conn.execute(_INSERT_ON_CONFLICT[conn.dialect.name](table)
                 .values(iri=iri, kind=kind, query_iri=query_iri, created_at=utcnow())
                 .on_conflict_do_nothing(index_elements=[table.c.iri]))
    row = conn.execute(select(table.c.id, table.c.kind, table.c.query_iri)
                       .where(table.c.iri == iri).with_for_update()).one()
    return row.id, row.kind, row.query_iri


def _stored_frames(conn: Connection, stream_id: int,
                   stamps: Sequence[datetime]) -> dict[datetime, tuple[int, str, str]]:
    """{ts: (id, frame IRI, checksum)} of the stream's stored frames at these timestamps."""
    stored = {}
    for chunk in _chunks(stamps, KEYS_PER_QUERY):
        query = (select(Frame.ts, Frame.id, Frame.frame_iri, Frame.checksum)
                 .where(Frame.stream_id == stream_id, Frame.ts.in_(chunk)))
        stored.update({row.ts: (row.id, row.frame_iri, row.checksum) for row in conn.execute(query)})
    return stored


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
    """Insert frames, returning their ids in the same order (multi-row INSERT ... RETURNING)."""
    if not frames:
        return []
    table = Frame.__table__
    result = conn.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True),
                          [{"stream_id": stream_id, "ts": f.ts, "frame_iri": f.iri,
                            "triple_count": len(f.triples), "checksum": f.checksum} for f in frames])
    return list(result.scalars())


def _triple_rows(frames: Iterable[tuple[int, _BatchFrame]]) -> Iterator[TripleRow]:
    for frame_id, frame in frames:
        for (s, p, o), (o_num, o_time) in frame.triples.items():
            yield frame_id, s, p, o, o_num, o_time


def _copy_rows(conn: Connection, rows: Iterable[TripleRow]) -> int:
    """PostgreSQL: COPY ... FROM STDIN on the transaction's own driver connection."""
    count = 0
    with conn.connection.driver_connection.cursor() as cursor:
        with cursor.copy(f"COPY frame_triples ({', '.join(TRIPLE_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
    return count


def _executemany_rows(conn: Connection, rows: Iterable[TripleRow]) -> int:
    """SQLite: one prepared INSERT run by the driver over batches of plain tuples; only
    ``o_time`` needs the column type's conversion (to the UTC text the store compares)."""
    to_sql_time = FrameTriple.__table__.c.o_time.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    statement = (f"INSERT INTO frame_triples ({', '.join(TRIPLE_COLUMNS)}) "
                 f"VALUES ({', '.join('?' * len(TRIPLE_COLUMNS))})")
    count = 0
    for chunk in _chunks(rows, EXECUTEMANY_ROWS):
        conn.exec_driver_sql(statement, [(*row[:5], to_sql_time(row[5])) for row in chunk])
        count += len(chunk)
    return count


# each backend's fast path for triples (DESIGN.md: the store runs on SQLite or PostgreSQL)
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


def _advance_watermark(conn: Connection, stream_id: int, ts: datetime) -> None:
    conn.execute(update(Stream).where(Stream.id == stream_id, or_(Stream.watermark.is_(None), Stream.watermark < ts))
                 .values(watermark=ts))


def _frames_of_stream(stream_iri: str):
    return (select(Frame.frame_iri, Frame.ts, Frame.triple_count, Frame.checksum)
            .join(Stream, Stream.id == Frame.stream_id).where(Stream.iri == stream_iri))


def _one(engine: Engine, query) -> Optional[FrameInfo]:
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return FrameInfo(*row) if row else None


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
