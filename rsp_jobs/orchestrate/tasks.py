"""The micro-batch job of a query DAG run: every window close in ``(after, until]`` in one Spark
job (reading the streams from ``after - RANGE``) or, for a pattern, every match ending in
``(after, until]`` (reading back its bounded duration), checked by the output quality suite, stored as
frames of the query's output stream with provenance, and, for ``REGISTER STREAM``, written to
the lake as the derived stream that downstream queries read.

Writes are upserts keyed by query and window close, so re-running a run or backfilling a range
rewrites the same results; a window close belongs to exactly one run's interval. Before the new
interval, the closes that late data made stale (late policy ``reevaluate``) are evaluated again
as a revision of the earlier evaluation.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.engine import Interval, evaluate, match
from rsp_jobs.ingest.lake import project_lake as lake
from rsp_jobs.orchestrate import late
from rsp_jobs.orchestrate.registry import RegisteredQuery, load_query
from rsp_jobs.results import WindowResult
from rsp_jobs.store import db
from rsp_jobs.store.results import result_batch, store_evaluation
from rsp_jobs.times import as_utc, datetime_lexical, iso_ms, to_us

log = logging.getLogger("rsp.run")


@dataclass(frozen=True)
class RunSummary:
    query: str
    after: str
    until: str
    windows: int
    rows: int
    frames: int
    activity: str
    output_stream: str
    revised_windows: int = 0
    seconds: float = 0.0
    # a REGISTER STREAM pattern's derived events as [start, end] (EP-SPARQL 3.2: a match's output
    # holds over the match's interval), for the asset event downstream DAGs are triggered by
    intervals: tuple = ()

    def as_dict(self) -> dict:
        return asdict(self)


def evaluate_run(
    query_path: str, after: datetime, until: datetime, store_url: str | None = None
) -> RunSummary:
    """Evaluate the query of ``query_path`` over the run interval ``(after, until]``."""
    started = time.perf_counter()
    registered = load_query(Path(query_path))
    log.info(
        "%s: run over (%s, %s] (%s)",
        registered.dag_id,
        datetime_lexical(after),
        datetime_lexical(until),
        registered.path,
    )
    engine = db.engine(store_url)
    db.upgrade(store_url)
    revised = _revise_late_windows(registered, engine, store_url)
    windows, stored = _evaluate_and_store(registered, engine, store_url, after, until)
    rows = sum(w.rows for w in windows)
    if not windows:
        log.warning("%s", _nothing_in(registered, engine, after, until))
    log.info(
        "%s: done in %.1f s: %d windows, %d rows, %d frames written, activity %s",
        registered.dag_id,
        time.perf_counter() - started,
        len(windows),
        rows,
        stored.frames_written,
        stored.activity_iri,
    )
    intervals = sorted(
        {(start, w.window_close) for w in windows for start, _ in w.derived}
        | {
            (w.window_close, w.window_close)
            for w in windows
            if registered.kind == "pattern" and w.triples and not w.derived
        }
    )
    return RunSummary(
        registered.iri,
        after.isoformat(),
        until.isoformat(),
        len(windows),
        rows,
        stored.frames_written,
        stored.activity_iri,
        registered.output_stream,
        revised,
        round(time.perf_counter() - started, 3),
        tuple(intervals),
    )


def _nothing_in(registered: RegisteredQuery, engine, after: datetime, until: datetime) -> str:
    """Why a run reported nothing, in the terms a user picks the next interval in: where each
    input's frames are (a run's logical date is its interval's end, so a date alone often
    names the 15 minutes before midnight)."""
    from sqlalchemy import func, select

    from rsp_jobs.store.models import Frame, Stream

    spans = []
    with engine.connect() as conn:
        for stream in registered.streams:
            first, last = conn.execute(
                select(func.min(Frame.ts), func.max(Frame.ts))
                .join(Stream, Stream.id == Frame.stream_id)
                .where(Stream.iri == stream)
            ).one()
            held = (
                f"frames from {datetime_lexical(as_utc(first))} to {datetime_lexical(as_utc(last))}"
                if first is not None
                else "no frames"
            )
            spans.append(f"<{stream}> has {held}")
    return (
        f"{registered.dag_id}: no window closing in ({datetime_lexical(after)}, "
        f"{datetime_lexical(until)}] reported anything; {'; '.join(spans)}. To replay an "
        "interval, give the params after and until (dags/README.md)"
    )


def _evaluate_and_store(
    registered: RegisteredQuery,
    engine,
    store_url,
    after: datetime,
    until: datetime,
    revision_of: str | None = None,
):
    from rsp_jobs.orchestrate.spark_connection import get_spark
    from rsp_jobs.quality import gate

    spark = get_spark()  # on the Airflow connection's master, before the engine asks for a session
    if registered.kind != "window":
        return _match_and_store(registered, engine, after, until, revision_of)
    query = registered.query
    if not isinstance(query, ContinuousQuery):  # a window query's plan is one
        raise TypeError(f"{registered.path}: a window query compiled to {type(query).__name__}")
    from rsp_jobs.spark.progress import reported
    from rsp_jobs.spark.session import application_id

    started_at, clock = datetime.now(UTC), time.perf_counter()
    with reported(spark, registered.dag_id):
        windows = list(
            evaluate(
                query,
                lake(),
                registered.background,
                registered.t0_us,
                Interval(to_us(after), to_us(until)),
                entailment=registered.entailment,
                report=registered.report,
            )
        )
    log.info(
        "%s: evaluated %d window closes (%d result rows) in %.1f s",
        registered.dag_id,
        len(windows),
        sum(w.rows for w in windows),
        time.perf_counter() - clock,
    )
    outcome = gate.check_output_batch(
        _windows_frame(registered.iri, windows),
        query_iri=registered.iri,
        first_close_us=registered.first_close_us,
        step_us=registered.step_us,
        interval=(after, until),
        engine=engine,
        batch_id=f"{registered.dag_id}/{after.isoformat()}/{until.isoformat()}",
    )
    log.info("%s: quality: %s", registered.dag_id, outcome.summary())
    gate.require(outcome)
    clock = time.perf_counter()
    stored = store_evaluation(
        engine,
        registered.query,
        windows,
        started_at,
        application_id(spark),
        evaluated_until=None if revision_of else until,
        revision_of=revision_of,
        t0_us=registered.t0_us,
        entailment=registered.entailment,
        background=registered.background,
        report=registered.report,
    )
    log.info(
        "%s: stored %d windows (%d frames written) in %.1f s%s",
        registered.dag_id,
        stored.windows,
        stored.frames_written,
        time.perf_counter() - clock,
        f", revising {revision_of}" if revision_of else "",
    )
    if registered.derives_stream:
        _write_derived(registered, windows)
        log.info(
            "%s: wrote the derived stream <%s> to the lake",
            registered.dag_id,
            registered.output_stream,
        )
    return windows, stored


def _match_and_store(
    registered: RegisteredQuery,
    engine,
    after: datetime,
    until: datetime,
    revision_of: str | None = None,
):
    """A pattern's batch: the matches ending in ``(after, until]`` (reading back its bounded
    duration, or from its kept partial matches), reported as results closing at their end time,
    with the exact frames they used and, in the same transaction, the state the next batch
    starts from: the facts a consuming rule consumed, an unbounded pattern's partial matches."""
    from rsp_jobs.algebra.patterns import PartialMatches
    from rsp_jobs.quality import gate
    from rsp_jobs.spark.session import (  # the session _evaluate_and_store started
        application_id,
        get_spark,
    )
    from rsp_jobs.store.consumption import consumed_before, consumption_records, replace_consumed
    from rsp_jobs.store.partials import load_partials, save_partials

    started_at = datetime.now(UTC)
    consumed = (
        consumed_before(engine, registered.iri, after) if registered.kind == "rule" else frozenset()
    )
    plan_key = _plan_key(registered)
    partials = (
        PartialMatches(*load_partials(engine, registered.iri, plan_key, to_us(after)))
        if registered.keeps_partials
        else None
    )
    from rsp_jobs.spark.progress import reported

    clock = time.perf_counter()
    with reported(get_spark(), registered.dag_id):
        matches, newly = match(
            registered.query,
            lake(),
            registered.background,
            Interval(to_us(after), to_us(until)),
            registered.entailment,
            consumed,
            partials=partials,
            retention_us=registered.retention_us,
        )
    results = WindowResult.of_matches(matches)
    log.info(
        "%s: %d matches ending in the interval in %.1f s",
        registered.dag_id,
        len(matches),
        time.perf_counter() - clock,
    )
    outcome = gate.check_output_batch(
        _windows_frame(registered.iri, results),
        query_iri=registered.iri,
        first_close_us=0,
        step_us=1,
        interval=(after, until),
        engine=engine,
        batch_id=f"{registered.dag_id}/{after.isoformat()}/{until.isoformat()}",
    )
    log.info("%s: quality: %s", registered.dag_id, outcome.summary())
    gate.require(outcome)
    facts = consumption_records(matches, newly)

    def record_consumed(conn, activity_iri: str) -> None:
        if registered.kind == "rule":
            replace_consumed(conn, registered.iri, after, until, facts, activity_iri)
        if partials is not None:
            save_partials(
                conn, registered.iri, plan_key, partials.cut_us, partials.produced, to_us(until)
            )

    stored = store_evaluation(
        engine,
        registered.query,
        results,
        started_at,
        application_id(get_spark()),
        evaluated_until=None if revision_of else until,
        revision_of=revision_of,
        kind="pattern_match",
        used_frames=[f for m in matches for f in m.events],
        also=record_consumed,
        entailment=registered.entailment,
        background=registered.background,
    )
    if registered.derives_stream:
        _write_derived(registered, results)
    return results, stored


def _plan_key(registered: RegisteredQuery) -> str:
    """What kept partial matches were computed for: the query as written, its entailment and
    background files (another version of any of them starts the kept state over)."""
    import hashlib

    return hashlib.sha1(
        repr((registered.query.text, registered.entailment, registered.background)).encode()
    ).hexdigest()


def _windows_frame(query_iri: str, windows: list[WindowResult]):
    """The run's reported windows as the output quality suite reads them."""
    import pandas as pd

    return pd.DataFrame(
        {
            "query_iri": [query_iri] * len(windows),
            "window_open": pd.to_datetime([w.open_us for w in windows], unit="us", utc=True),
            "window_close": pd.to_datetime([w.close_us for w in windows], unit="us", utc=True),
            "row_count": [w.rows for w in windows],
        }
    )


def _write_derived(registered: RegisteredQuery, windows: list[WindowResult]) -> None:
    """The derived stream into the lake, one part per window close, so that a re-run or a
    revision replaces exactly the frames it recomputed (an empty window's frame has no rows:
    writing it removes what an earlier run wrote for that close)."""
    batch, frame_of = result_batch(registered.query, windows)
    by_frame: dict[str, list] = {}
    for element in batch.elements:
        by_frame.setdefault(element.frame, []).append(element)
    target = lake()
    for close, frame in frame_of.items():
        part = type(batch)(batch.stream, batch.source, by_frame.get(frame, []))
        target.write(part, batch_id=f"{registered.dag_id}-{close.replace(':', '')}")


def _revise_late_windows(registered: RegisteredQuery, engine, store_url) -> int:
    """Re-evaluate the closes late data arrived for, as a revision; returns how many closes."""
    span = late.pending_closes(engine, registered)
    if span is None:
        return 0
    after, until = late.revision_interval(span)
    # whole batches: a match is reported by the batch holding its end
    if registered.kind != "window":
        after = span[0] - timedelta(microseconds=registered.step_us)
    frames = [
        f"{registered.output_stream}/frame/{iso_ms(c)}"
        for c in registered.closes(to_us(after), to_us(until))
    ]
    previous = late.revised_activity(engine, frames)
    _windows, stored = _evaluate_and_store(
        registered, engine, store_url, after, until, revision_of=previous
    )
    late.mark_revised(engine, registered, span, stored.activity_iri)
    log.info(
        "%s: late data: re-evaluated %d closes in (%s, %s] as a revision",
        registered.dag_id,
        len(frames),
        datetime_lexical(after),
        datetime_lexical(until),
    )
    return len(frames)
