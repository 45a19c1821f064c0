"""The quality gate: check a batch, record the check, quarantine a failing input batch, and
fail the run with a message that names what failed.

Every check, passed or failed, is a ``quality_check`` activity in the store with one
``quality_results`` row per expectation, and a page in the GX Data Docs under ``<home>/gx``.
A failing input batch is quarantined whole (nothing of it is accepted), one ``quarantine`` row
per frame with its triples as N-Quads, so that rows = accepted + quarantined always holds.
A failing output batch is withheld (counted as quarantined) but not copied into the quarantine
table: window results are recomputed from their inputs.

Plain values in, a small value out, for Airflow tasks and ingest code::

    outcome = check_input_batch(lake_rows(batch.elements), stream=batch.stream, source=batch.source,
                                interval=(start, end), engine=db.engine(), batch_id="...")
    require(outcome)  # raises QualityGateError naming the failed expectations
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

import pandas as pd
from sqlalchemy import Connection, Engine, delete, insert, select

from rsp_jobs.errors import RspError
from rsp_jobs.ingest.rdf_stream import Element
from rsp_jobs.quality import suites
from rsp_jobs.quality.ranges import load_ranges
from rsp_jobs.quality.validate import Checked, run_suite
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import register_stream
from rsp_jobs.store.models import (
    Activity,
    ActivityUsed,
    QualityResult,
    QuarantinedInput,
    Stream,
    table_of,
)
from rsp_jobs.store.provenance import ActivityRecord, file_checksum, write_activity
from rsp_jobs.times import as_utc

BATCH_BASE = "urn:rsp:batch:"
Interval = tuple[datetime, datetime] | None


@dataclass(frozen=True)
class QualityOutcome:
    batch: str  # the batch's IRI
    suite: str
    success: bool
    expectations: tuple[Checked, ...]  # every expectation evaluated, in the suite's order
    rows: int
    accepted_rows: int
    quarantined_rows: int  # rows == accepted_rows + quarantined_rows
    docs: Path  # the Data Docs index
    activity: str | None = None  # the quality_check activity's IRI; None without a store

    @property
    def failed(self) -> tuple[Checked, ...]:
        return tuple(e for e in self.expectations if not e.success)

    def summary(self) -> str:
        if self.success:
            return f"batch <{self.batch}> passed {self.suite}: {len(self.expectations)} expectations, {self.rows} rows"
        where = f"; activity <{self.activity}>" if self.activity else ""
        return (
            f"batch <{self.batch}> failed {self.suite}: {len(self.failed)} of {len(self.expectations)} "
            f"expectations failed: {'; '.join(map(str, self.failed))}. {self.quarantined_rows} of "
            f"{self.rows} rows quarantined, {self.accepted_rows} accepted{where}; Data Docs: {self.docs}"
        )


class QualityGateError(RspError):
    """A batch failed its quality checks; the message names the failed expectations."""

    def __init__(self, outcome: QualityOutcome):
        self.outcome = outcome
        super().__init__(outcome.summary())


def require(outcome: QualityOutcome) -> QualityOutcome:
    """The outcome if the batch passed; otherwise raise ``QualityGateError`` to fail the run."""
    if not outcome.success:
        raise QualityGateError(outcome)
    return outcome


def lake_rows(elements: Iterable[Element]) -> pd.DataFrame:
    """Stream elements as rows of the lake's columns (what ``check_input_batch`` reads)."""
    rows = pd.DataFrame(
        map(attrgetter(*suites.LAKE_COLUMNS), elements), columns=list(suites.LAKE_COLUMNS)
    )
    return rows.astype(
        {"ts": "datetime64[us, UTC]", "o_time": "datetime64[us, UTC]", "o_num": "float64"}
    )


def check_input_batch(
    rows: pd.DataFrame,
    *,
    stream: str,
    batch_id: str,
    source: str | None = None,
    interval: Interval = None,
    engine: Engine | None = None,
    background: Iterable[str | Path] = (),
) -> QualityOutcome:
    """Check the rows of one ingested batch of ``stream`` (lake columns, in batch order):
    required columns present and non-null, well-formed terms, timestamps in ``interval`` =
    [start, end) (None: unchecked) and not decreasing frame by frame, no duplicate frames,
    readings inside the ranges of ``ontology/quality.ttl``; ``background`` files type the
    observed properties those ranges name (CityBench: SensorRepository.n3). ``source`` is the
    file (or IRI) the batch came from; with ``engine``, the check is recorded in that store and
    a failing batch quarantined there."""
    batch = BATCH_BASE + batch_id
    record = ActivityRecord(
        "quality_check",
        datetime.now(UTC),
        used=[(batch, "lake_file", None), *([_source_entity(source)] if source else [])],
    )
    view = suites.input_view(rows, load_ranges(), background)
    # a range no row falls under would pass vacuously
    present = set(view["range_property"].dropna())
    suite = suites.input_suite(stream, interval, [r for r in load_ranges() if r.shape in present])
    # the Data Docs list a check by its run name: the file a person dropped, not its checksum
    docs_name = (
        os.path.basename(source) if source and os.path.isfile(source) else (source or batch_id)
    )
    return _gate(
        suite, view, batch_id, record, interval, engine, (stream, source or batch, rows), docs_name
    )


def check_output_batch(
    windows: pd.DataFrame,
    *,
    query_iri: str,
    first_close_us: int,
    step_us: int,
    batch_id: str,
    interval: Interval = None,
    engine: Engine | None = None,
) -> QualityOutcome:
    """Check the windows one evaluation run reported (columns query_iri, window_open,
    window_close, row_count): each close on the query's schedule first_close + k*step, k >= 0
    (µs since the epoch; ``rsp_jobs.algebra.schedule``: t0 + RANGE + k*STEP, or the ticks of
    COMPUTED EVERY), inside ``interval`` = (after, until] (None: unchecked), counts not negative,
    one row per query and close."""
    record = ActivityRecord(
        "quality_check",
        datetime.now(UTC),
        query_iri=query_iri,
        used=[(query_iri, "query", None), (BATCH_BASE + batch_id, "result", None)],
    )
    view = suites.output_view(windows, first_close_us, step_us)
    return _gate(
        suites.output_suite(query_iri, interval), view, batch_id, record, interval, engine, None
    )


def _gate(
    suite,
    view: pd.DataFrame,
    batch_id: str,
    record: ActivityRecord,
    interval: Interval,
    engine: Engine | None,
    input_batch: tuple[str, str, pd.DataFrame] | None,
    docs_name: str | None = None,
) -> QualityOutcome:
    """What both checks share: run the suite, judge the batch, and record the check (the
    activity, its results and, for an input batch (stream, source, rows), its quarantine) in
    one transaction. ``docs_name`` is the run's name in the Data Docs (default: the batch id)."""
    checked, docs = run_suite(suite, view, docs_name or batch_id)
    success = all(c.success for c in checked)
    rows = len(view)
    outcome = QualityOutcome(
        BATCH_BASE + batch_id,
        suite.name,
        success,
        tuple(checked),
        rows,
        rows if success else 0,
        0 if success else rows,
        docs,
    )
    if engine is None:
        return outcome
    record.status = "success" if success else "failed"
    if interval:
        record.window_open, record.window_close = interval
    with write_transaction(engine) as conn:
        activity_id = write_activity(conn, record)
        conn.execute(
            insert(table_of(QualityResult)),
            [
                {
                    "activity_id": activity_id,
                    "suite": c.suite,
                    "expectation": c.label,
                    "success": c.success,
                    "details": c.details,
                }
                for c in outcome.expectations
            ],
        )
        if input_batch is not None:
            _quarantine(conn, activity_id, outcome, *input_batch)
    return replace(outcome, activity=record.iri)


def _source_entity(source: str) -> tuple[str, str, str | None]:
    """What the batch was read from, named as the ingest activity names it (a file:// IRI with
    the file's checksum) when it is a file."""
    if os.path.isfile(source):
        return f"file://{os.path.abspath(source)}", "lake_file", file_checksum(source)
    return source, "lake_file", None


def _quarantine(
    conn: Connection,
    activity_id: int,
    outcome: QualityOutcome,
    stream: str,
    source: str,
    rows: pd.DataFrame,
) -> None:
    """What earlier checks of this batch quarantined is replaced: by nothing if it passed now,
    else by one row per frame (rows grouped by frame and timestamp, in batch order)."""
    earlier = select(ActivityUsed.activity_id).where(
        ActivityUsed.entity_iri == outcome.batch, ActivityUsed.activity_id != activity_id
    )
    conn.execute(delete(QuarantinedInput).where(QuarantinedInput.activity_id.in_(earlier)))
    if outcome.success or rows.empty:
        return
    stream_id = conn.scalar(select(Stream.id).where(Stream.iri == stream)) or register_stream(
        conn, stream
    )
    reason = "; ".join(map(str, outcome.failed))
    terms = rows.reindex(columns=["frame", "ts", "s", "p", "o"]).astype(object)
    conn.execute(
        insert(table_of(QuarantinedInput)),
        [
            {
                "stream_id": stream_id,
                "source_file": source,
                "line": None,
                "reason": reason,
                "triples": len(frame),
                "activity_id": activity_id,
                "text": f"# frame <{iri}> at {ts}\n"
                + "".join(
                    f"{s} {p} {o} <{iri}> .\n"
                    for s, p, o in zip(frame["s"], frame["p"], frame["o"])
                ),
            }
            for (iri, ts), frame in terms.groupby(["frame", "ts"], sort=False, dropna=False)
        ],
    )


@dataclass(frozen=True)
class RecordedCheck:
    """A quality check as the store recorded it (one ``quality_check`` activity): its suite,
    verdict, each expectation's label and outcome, the batch it checked and when it ran."""

    activity: str
    suite: str
    success: bool
    expectations: tuple[tuple[str, bool], ...]  # (label, passed), in the order recorded
    batch: str  # the batch id, as the Data Docs name its run (``validate.docs_page``)
    started_at: datetime

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(label for label, passed in self.expectations if not passed)


def recorded_output_check(engine: Engine, query_iri: str, close: datetime) -> RecordedCheck | None:
    """The latest check of the query's output whose run interval ``(after, until]`` holds the
    window close ``close``: the check of the run that reported that window (a run checks its
    windows before it stores them, so the check's interval is the run's)."""
    with engine.connect() as conn:
        activity = conn.execute(
            select(Activity.id, Activity.iri, Activity.status, Activity.started_at)
            .where(
                Activity.kind == "quality_check",
                Activity.query_iri == query_iri,
                Activity.window_open < close,
                Activity.window_close >= close,
            )
            .order_by(Activity.started_at.desc(), Activity.id.desc())
            .limit(1)
        ).one_or_none()
        if activity is None:
            return None
        results = conn.execute(
            select(QualityResult.suite, QualityResult.expectation, QualityResult.success)
            .where(QualityResult.activity_id == activity.id)
            .order_by(QualityResult.id)
        ).all()
        batch = conn.scalar(
            select(ActivityUsed.entity_iri).where(
                ActivityUsed.activity_id == activity.id,
                ActivityUsed.entity_iri.startswith(BATCH_BASE),
            )
        )
    return RecordedCheck(
        activity.iri,
        results[0].suite if results else "",
        activity.status == "success",
        tuple((r.expectation, bool(r.success)) for r in results),
        (batch or "").removeprefix(BATCH_BASE),
        as_utc(activity.started_at),
    )
