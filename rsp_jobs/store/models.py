"""The frame store's tables, the schema Alembic migrates (../shared/DESIGN.md, "Data model": "The frame store").

Portable across SQLite (embedded default) and PostgreSQL (production): RDF terms and IRIs are
text, timestamps are UTC with microseconds (``UTCDateTime``), JSON columns use SQLAlchemy's
JSON type. Every constraint and index is named by ``NAMING`` so migrations can refer to them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy import text as sql_text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

STREAM_KINDS = ("input", "derived")
LATE_POLICIES = ("drop", "reevaluate")
LATE_STATUSES = ("dropped", "pending", "revised")
RESULT_FORMS = ("SELECT", "CONSTRUCT", "ASK", "DESCRIBE")
ACTIVITY_KINDS = ("ingest", "window_evaluation", "pattern_match", "quality_check", "alert")
ACTIVITY_STATUSES = ("running", "success", "failed")
ENTITY_KINDS = ("frame", "lake_file", "query", "result", "background")

# SQLite makes only INTEGER PRIMARY KEY an auto-incrementing rowid; PostgreSQL gets 64 bits.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator):
    """A timezone-aware datetime stored in UTC and read back in UTC on both backends.

    SQLite keeps a fixed-width text form without offset, so values must be normalised to UTC
    before they are written for comparisons and ORDER BY to follow time. Naive datetimes are
    refused rather than guessed at.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(
                f"naive datetime {value.isoformat()}: the store keeps timezone-aware UTC times"
            )
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON}  # noqa: RUF012 (SQLAlchemy reads it)


def table_of(model: type[Base]) -> Table:
    """The Table ``model`` maps. SQLAlchemy types ``__table__`` as any FROM clause (a class may
    map a join or a SELECT); each class here maps one table, which inserts and updates need."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} maps {type(table).__name__}, not a Table")
    return table


class Stream(Base):
    """An input stream or a stream derived by a registered query, with its event-time watermark."""

    __tablename__ = "streams"
    __table_args__ = (
        CheckConstraint(_one_of("kind", STREAM_KINDS), name="kind"),
        CheckConstraint(_one_of("late_policy", LATE_POLICIES), name="late_policy"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    iri: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    query_iri: Mapped[str | None] = mapped_column(Text)
    watermark: Mapped[datetime | None]
    allowed_lateness_ms: Mapped[int] = mapped_column(BigInteger, server_default=sql_text("0"))
    # what happens to data arriving for windows already evaluated: dropped (and counted) or
    # loaded and the affected windows re-evaluated as a revision
    late_policy: Mapped[str] = mapped_column(String(16), server_default=sql_text("'drop'"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Frame(Base):
    """A time-annotated graph: at most one per stream and timestamp. The unique (stream, ts)
    index serves point, range, FIRST and LAST look-ups; the frame IRI names one graph."""

    __tablename__ = "frames"
    __table_args__ = (UniqueConstraint("stream_id", "ts"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id"))
    ts: Mapped[datetime]
    frame_iri: Mapped[str] = mapped_column(Text, unique=True)
    triple_count: Mapped[int]
    checksum: Mapped[str] = mapped_column(String(64))  # sha256 hex of the sorted N-Triples lines


class FrameTriple(Base):
    """A triple of a frame, terms as N-Triples text with the literal's typed values beside it,
    and the start of the interval it holds over when it is a derived event."""

    __tablename__ = "frame_triples"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    frame_id: Mapped[int] = mapped_column(ForeignKey("frames.id", ondelete="CASCADE"), index=True)
    s: Mapped[str] = mapped_column(Text)
    p: Mapped[str] = mapped_column(Text)
    o: Mapped[str] = mapped_column(Text)
    o_num: Mapped[float | None] = mapped_column(Double)
    o_time: Mapped[datetime | None]
    # a derived event's interval start (EP-SPARQL §3.2, migration 0011): the triple holds over
    # [start, frame ts]; NULL: at the frame's instant. The same triple with two starts is two
    # events, so two rows.
    start: Mapped[datetime | None]


class InvariantTriple(Base):
    """A time-invariant statement (TA-RDF §4: every resource annotated with Nil), stored once.
    A statement about a stream holds for every frame of it (restriction 1), so TA-SPARQL sees
    it from each frame without a copy per frame. ``checksum``: sha256 of its N-Triples line,
    which keeps it once whatever its length (a unique index on long text would not)."""

    __tablename__ = "invariant_triples"
    __table_args__ = (UniqueConstraint("checksum"), Index(None, "p"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    s: Mapped[str] = mapped_column(Text)
    p: Mapped[str] = mapped_column(Text)
    o: Mapped[str] = mapped_column(Text)
    o_num: Mapped[float | None] = mapped_column(Double)
    o_time: Mapped[datetime | None]
    checksum: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(Text)  # the file that first stated it
    line: Mapped[int | None]


class FramePart(Base):
    """A delivered part of a frame: a named graph (or the timestamped triples of one time) of
    one source file, or one evaluation's result. Several parts at one (stream, ts) are one
    frame, the union of their triples (TA-RDF restriction 2; C-SPARQL §3.1); each keeps where
    it came from and its own checksum, so a re-delivered part is told from a changed one."""

    __tablename__ = "frame_parts"
    __table_args__ = (UniqueConstraint("frame_id", "source", "graph_iri"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    frame_id: Mapped[int] = mapped_column(ForeignKey("frames.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(Text)  # the file (or evaluation) that delivered it
    graph_iri: Mapped[str] = mapped_column(Text)  # its graph as delivered
    line: Mapped[int | None]  # where it starts in the file, when known
    statements: Mapped[int]  # triples it stated, repeats included
    checksum: Mapped[str] = mapped_column(String(64))  # of its distinct triples


class Query(Base):
    """A registered query's text, one row per version (IRI and text hash): the prov:Plan of the
    evaluations that ran it, and what an audit re-evaluates."""

    __tablename__ = "queries"
    __table_args__ = (UniqueConstraint("iri", "text_hash"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    iri: Mapped[str] = mapped_column(Text)
    text_hash: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class StoredResult(Base):
    """One reported window of a registered query; re-evaluating it upserts the same row."""

    __tablename__ = "window_results"
    __table_args__ = (
        UniqueConstraint("query_iri", "window_close"),
        CheckConstraint(_one_of("form", RESULT_FORMS), name="form"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    query_iri: Mapped[str] = mapped_column(Text)
    window_open: Mapped[datetime]
    window_close: Mapped[datetime]
    form: Mapped[str] = mapped_column(String(16))
    payload: Mapped[dict[str, Any]]  # the window's object as `rsp evaluate` writes it
    row_count: Mapped[int]
    frame_id: Mapped[int | None] = mapped_column(ForeignKey("frames.id", ondelete="SET NULL"))


class Activity(Base):
    """A PROV activity: who ran what, where (DAG, run, task, try, Spark app) and when."""

    __tablename__ = "activities"
    __table_args__ = (
        CheckConstraint(_one_of("kind", ACTIVITY_KINDS), name="kind"),
        CheckConstraint(_one_of("status", ACTIVITY_STATUSES), name="status"),
        Index(None, "dag_id", "run_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    iri: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    query_iri: Mapped[str | None] = mapped_column(Text)
    query_text_hash: Mapped[str | None] = mapped_column(String(64))
    window_open: Mapped[datetime | None]
    window_close: Mapped[datetime | None]
    dag_id: Mapped[str | None] = mapped_column(Text)
    run_id: Mapped[str | None] = mapped_column(Text)
    task_id: Mapped[str | None] = mapped_column(Text)
    try_number: Mapped[int | None]
    spark_app_id: Mapped[str | None] = mapped_column(Text)
    code_version: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(16), default="running")
    revision_of: Mapped[str | None] = mapped_column(Text)  # the evaluation this one revises
    # what an evaluation ran with, for re-evaluation: the window grid's origin, the entailment
    # regime, the background files as given (``IRI=PATH``; each is also a ``background`` entity used)
    t0: Mapped[datetime | None]
    entailment: Mapped[str | None] = mapped_column(String(16))
    background: Mapped[list | None] = mapped_column(JSON)
    report: Mapped[str | None] = mapped_column(String(16))  # reporting policy (revision 0012)


class _ActivityLink:
    """An entity an activity is linked to, with its checksum at the time."""

    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activities.id", ondelete="CASCADE"), primary_key=True
    )
    entity_iri: Mapped[str] = mapped_column(Text, primary_key=True, index=True)
    entity_kind: Mapped[str] = mapped_column(String(16))
    checksum: Mapped[str | None] = mapped_column(String(64))


class ActivityUsed(_ActivityLink, Base):
    """prov:used: an entity (frame, lake file, query, result) an activity read."""

    __tablename__ = "activity_used"
    __table_args__ = (CheckConstraint(_one_of("entity_kind", ENTITY_KINDS), name="entity_kind"),)


class ActivityGenerated(_ActivityLink, Base):
    """prov:wasGeneratedBy, seen from the activity: what it wrote."""

    __tablename__ = "activity_generated"
    __table_args__ = (CheckConstraint(_one_of("entity_kind", ENTITY_KINDS), name="entity_kind"),)


class Derivation(Base):
    """prov:wasDerivedFrom, exactly: a result frame an evaluation generated, and each frame in
    its window's scope (``[close - RANGE, close)`` per stream; the frames of the last n triples
    for ``[TRIPLES n]``) or, for a pattern's result, each frame of its matches' events."""

    __tablename__ = "activity_derivations"

    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activities.id", ondelete="CASCADE"), primary_key=True
    )
    entity_iri: Mapped[str] = mapped_column(Text, primary_key=True, index=True)
    source_iri: Mapped[str] = mapped_column(Text, primary_key=True)


class QualityResult(Base):
    """One expectation's outcome in a quality check activity."""

    __tablename__ = "quality_results"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    activity_id: Mapped[int] = mapped_column(
        ForeignKey("activities.id", ondelete="CASCADE"), index=True
    )
    suite: Mapped[str] = mapped_column(Text)
    expectation: Mapped[str] = mapped_column(Text)
    success: Mapped[bool] = mapped_column(Boolean)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class QuarantinedInput(Base):
    """Input that was read but rejected, with where it came from and why; never dropped silently."""

    __tablename__ = "quarantine"
    __table_args__ = (Index(None, "stream_id", "source_file"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id"))
    source_file: Mapped[str] = mapped_column(Text)
    line: Mapped[int | None]
    reason: Mapped[str] = mapped_column(Text)
    triples: Mapped[int]
    text: Mapped[str] = mapped_column(Text)
    activity_id: Mapped[int | None] = mapped_column(
        ForeignKey("activities.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class IngestedFile(Base):
    """A landing file that was loaded, by content: the same file dropped again is not loaded twice."""

    __tablename__ = "ingested_files"
    __table_args__ = (UniqueConstraint("stream_id", "checksum"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id"))
    path: Mapped[str] = mapped_column(Text)
    checksum: Mapped[str] = mapped_column(String(64))
    frames: Mapped[int]
    triples: Mapped[int]
    activity_iri: Mapped[str | None] = mapped_column(Text)
    loaded_at: Mapped[datetime] = mapped_column(default=utcnow)


class LateArrival(Base):
    """A frame that arrived for windows a query had already evaluated, and what was done with it
    (the stream's late-data policy): dropped, or pending / revised by a re-evaluation."""

    __tablename__ = "late_arrivals"
    __table_args__ = (
        CheckConstraint(_one_of("status", LATE_STATUSES), name="status"),
        Index(None, "query_iri", "status"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id"))
    frame_ts: Mapped[datetime]
    frame_iri: Mapped[str] = mapped_column(Text)
    triples: Mapped[int]
    query_iri: Mapped[str] = mapped_column(Text)
    first_close: Mapped[datetime]  # the evaluated window closes the frame falls in
    last_close: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(16))
    source_file: Mapped[str] = mapped_column(Text)
    revision_activity: Mapped[str | None] = mapped_column(Text)
    arrived_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConsumedFact(Base):
    """A fact a rule's match consumed (DOTR ``consuming``): later matches may not use it again.
    Kept per rule with the match time, so a re-run of an interval first forgets what the
    interval's own matches consumed, and a run loads only what earlier matches consumed."""

    __tablename__ = "consumed_facts"
    __table_args__ = (
        UniqueConstraint("query_iri", "fact_key"),
        Index(None, "query_iri", "match_time"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    query_iri: Mapped[str] = mapped_column(Text)
    fact_key: Mapped[str] = mapped_column(Text)
    fact_time: Mapped[datetime]
    match_time: Mapped[datetime]
    activity_iri: Mapped[str | None] = mapped_column(Text)


class PartialMatch(Base):
    """A partial match of an unbounded EP-SPARQL pattern kept between micro-batches (EP-SPARQL
    §4): a solution of one of its subexpressions (``node_key``) over ``[ta, tw]`` (µs), the
    frames behind it and its bindings (N-Triples text by column)."""

    __tablename__ = "partial_matches"
    __table_args__ = (Index(None, "query_iri", "tw"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    query_iri: Mapped[str] = mapped_column(Text)
    node_key: Mapped[str] = mapped_column(String(40))
    ta: Mapped[int] = mapped_column(BigInteger)
    tw: Mapped[int] = mapped_column(BigInteger)
    events: Mapped[list[str]] = mapped_column(JSON)
    vals: Mapped[dict[str, Any]]


class PartialMatchCut(Base):
    """How far a pattern's kept partial matches are complete (µs: every one ending at or before
    it is stored), and for which version of the query (``plan_key``): a changed query starts over."""

    __tablename__ = "partial_match_cuts"

    query_iri: Mapped[str] = mapped_column(Text, primary_key=True)
    plan_key: Mapped[str] = mapped_column(String(40))
    cut_us: Mapped[int] = mapped_column(BigInteger)


class Alert(Base):
    """An alert an alert DAG raised from a registered query's results: what, about which
    subject (a sensor), when it happened and was reported, its payload (the triggering solution
    and the enrichment: places to warn, an alternative route), its frame of the alerts stream
    (with the provenance activity), and when it was notified (re-runs notify only new alerts)."""

    __tablename__ = "alerts"
    __table_args__ = (UniqueConstraint("alert_iri"), Index(None, "event_time"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    alert_iri: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(32))
    query_iri: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    event_time: Mapped[datetime]
    reported_at: Mapped[datetime]
    message: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]]
    frame_id: Mapped[int | None] = mapped_column(ForeignKey("frames.id", ondelete="SET NULL"))
    activity_iri: Mapped[str | None] = mapped_column(Text)
    notified_at: Mapped[datetime | None]
