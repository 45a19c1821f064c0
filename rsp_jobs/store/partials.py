"""The partial matches an unbounded EP-SPARQL pattern keeps between micro-batches
(``partial_matches``, ``partial_match_cuts``; EP-SPARQL §4: ETALIS stores partial matches and
completes them when later events arrive).

A pattern's kept matches are complete up to its cut: every solution of its subexpressions
ending at or before the cut is stored. A batch over ``(after, until]`` reads those ending by
``min(after, cut)`` and the events after that, and replaces everything stored after it with
what it computed, moving the cut to ``until``. So consecutive batches, a re-run of an earlier
interval, a revision after late data and a gap between batches all give one run's matches.
Nothing expires: the store grows with the stream (docs/languages/ep-sparql.md, "Unbounded EP-SPARQL patterns"); a retention
in the query's ``.toml`` bounds the pattern instead, and then nothing is kept here.

Plain values in and out (the cut and the partial matches by subexpression key, as
``rsp_jobs.algebra.patterns.PartialMatches`` holds them): the store does not import the engine's
layers; the DAG task (``rsp_jobs.orchestrate.tasks``) builds the engine's object from them.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, delete, insert, select

from rsp_jobs.store.models import PartialMatch, PartialMatchCut, table_of

ROWS, CUTS = table_of(PartialMatch), table_of(PartialMatchCut)


def load_partials(
    engine: Engine, query_iri: str, plan_key: str, after_us: int | None
) -> tuple[int | None, dict[str, list[dict]]]:
    """The kept partial matches a batch after ``after_us`` starts from, as ``(cut_us, old)``
    (``(None, {})`` for another version of the query, or for a batch with no start)."""
    with engine.connect() as conn:
        row = conn.execute(select(CUTS).where(CUTS.c.query_iri == query_iri)).first()
        if row is None or row.plan_key != plan_key or after_us is None:
            return None, {}
        cut = min(after_us, row.cut_us)
        old: dict[str, list[dict]] = {}
        for r in conn.execute(select(ROWS).where(ROWS.c.query_iri == query_iri, ROWS.c.tw <= cut)):
            old.setdefault(r.node_key, []).append(
                {"ta": r.ta, "tw": r.tw, "ev": r.events, "vals": r.vals}
            )
        return cut, old


def save_partials(
    conn: Connection,
    query_iri: str,
    plan_key: str,
    cut_us: int | None,
    produced: dict[str, list[dict]],
    until_us: int,
) -> int:
    """Replace what was kept after the batch's cut (``cut_us``, what it started from) with what
    the batch computed (``produced``, by subexpression key); returns how many partial matches
    the batch added."""
    stale = ROWS.c.query_iri == query_iri
    if cut_us is not None:
        stale = stale & (ROWS.c.tw > cut_us)
    conn.execute(delete(ROWS).where(stale))
    rows = [
        dict(
            query_iri=query_iri,
            node_key=key,
            ta=m["ta"],
            tw=m["tw"],
            events=m["ev"],
            vals=m["vals"],
        )
        for key, found in sorted(produced.items())
        for m in found
    ]
    if rows:
        conn.execute(insert(ROWS), rows)
    conn.execute(delete(CUTS).where(CUTS.c.query_iri == query_iri))
    conn.execute(insert(CUTS), [dict(query_iri=query_iri, plan_key=plan_key, cut_us=until_us)])
    return len(rows)
