"""Window results into the frame store, as frames of the query's output stream.

Each reported window becomes one frame, stamped with the window close, of the stream the query
derives; its row in ``window_results`` (upserted by query and window close) keeps the JSON object
``rsp evaluate`` wrote. Frames, results and the evaluation's provenance are written in one
transaction, so a re-run over the same interval leaves the same frames and results, and a crash
leaves none of them half written.

SELECT solutions are stored as resources ``<frame>#r<i>`` with one ``rsp:var/<name>`` triple per
bound variable; ASK as ``<frame> rsp:boolean true|false``; CONSTRUCT as its triples.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from rdflib import BNode, Literal, URIRef
from sqlalchemy import Connection, Engine, select

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.schedule import schedule
from rsp_jobs.ingest.rdf_stream import Element, Part, StreamBatch, frame_checksum
from rsp_jobs.language import ast
from rsp_jobs.results import WindowResult
from rsp_jobs.store.db import chunks, write_transaction
from rsp_jobs.store.frames import INSERT_ON_CONFLICT, advance_watermark, write_batch
from rsp_jobs.store.models import (
    Activity,
    ActivityGenerated,
    Frame,
    StoredResult,
    Stream,
    table_of,
)
from rsp_jobs.store.provenance import (
    EVALUATION_KINDS,
    ActivityRecord,
    background_entities,
    register_query,
    supersede,
    write_activity,
)
from rsp_jobs.terms import nt_to_rdflib, numeric_value, time_value, to_nt
from rsp_jobs.times import as_utc, from_us, parse_datetime, to_us

RSP = "urn:rsp:ns:"


class StoredQuery(Protocol):
    """What the store reads of a compiled query: an ``rsp_jobs.algebra.plan.ContinuousQuery``
    or a DOTR rule (``rsp_jobs.language.dotr.Rule``), whose fields are read-only (frozen
    dataclasses). ``store_evaluation`` of a window evaluation also reads the query's ``windows``
    for the input frames the windows could see, so there it is a ``ContinuousQuery``."""

    @property
    def name(self) -> str: ...

    @property
    def form(self) -> str: ...  # SELECT, CONSTRUCT, ASK, DESCRIBE (a rule: CONSTRUCT)

    @property
    def text(self) -> str: ...


def query_iri(query: StoredQuery) -> str:
    """The registered name if it is an IRI (RSP-QL), else ``urn:rsp:query:<name>``."""
    return query.name if ":" in query.name else f"urn:rsp:query:{query.name}"


def output_stream_iri(query: StoredQuery) -> str:
    return f"{query_iri(query)}/stream"


@dataclass(frozen=True)
class StoredEvaluation:
    activity_iri: str
    windows: int
    frames_written: int


def _window_triples(
    query: StoredQuery, frame: str, window: WindowResult
) -> list[tuple[str, str, str]]:
    if query.form == "ASK":
        value = "true" if window.boolean else "false"
        return [
            (
                f"<{frame}>",
                f"<{RSP}boolean>",
                f'"{value}"^^<http://www.w3.org/2001/XMLSchema#boolean>',
            )
        ]
    if query.form in ("CONSTRUCT", "DESCRIBE"):
        triples = []
        for line in window.triples:
            s, p, rest = line.split(" ", 2)
            triples.append((s, p, rest[:-2]))
        return triples
    triples = []
    for i, binding in enumerate(window.bindings):
        row = f"<{frame}#r{i}>"
        triples.append((row, f"<{RSP}window>", f"<{frame}>"))
        for var, term in binding.items():
            triples.append((row, f"<{RSP}var/{var}>", _json_to_nt(term)))
    return triples


def _json_to_nt(term: dict) -> str:
    if term["type"] == "uri":
        return to_nt(URIRef(term["value"]))
    if term["type"] == "bnode":
        return to_nt(BNode(term["value"]))
    datatype = term.get("datatype")
    return to_nt(
        Literal(
            term["value"],
            lang=term.get("xml:lang"),
            datatype=URIRef(datatype) if datatype else None,
        )
    )


def _starts(window: WindowResult) -> dict[tuple, list]:
    """A pattern's derived triples with the starts of the matches behind them: one event per
    interval (the same triple over [s1, t] and [s2, t] is two events, EP-SPARQL 3.2)."""
    starts: dict[tuple, list] = {}
    for start, line in window.derived:
        s, p, rest = line.split(" ", 2)
        starts.setdefault((s, p, rest[:-2]), []).append(parse_datetime(start))
    return starts


def result_batch(
    query: StoredQuery, windows: Iterable[WindowResult]
) -> tuple[StreamBatch, dict[str, str]]:
    """The reported windows as frames of the query's output stream, stamped with each window's
    close, and the frame IRI of each close. A REGISTER STREAM query's derived stream is this.
    A window without results is an empty frame: a part with no triples, so nothing of it reaches
    a downstream query as data."""
    stream = output_stream_iri(query)
    batch = StreamBatch(stream=stream, source=f"evaluation of {query_iri(query)}")
    frame_of = {}
    for window in windows:
        close = from_us(window.close_us)
        frame = f"{stream}/frame/{window.window_close}"
        frame_of[window.window_close] = frame
        triples = _window_triples(query, frame, window)
        starts = _starts(window)
        first = len(batch.elements)
        for pos, (s, p, o) in enumerate(triples):
            rdf = nt_to_rdflib(o)
            for start in starts.get((s, p, o), [None]):
                batch.elements.append(
                    Element(
                        stream,
                        close,
                        frame,
                        s,
                        p,
                        o,
                        numeric_value(rdf),
                        time_value(rdf),
                        pos,
                        None if start == close else start,
                    )
                )
        # summed with the events' starts, as the frame is: a re-run whose matches span other
        # intervals is a changed part, not a re-delivered one
        events = [(e.s, e.p, e.o, e.start) for e in batch.elements[first:]]
        batch.parts.append(
            Part(frame, close, frame, batch.source, None, len(triples), frame_checksum(events))
        )
    return batch, frame_of


def store_evaluation(
    engine: Engine,
    query: StoredQuery,
    windows: Iterable[WindowResult],
    started_at: datetime,
    spark_app_id: str | None = None,
    evaluated_until: datetime | None = None,
    revision_of: str | None = None,
    kind: str = "window_evaluation",
    used_frames: Iterable[str] | None = None,
    also: Callable[[Connection, str], None] | None = None,
    t0_us: int | None = None,
    entailment: str | None = None,
    background: Sequence[str] = (),
    report: str | None = None,
) -> StoredEvaluation:
    """Persist one evaluation run's windows with its provenance (one transaction).

    ``evaluated_until``: the run evaluated every close up to it, reported or not; the output
    stream's watermark moves there, which is how downstream runs and late-data handling know
    what has been evaluated. ``revision_of``: the activity this re-evaluation revises.
    Patterns (``kind="pattern_match"``) report matches as "windows" closing at their end time;
    they name the exact frames they used (``used_frames``) and may write state in the same
    transaction (``also(conn, activity_iri)``, e.g. the facts a rule consumed).
    ``t0_us``, ``entailment``, ``background`` (the files as given, ``[IRI=]PATH``) and
    ``report`` (the reporting policy) are what the evaluation ran with: recorded, each
    background file with its checksum, for ``rsp audit --reevaluate``."""
    windows = list(windows)
    q_iri, stream = query_iri(query), output_stream_iri(query)
    batch, frame_of = result_batch(query, windows)
    specs, backgrounds = background_entities(background)
    record = ActivityRecord(
        kind,
        started_at,
        query_iri=q_iri,
        spark_app_id=spark_app_id,
        revision_of=revision_of,
        t0=None if t0_us is None else from_us(t0_us),
        entailment=entailment,
        background=specs,
        report=report,
    )
    with write_transaction(engine) as conn:
        record.query_text_hash = register_query(conn, q_iri, query.text)
        loaded = write_batch(conn, batch, kind="derived", query_iri=q_iri)
        if evaluated_until is not None:
            advance_watermark(conn, stream, evaluated_until, kind="derived", query_iri=q_iri)
        frames = _frames_by_iri(conn, stream, list(frame_of.values()))
        for window in windows:
            _upsert_result(conn, q_iri, window, frames[frame_of[window.window_close]][0])
        if windows:
            record.window_open = from_us(min(w.open_us for w in windows))
            record.window_close = from_us(max(w.close_us for w in windows))
            if used_frames is None:
                if not isinstance(query, P.ContinuousQuery):
                    raise TypeError(f"{q_iri}: a rule's evaluation names the frames it used")
                by_close = _window_scopes(conn, query, windows)
                scopes = {frame_of[w.window_close]: by_close[w.close_us] for w in windows}
            else:  # matches: the frames of their events
                scopes = {frame_of[w.window_close]: set(w.events) for w in windows}
            record.derived = [
                (result, source) for result, sources in scopes.items() for source in sorted(sources)
            ]
            wanted = set(used_frames or ()) | {
                source for sources in scopes.values() for source in sources
            }
            record.used = frames_named(conn, sorted(wanted))
        if also is not None:
            also(conn, record.iri)
        record.used.append((f"{q_iri}#{record.query_text_hash}", "query", record.query_text_hash))
        record.used += backgrounds
        record.generated = [(iri, "frame", checksum) for iri, (_, checksum) in frames.items()]
        if revision_of is None:  # a re-run: one evaluation activity per window, the latest
            supersede(conn, q_iri, list(frames))
        write_activity(conn, record)
    return StoredEvaluation(record.iri, len(windows), loaded.frames_written)


def _frames_by_iri(conn, stream: str, iris: list[str]) -> dict[str, tuple[int, str]]:
    stream_id = select(Stream.id).where(Stream.iri == stream).scalar_subquery()
    rows = conn.execute(
        select(Frame.frame_iri, Frame.id, Frame.checksum).where(Frame.stream_id == stream_id)
    )
    wanted = set(iris)
    return {r.frame_iri: (r.id, r.checksum) for r in rows if r.frame_iri in wanted}


def _upsert_result(conn, q_iri: str, window: WindowResult, frame_id: int) -> None:
    table = table_of(StoredResult)
    values = dict(
        query_iri=q_iri,
        window_open=from_us(window.open_us),
        window_close=from_us(window.close_us),
        form=window.form,
        payload=window.to_json(),
        row_count=window.rows,
        frame_id=frame_id,
    )
    statement = INSERT_ON_CONFLICT[conn.dialect.name](table).values(**values)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[table.c.query_iri, table.c.window_close],
            set_={
                k: statement.excluded[k]
                for k in ("window_open", "form", "payload", "row_count", "frame_id")
            },
        )
    )


def frames_named(conn, iris: list[str]) -> list[tuple[str, str, str | None]]:
    """The stored frames with these IRIs (what a pattern's matches used), with checksums."""
    found: list[tuple[str, str, str | None]] = []
    for chunk in chunks(iris):
        rows = conn.execute(
            select(Frame.frame_iri, Frame.checksum).where(Frame.frame_iri.in_(chunk))
        )
        found += [(r.frame_iri, "frame", r.checksum) for r in rows]
    return found


def _window_scopes(
    conn, query: P.ContinuousQuery, windows: list[WindowResult]
) -> dict[int, set[str]]:
    """The stored frames each reported window (by close, µs) was computed from: per stream
    window, those with a time in ``[close - RANGE, close)`` (ISTREAM and DSTREAM compare with
    the evaluation a STEP before, so one STEP more), or for ``[TRIPLES n]`` the latest frames
    before the close (at it too, evaluated on arrival) that hold its last n triples (a stream
    has one frame per time). A time window's stream is read once for the whole run."""
    scopes: dict[int, set[str]] = {w.close_us: set() for w in windows}
    first, last = from_us(min(scopes)), from_us(max(scopes))
    step_us = schedule(query, 0).step  # None: evaluated on each arrival (count windows only)
    for clause in query.windows:
        spec = clause.window
        frames = (
            select(Frame.frame_iri, Frame.ts, Frame.triple_count)
            .join(Stream, Stream.id == Frame.stream_id)
            .where(Stream.iri == clause.stream)
        )
        if isinstance(spec, ast.TimeWindow):
            if step_us is None:  # schedule gives a query with a time window a STEP
                raise ValueError(f"{query.name}: a time window but no STEP")
            back_us = spec.range_ms * 1000 + (0 if query.r2s == "RSTREAM" else step_us)
            rows = conn.execute(
                frames.where(
                    Frame.ts >= first - timedelta(microseconds=back_us), Frame.ts < last
                ).order_by(Frame.ts)
            ).all()
            times = [to_us(as_utc(r.ts)) for r in rows]
            for close, found in scopes.items():
                found.update(
                    r.frame_iri
                    for r in rows[bisect_left(times, close - back_us) : bisect_left(times, close)]
                )
        elif isinstance(spec, ast.CountWindow):
            for close, found in scopes.items():
                # on a grid the window holds what came before the close; on arrival, the arriving
                # frame too; ISTREAM/DSTREAM also saw the evaluation before (a STEP earlier, or on
                # arrival the one at the stream's previous time: what came before this close)
                ends = [(close, step_us is None)]
                if query.r2s != "RSTREAM":
                    ends.append((close - (step_us or 0), False))
                for end, inclusive in ends:
                    before = Frame.ts <= from_us(end) if inclusive else Frame.ts < from_us(end)
                    held = 0
                    for row in conn.execute(
                        frames.where(before).order_by(Frame.ts.desc()).limit(spec.triples)
                    ):
                        if held >= spec.triples:
                            break
                        found.add(row.frame_iri)
                        held += row.triple_count
    return scopes


@dataclass(frozen=True)
class StoredWindow:
    """A reported window as the store keeps it: its result (``rsp evaluate``'s JSON object, as
    a ``WindowResult``), the frame of the output stream that holds it, and the evaluation
    activity that generated that frame (None if a later re-run removed the record)."""

    result: WindowResult
    frame: str | None
    activity: str | None


def recent_results(engine: Engine, query: str, limit: int = 5) -> list[StoredWindow]:
    """The ``limit`` latest reported windows of the query with IRI ``query``, the latest first."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(StoredResult.form, StoredResult.payload, Frame.frame_iri)
            .outerjoin(Frame, Frame.id == StoredResult.frame_id)
            .where(StoredResult.query_iri == query)
            .order_by(StoredResult.window_close.desc())
            .limit(limit)
        ).all()
        frames = [r.frame_iri for r in rows if r.frame_iri]
        generated: dict[str, str] = {}
        for chunk in chunks(frames):
            for entity, activity in conn.execute(
                select(ActivityGenerated.entity_iri, Activity.iri)
                .join(Activity, Activity.id == ActivityGenerated.activity_id)
                .where(
                    ActivityGenerated.entity_iri.in_(chunk),
                    Activity.kind.in_(EVALUATION_KINDS),
                )
                .order_by(Activity.started_at)
            ):
                generated[entity] = activity  # a revision, started later, is the latest word
    return [
        StoredWindow(
            WindowResult.from_json(r.payload, r.form),
            r.frame_iri,
            generated.get(r.frame_iri) if r.frame_iri else None,
        )
        for r in rows
    ]
