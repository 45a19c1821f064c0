"""What DOTR rules consumed, kept between micro-batches (``consumed_facts``).

A batch over ``(after, until]`` loads the facts that matches at or before ``after`` consumed,
and replaces what matches inside its own interval consumed. That makes consumption hold
across batches exactly as in one long evaluation, and a re-run of an interval idempotent.
DOTR §3: "the consuming clause marks events that are consumed by the rule and cannot be used
in subsequent evaluations of the same rule" — whichever run evaluates them: the DAG tasks and
``rsp evaluate --from/--to`` keep them here alike. An unbounded bound (None) is the start or
the end of time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, insert, select

from rsp_jobs.results import Match, RuleMatch
from rsp_jobs.store.models import ConsumedFact, table_of
from rsp_jobs.times import from_us

TABLE = table_of(ConsumedFact)


def consumed_before(engine: Engine, query_iri: str, after: datetime | None) -> frozenset[str]:
    """The facts matches at or before ``after`` consumed (none before the start of time)."""
    if after is None:
        return frozenset()
    with engine.connect() as conn:
        rows = conn.execute(
            select(TABLE.c.fact_key).where(
                TABLE.c.query_iri == query_iri, TABLE.c.match_time <= after
            )
        )
        return frozenset(r.fact_key for r in rows)


def replace_consumed(
    conn: Connection,
    query_iri: str,
    after: datetime | None,
    until: datetime | None,
    facts: Iterable[tuple[str, datetime, datetime]],
    activity_iri: str | None,
) -> int:
    """Record ``(fact key, fact time, match time)`` for the interval's matches, replacing what
    an earlier run of the same interval recorded; returns how many facts."""
    where = [TABLE.c.query_iri == query_iri]
    if after is not None:
        where.append(TABLE.c.match_time > after)
    if until is not None:
        where.append(TABLE.c.match_time <= until)
    conn.execute(delete(TABLE).where(*where))
    rows = [
        dict(
            query_iri=query_iri,
            fact_key=key,
            fact_time=fact_time,
            match_time=match_time,
            activity_iri=activity_iri,
        )
        for key, fact_time, match_time in facts
    ]
    if rows:
        conn.execute(insert(TABLE), rows)
    return len(rows)


def fact_time(key: str) -> datetime:
    """A fact key's time (``label@<µs>#hash``)."""
    micros = int(key.split("@", 1)[1].split("#", 1)[0])
    return from_us(micros)


def consumption_records(
    matches: Iterable[Match], newly: Iterable[str]
) -> list[tuple[str, datetime, datetime]]:
    """``(fact key, fact time, match time)`` of each fact ``newly`` consumed by ``matches``
    (only a DOTR ``RuleMatch`` consumes)."""
    ended = {
        key: m.time_us for m in matches if isinstance(m, RuleMatch) for key in m.facts.values()
    }
    return [(key, fact_time(key), from_us(ended[key])) for key in sorted(newly)]
