"""Re-evaluate a stored window result from the stored frames it was computed from, and compare:
the last step of ``rsp audit --reevaluate``.

It sits above the store and the engine, beside ``engine.py``: it reads the stored input frames
into a scratch lake and evaluates the query there with ``engine.evaluate``, so that neither
layer imports the other.

What is evaluated, and how:

- the query text the evaluation recorded as its plan (what ran, even if the file changed since);
- with the settings the evaluation recorded (store revision 0010 on: its ``t0``, entailment
  regime and background files, each file with its SHA-256; from revision 0012 its reporting
  policy): a background file whose content
  changed since is reported as such (``Reevaluation.background_changed``), and the window is
  re-evaluated with the file as it is now, so that a different result is told apart from a
  tampered one;
- for an evaluation stored before that revision, with the settings of the registered query of
  that IRI (``rsp_jobs.orchestrate.registry``: ``t0`` and ``entailment`` from its ``.toml``, the
  files of its FROM graphs from ``queries/streams.toml``), as the DAG task evaluates it, and for
  a query that is not registered, with ``rsp evaluate``'s defaults: t0 at the epoch, simple
  entailment, no background files;
- ``t0_us``, ``entailment`` and ``background`` given by the caller (``rsp audit --t0
  --entailment --background``) win over all of these.

Decision, patterns: the result of an EP-SPARQL pattern or a DOTR rule (a ``pattern_match``
evaluation, or a registered query of kind ``pattern`` or ``rule``) is not re-evaluated:
``reevaluate`` raises an ``InputError`` naming the query. A match is reported by the batch
that holds its end, and may rest on state carried over from earlier batches: the facts a
consuming rule consumed, an unbounded pattern's kept partial matches. The store keeps that
state only as the latest run left it, so ``engine.match`` over one stored end time could
differ from what the batch saw with nothing tampered with, or agree for the wrong reason. The
audit's first step still applies to patterns: a ``pattern_match`` activity records exactly the
frames its matches used, and their checksums are checked.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine, select

from rsp_jobs import compiler, settings
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.regimes import check_regime
from rsp_jobs.algebra.schedule import REPORT_NON_EMPTY, schedule
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.errors import InputError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.language.ast import TimeWindow
from rsp_jobs.orchestrate.registry import RegisteredQuery, discover
from rsp_jobs.orchestrate.spark_connection import get_spark
from rsp_jobs.rdf_files import background_spec
from rsp_jobs.store.lineage import AuditReport
from rsp_jobs.store.models import Frame, FrameTriple, StoredResult, Stream
from rsp_jobs.times import iso_ms, to_us


@dataclass(frozen=True)
class Reevaluation:
    """A stored window and the same window evaluated again, with the settings used."""

    stored: dict
    recomputed: dict  # {} when the evaluation reports no window at that close
    t0_us: int
    entailment: str
    background: tuple[str, ...]
    registered: Path | None  # the registered query file whose settings were used
    note: str | None = None  # e.g. the registered file's text changed since
    recorded: bool = False  # the settings are those the evaluation recorded
    # background files changed since the evaluation: (path, recorded sha256, now; None: gone)
    background_changed: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def same(self) -> bool:
        return same_window(self.stored, self.recomputed)

    @property
    def settings(self) -> str:
        """The settings as one phrase, for ``rsp audit``."""
        where = (
            "recorded by the evaluation"
            if self.recorded
            else f"settings of {self.registered}"
            if self.registered
            else "not registered: rsp evaluate's defaults"
        )
        files = f", {len(self.background)} background file(s)" if self.background else ""
        return f"t0 {iso_ms(self.t0_us)}, entailment {self.entailment}{files}; {where}"


def registered_query(query_iri: str, root: Path | None = None) -> RegisteredQuery | None:
    """The registered query with this IRI (under ``root``, default ``queries_dir()``), if it loads."""
    loaded, _ = discover(root)
    return next((rq for rq in loaded if rq.iri == query_iri), None)


def reevaluate(
    engine: Engine,
    report: AuditReport,
    background: Sequence[str] = (),
    t0_us: int | None = None,
    entailment: str | None = None,
) -> Reevaluation:
    """Evaluate the window of the stored result ``report.iri`` (audited by
    ``rsp_jobs.store.lineage.audit``) again over the stored frames; see the module docstring
    for the query's settings and for patterns."""
    # the store finds a query's text by its IRI: a text without an IRI is never read
    if report.query_text is None or report.query_iri is None:
        raise InputError(
            f"{report.iri}: cannot re-evaluate: no evaluation with a recorded query text generated it"
        )
    registered = registered_query(report.query_iri)
    kind = registered.kind if registered is not None else None
    if report.evaluation_kind == "pattern_match" or kind in ("pattern", "rule"):
        raise InputError(
            f"{report.query_iri}: cannot re-evaluate a pattern's match (EP-SPARQL pattern or DOTR "
            "rule): a match may rest on state carried between batches (consumed facts, kept partial "
            "matches) that the store keeps only as the latest run left it; its input frames were "
            "checked above"
        )
    query = compiler.compile(
        report.query_text, str(registered.path) if registered else report.query_iri
    )
    if not isinstance(query, ContinuousQuery):
        raise InputError(f"{report.query_iri}: cannot re-evaluate: not a continuous query")
    if query.pattern:
        raise InputError(
            f"{report.query_iri}: cannot re-evaluate a pattern's match (EP-SPARQL pattern)"
        )
    recorded = report.entailment is not None
    if report.entailment is not None:
        defaults = (report.t0_us or 0, report.entailment, tuple(report.background or ()))
    elif registered is not None:
        defaults = (registered.t0_us, registered.entailment, registered.background)
    else:
        defaults = (0, "simple", ())
    # which closes report: recorded from revision 0012 on, non-empty before it (the only policy)
    policy = (
        report.report or REPORT_NON_EMPTY
        if recorded
        else registered.report
        if registered is not None
        else REPORT_NON_EMPTY
    )
    t0_us = t0_us if t0_us is not None else defaults[0]
    entailment = check_regime(entailment or defaults[1])
    background = tuple(background) or defaults[2]
    paths = {background_spec(spec)[1] for spec in background}
    missing = [path for path, _, now in report.background_changed if now is None and path in paths]
    if missing:
        raise InputError(
            f"{report.iri}: cannot re-evaluate: the background file {missing[0]} the evaluation "
            "used is gone (pass --background to use another)"
        )
    note = None
    if not recorded and registered is not None and registered.query.text != report.query_text:
        note = (
            f"{registered.path} has changed since this evaluation: its stored text was evaluated with the "
            "file's current settings"
        )

    with engine.connect() as conn:
        stored = conn.execute(
            select(StoredResult)
            .join(Frame, Frame.id == StoredResult.frame_id)
            .where(Frame.frame_iri == report.iri)
        ).one_or_none()
        if stored is None:
            raise InputError(f"{report.iri}: not a stored window result")
        close = stored.window_close
        since = _lookback_us(query, t0_us)
        rows = conn.execute(
            select(
                Stream.iri,
                Frame.ts,
                Frame.frame_iri,
                FrameTriple.id,
                FrameTriple.s,
                FrameTriple.p,
                FrameTriple.o,
                FrameTriple.o_num,
                FrameTriple.o_time,
                FrameTriple.start,
            )
            .join(Frame, Frame.stream_id == Stream.id)
            .join(FrameTriple, FrameTriple.frame_id == Frame.id)
            .where(
                Stream.iri.in_([w.stream for w in query.windows]),
                Frame.ts < close,
                *([Frame.ts >= close - timedelta(microseconds=since)] if since is not None else []),
            )
        ).all()
    get_spark()  # on RSP_SPARK_MASTER, else the Airflow connection, else local[2]
    with tempfile.TemporaryDirectory(dir=settings.home_dir()) as scratch:
        lake = Lake(Path(scratch) / "lake")
        for stream in {r.iri for r in rows}:
            batch = StreamBatch(stream, "store")
            # a frame's triples were stored in the order the stream delivered them: that is their
            # position; a derived event keeps its interval start, as the lake it was read from did
            batch.elements = [
                Element(stream, r.ts, r.frame_iri, r.s, r.p, r.o, r.o_num, r.o_time, r.id, r.start)
                for r in rows
                if r.iri == stream
            ]
            lake.write(batch)
        close_us = to_us(close)
        again = list(
            evaluate(
                query,
                lake,
                list(background),
                t0_us,
                Interval(close_us - 1, close_us),
                entailment=entailment,
                report=policy,
            )
        )
    return Reevaluation(
        stored.payload,
        again[0].to_json() if again else {},
        t0_us,
        entailment,
        background,
        registered.path if registered else None,
        note,
        recorded,
        tuple(report.background_changed),
    )


def _lookback_us(query: ContinuousQuery, t0_us: int) -> int | None:
    """How far before the close the frames are read: the widest RANGE, and for ISTREAM and
    DSTREAM one step more (they compare with the window before); None: every earlier frame
    (a count-based window)."""
    ranges = [w.window.range_ms for w in query.windows if isinstance(w.window, TimeWindow)]
    if not ranges or len(ranges) != len(query.windows):
        return None
    step = schedule(query, t0_us).step if query.r2s != "RSTREAM" else None
    return max(ranges) * 1000 + (step or 0)


def same_window(a: dict, b: dict) -> bool:
    """Equal as reported windows: same bounds and the same results as multisets."""

    def rows(window: dict):
        items = window.get("bindings", window.get("triples"))
        return None if items is None else sorted(map(repr, items))

    return (
        a.get("window_close") == b.get("window_close")
        and a.get("boolean") == b.get("boolean")
        and rows(a) == rows(b)
    )
