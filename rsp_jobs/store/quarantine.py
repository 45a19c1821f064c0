"""What the store quarantined: input that was read but rejected (a malformed line, a frame the
input checks refused), each part with its stream, file, line, reason and text, for
``rsp quarantine`` and the operators' pages. Nothing rejected is dropped: this is where an
operator finds it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, func, select

from rsp_jobs.errors import InputError
from rsp_jobs.store.models import Activity, QuarantinedInput, Stream
from rsp_jobs.times import as_utc


@dataclass(frozen=True)
class Quarantined:
    """One rejected part. ``line``: None for a frame the input checks refused (its ``text``
    lists the frame's triples); ``run``: the Airflow run whose ingest rejected it, if any."""

    id: int
    stream: str
    source: str
    line: int | None
    reason: str
    triples: int
    text: str
    at: datetime
    run: str | None

    @property
    def where(self) -> str:
        return self.source if self.line is None else f"{self.source}:{self.line}"


def quarantined(
    engine: Engine,
    stream: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
    run: str | None = None,
) -> tuple[list[Quarantined], int]:
    """The latest ``limit`` rejected parts of ``stream`` (default every stream) quarantined at
    or after ``since`` (by the Airflow run ``run``, if given), the latest load first and a
    load's parts by file and line; and how many there are in all."""
    where = []
    if stream is not None:
        where.append(Stream.iri == stream)
    if since is not None:
        where.append(QuarantinedInput.created_at >= since)
    if run is not None:
        where.append(Activity.run_id == run)
    with engine.connect() as conn:
        total = conn.scalar(
            select(func.count())
            .select_from(QuarantinedInput)
            .join(Stream, Stream.id == QuarantinedInput.stream_id)
            .outerjoin(Activity, Activity.id == QuarantinedInput.activity_id)
            .where(*where)
        )
        rows = conn.execute(
            _columns()
            .where(*where)
            .order_by(
                QuarantinedInput.created_at.desc(),
                QuarantinedInput.source_file,
                QuarantinedInput.line.nulls_first(),
                QuarantinedInput.id,
            )
            .limit(limit)
        ).all()
    return [_of(r) for r in rows], total or 0


def quarantined_part(engine: Engine, part_id: int) -> Quarantined:
    with engine.connect() as conn:
        row = conn.execute(_columns().where(QuarantinedInput.id == part_id)).one_or_none()
    if row is None:
        raise InputError(f"quarantine: no rejected part {part_id} (rsp quarantine lists them)")
    return _of(row)


def _columns():
    return (
        select(
            QuarantinedInput.id,
            Stream.iri,
            QuarantinedInput.source_file,
            QuarantinedInput.line,
            QuarantinedInput.reason,
            QuarantinedInput.triples,
            QuarantinedInput.text,
            QuarantinedInput.created_at,
            Activity.run_id,
        )
        .join(Stream, Stream.id == QuarantinedInput.stream_id)
        .outerjoin(Activity, Activity.id == QuarantinedInput.activity_id)
    )


def _of(row) -> Quarantined:
    return Quarantined(
        row.id,
        row.iri,
        row.source_file,
        row.line,
        row.reason,
        row.triples,
        row.text,
        as_utc(row.created_at),
        row.run_id,
    )
