"""Late data: frames that arrive for windows a query has already evaluated.

What a query has evaluated is its output stream's watermark (every run moves it to the end of
its interval). A frame at ``ts`` falls in the windows closing in ``(ts, ts + RANGE]``; if some of
those closes are already evaluated, the frame is late for that query. The stream's policy says
what happens: ``drop`` keeps it out of the lake and store (quarantined, counted, recorded);
``reevaluate`` loads it and records the affected closes as pending, and the query's next run
re-evaluates them as a revision of the earlier evaluation (``revise_pending``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, insert, select, update

from rsp_jobs.ingest.rdf_stream import StreamBatch
from rsp_jobs.orchestrate.registry import RegisteredQuery
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.models import Activity, ActivityGenerated, LateArrival, Stream, table_of
from rsp_jobs.times import from_us, to_us


@dataclass(frozen=True)
class LateFrame:
    frame: str
    ts: datetime
    triples: int
    query_iri: str
    first_close: datetime
    last_close: datetime


def evaluated_until(conn: Connection, query: RegisteredQuery) -> datetime | None:
    return conn.scalar(select(Stream.watermark).where(Stream.iri == query.output_stream))


def affected_closes(
    query: RegisteredQuery, ts: datetime, until: datetime
) -> tuple[datetime, datetime] | None:
    """The evaluated closes (<= ``until``) a frame at ``ts`` could change, or None."""
    closes = query.affected_closes(to_us(ts), to_us(until))
    return (from_us(closes[0]), from_us(closes[-1])) if closes else None


def find_late(
    conn: Connection, batch: StreamBatch, queries: Iterable[RegisteredQuery]
) -> list[LateFrame]:
    """The batch's frames that are late for a query reading its stream."""
    frames: dict[str, tuple[datetime, int]] = {}
    for e in batch.elements:
        ts, n = frames.get(e.frame, (e.ts, 0))
        frames[e.frame] = (ts, n + 1)
    late = []
    for query in queries:
        if batch.stream not in query.streams:
            continue
        until = evaluated_until(conn, query)
        if until is None:
            continue
        for frame, (ts, triples) in frames.items():
            closes = affected_closes(query, ts, until)
            if closes:
                late.append(LateFrame(frame, ts, triples, query.iri, *closes))
    return late


def apply_policy(
    conn: Connection,
    batch: StreamBatch,
    late: list[LateFrame],
    policy: str,
    stream_id: int,
    source: str,
) -> int:
    """Record the late frames; under ``drop`` move them from the batch to its rejections.
    Returns the number of late triples dropped."""
    status = "dropped" if policy == "drop" else "pending"
    if late:
        conn.execute(
            insert(table_of(LateArrival)),
            [
                dict(
                    stream_id=stream_id,
                    frame_ts=f.ts,
                    frame_iri=f.frame,
                    triples=f.triples,
                    query_iri=f.query_iri,
                    first_close=f.first_close,
                    last_close=f.last_close,
                    status=status,
                    source_file=source,
                )
                for f in late
            ],
        )
    if policy != "drop" or not late:
        return 0
    return batch.drop_frames(
        {
            f.frame: f"late: frame at {f.ts.isoformat()} arrived after <{f.query_iri}> evaluated "
            f"the window closing {f.last_close.isoformat()} (late_policy drop)"
            for f in late
        },
        source,
    )


def pending_closes(engine: Engine, query: RegisteredQuery) -> tuple[datetime, datetime] | None:
    """The span of window closes waiting for a re-evaluation after late data, if any."""
    with engine.connect() as conn:
        row = conn.execute(
            select(LateArrival.first_close, LateArrival.last_close).where(
                LateArrival.query_iri == query.iri, LateArrival.status == "pending"
            )
        ).all()
    if not row:
        return None
    return min(r.first_close for r in row), max(r.last_close for r in row)


def revised_activity(engine: Engine, frame_iris: list[str]) -> str | None:
    """The latest evaluation that generated one of these result frames: what a revision revises."""
    with engine.connect() as conn:
        return conn.scalar(
            select(Activity.iri)
            .join(ActivityGenerated, ActivityGenerated.activity_id == Activity.id)
            .where(
                ActivityGenerated.entity_iri.in_(frame_iris), Activity.kind == "window_evaluation"
            )
            .order_by(Activity.id.desc())
            .limit(1)
        )


def mark_revised(
    engine: Engine, query: RegisteredQuery, span: tuple[datetime, datetime], activity: str
) -> int:
    with write_transaction(engine) as conn:
        return conn.execute(
            update(LateArrival)
            .where(
                LateArrival.query_iri == query.iri,
                LateArrival.status == "pending",
                LateArrival.first_close >= span[0],
                LateArrival.last_close <= span[1],
            )
            .values(status="revised", revision_activity=activity)
        ).rowcount


def revision_interval(span: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """``(after, until]`` holding exactly the closes of ``span``."""
    return span[0] - timedelta(microseconds=1), span[1]
