"""What DOTR rules consumed, kept between micro-batches (``consumed_facts``).

A batch over ``(after, until]`` loads the facts that matches at or before ``after`` consumed,
and replaces what matches inside its own interval consumed. That makes consumption hold
across batches exactly as in one long evaluation, and a re-run of an interval idempotent.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable

from sqlalchemy import Connection, Engine, delete, insert, select

from rsp_jobs.store.models import ConsumedFact

TABLE = ConsumedFact.__table__


def consumed_before(engine: Engine, query_iri: str, after: datetime) -> frozenset[str]:
    with engine.connect() as conn:
        rows = conn.execute(select(TABLE.c.fact_key).where(TABLE.c.query_iri == query_iri,
                                                           TABLE.c.match_time <= after))
        return frozenset(r.fact_key for r in rows)


def replace_consumed(conn: Connection, query_iri: str, after: datetime, until: datetime,
                     facts: Iterable[tuple[str, datetime, datetime]], activity_iri: str) -> int:
    """Record ``(fact key, fact time, match time)`` for the interval's matches, replacing what
    an earlier run of the same interval recorded; returns how many facts."""
    conn.execute(delete(TABLE).where(TABLE.c.query_iri == query_iri, TABLE.c.match_time > after,
                                     TABLE.c.match_time <= until))
    rows = [dict(query_iri=query_iri, fact_key=key, fact_time=fact_time, match_time=match_time,
                 activity_iri=activity_iri) for key, fact_time, match_time in facts]
    if rows:
        conn.execute(insert(TABLE), rows)
    return len(rows)


def fact_time(key: str) -> datetime:
    """A fact key's time (``label@<µs>#hash``)."""
    micros = int(key.split("@", 1)[1].split("#", 1)[0])
    return datetime.fromtimestamp(micros // 1_000_000, tz=timezone.utc).replace(microsecond=micros % 1_000_000)
