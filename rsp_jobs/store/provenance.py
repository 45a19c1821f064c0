"""Provenance records: every ingest and window evaluation is an activity with what it used and
what it generated (checksums included), who ran it (Airflow DAG/run/task/try when under
Airflow, the Spark application) and which code version; exported as W3C PROV-O by
``prov_export``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, delete, exists, select, update

from rsp_jobs import settings
from rsp_jobs.rdf_files import background_spec
from rsp_jobs.store.db import chunks
from rsp_jobs.store.frames import INSERT_ON_CONFLICT
from rsp_jobs.store.models import (
    Activity,
    ActivityGenerated,
    ActivityUsed,
    Derivation,
    QuarantinedInput,
    Query,
    table_of,
)

ACTIVITY_BASE = "urn:rsp:activity:"


@dataclass
class ActivityRecord:
    kind: str  # ingest, window_evaluation, pattern_match, quality_check, alert
    started_at: datetime
    query_iri: str | None = None
    query_text_hash: str | None = None
    window_open: datetime | None = None
    window_close: datetime | None = None
    spark_app_id: str | None = None
    status: str = "success"
    revision_of: str | None = None  # the activity whose results this one revises (late data)
    used: list[tuple[str, str, str | None]] = field(default_factory=list)  # (iri, kind, checksum)
    generated: list[tuple[str, str, str | None]] = field(default_factory=list)
    # (generated entity, used frame): what each result frame was derived from, exactly
    derived: list[tuple[str, str]] = field(default_factory=list)
    # what an evaluation ran with (``rsp audit --reevaluate`` uses them): the origin of the
    # window grid, the entailment regime, the background files as given (``IRI=PATH``)
    t0: datetime | None = None
    entailment: str | None = None
    background: list[str] | None = None
    report: str | None = None  # the reporting policy: which closes report
    iri: str = field(default_factory=lambda: f"{ACTIVITY_BASE}{uuid.uuid4()}")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_checksum(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.cache
def code_version() -> str:
    """The package version and, in a git checkout, the commit (with +dirty for local edits)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("rsp-platform")
    except PackageNotFoundError:
        text = "unknown"
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=settings.REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{text}+{commit}" if commit else text


def airflow_context() -> dict:
    """Airflow exports the running task's identity to its environment (AIRFLOW_CTX_*)."""
    env = os.environ
    try_number = env.get("AIRFLOW_CTX_TRY_NUMBER")
    return {
        "dag_id": env.get("AIRFLOW_CTX_DAG_ID"),
        "run_id": env.get("AIRFLOW_CTX_DAG_RUN_ID"),
        "task_id": env.get("AIRFLOW_CTX_TASK_ID"),
        "try_number": int(try_number) if try_number and try_number.isdigit() else None,
    }


def background_entities(specs: Sequence[str]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Background files as an evaluation records them: the specs with absolute paths (so that a
    re-evaluation from another directory finds them) and each file as a ``background`` entity
    with its SHA-256."""
    recorded, entities = [], []
    for spec in specs:
        iri, path = background_spec(spec)
        path = os.path.abspath(path)
        recorded.append(f"{iri}={path}" if iri else path)
        entities.append((Path(path).as_uri(), "background", file_checksum(path)))
    return recorded, entities


def register_query(conn: Connection, iri: str, text: str) -> str:
    """Keep each version of a query's text (the prov:Plan); returns its hash."""
    digest = text_hash(text)
    table = table_of(Query)
    conn.execute(
        INSERT_ON_CONFLICT[conn.dialect.name](table)
        .values(iri=iri, text_hash=digest, text=text, created_at=datetime.now(UTC))
        .on_conflict_do_nothing(index_elements=[table.c.iri, table.c.text_hash])
    )
    return digest


def query_text(conn: Connection, iri: str, digest: str) -> str | None:
    return conn.scalar(select(Query.text).where(Query.iri == iri, Query.text_hash == digest))


def write_activity(conn: Connection, record: ActivityRecord) -> int:
    values = dict(
        iri=record.iri,
        kind=record.kind,
        query_iri=record.query_iri,
        query_text_hash=record.query_text_hash,
        window_open=record.window_open,
        window_close=record.window_close,
        spark_app_id=record.spark_app_id,
        code_version=code_version(),
        started_at=record.started_at,
        ended_at=datetime.now(UTC),
        status=record.status,
        revision_of=record.revision_of,
        t0=record.t0,
        entailment=record.entailment,
        background=record.background,
        report=record.report,
        **airflow_context(),
    )
    activity_id = conn.execute(
        table_of(Activity).insert().values(**values).returning(table_of(Activity).c.id)
    ).scalar_one()
    for table, entities in (
        (table_of(ActivityUsed), record.used),
        (table_of(ActivityGenerated), record.generated),
    ):
        rows = [
            dict(activity_id=activity_id, entity_iri=iri, entity_kind=kind, checksum=checksum)
            for iri, kind, checksum in dict.fromkeys(entities)
        ]
        if rows:
            conn.execute(table.insert(), rows)
    rows = [
        dict(activity_id=activity_id, entity_iri=entity, source_iri=source)
        for entity, source in dict.fromkeys(record.derived)
    ]
    for chunk in chunks(rows, 10_000):
        conn.execute(table_of(Derivation).insert(), chunk)
    return activity_id


EVALUATION_KINDS = ("window_evaluation", "pattern_match")


def supersede(conn: Connection, query_iri: str, entities: Sequence[str]) -> list[str]:
    """A re-run's claim on what it generated again: earlier evaluations of the query no longer
    record those entities (nor what each was derived from), and one left generating nothing is
    removed, with what it used. Returns the IRIs of the removed activities.

    Decided: a re-run over windows already evaluated (an Airflow retry after a
    killed try that had committed, a cleared task, ``rsp evaluate --store`` again) leaves one
    evaluation activity per window, the latest: the frames it rewrote are what it computed. A
    revision after late data is not a re-run: its caller does not call this, and the activity
    it revises keeps its records, linked by ``prov:wasInformedBy``."""
    earlier = select(Activity.id).where(
        Activity.query_iri == query_iri, Activity.kind.in_(EVALUATION_KINDS)
    )
    touched: set[int] = set()
    for chunk in chunks(list(entities)):
        gone = (
            conn.execute(
                delete(ActivityGenerated)
                .where(
                    ActivityGenerated.activity_id.in_(earlier),
                    ActivityGenerated.entity_iri.in_(chunk),
                )
                .returning(ActivityGenerated.activity_id)
            )
            .scalars()
            .all()
        )
        touched.update(gone)
        conn.execute(
            delete(Derivation).where(
                Derivation.activity_id.in_(earlier), Derivation.entity_iri.in_(chunk)
            )
        )
    if not touched:
        return []
    emptied = select(Activity.id, Activity.iri).where(
        Activity.id.in_(touched), ~exists().where(ActivityGenerated.activity_id == Activity.id)
    )
    removed = conn.execute(emptied).all()
    if removed:
        conn.execute(delete(Activity).where(Activity.id.in_([r.id for r in removed])))
    return [r.iri for r in removed]


def store_ingest(engine, batch, source_path: str, started_at: datetime):
    """Load a stream batch into the store with its ingest activity (one transaction)."""
    from rsp_jobs.store.db import write_transaction

    with write_transaction(engine) as conn:
        return record_ingest(conn, batch, source_path, started_at)[0]


def record_ingest(
    conn: Connection, batch, source_path: str, started_at: datetime, checksum: str | None = None
):
    """``store_ingest`` inside the caller's transaction: the ingest activity used the source
    file (``checksum``: its SHA-256 as read, default hashed now) and generated the batch's
    frames. Returns the load report and the activity IRI."""
    from rsp_jobs.store.frames import frame_checksum, write_batch

    record = ActivityRecord("ingest", started_at)
    record.used = [
        (
            f"file://{os.path.abspath(source_path)}",
            "lake_file",
            checksum or file_checksum(source_path),
        )
    ]
    triples: dict[str, list] = {}
    for e in batch.elements:
        # with the events' interval starts, as the stored frame's checksum sums them
        triples.setdefault(e.frame, []).append((e.s, e.p, e.o, e.start))
    record.generated = [(frame, "frame", frame_checksum(t)) for frame, t in triples.items()]
    if batch.elements:
        record.window_open = min(e.ts for e in batch.elements)
        record.window_close = max(e.ts for e in batch.elements)
    report = write_batch(conn, batch)
    earlier = _same_ingest(conn, record)
    activity_id = (
        write_activity(conn, record)
        if earlier is None
        else conn.scalar(select(Activity.id).where(Activity.iri == earlier))
    )
    if batch.rejections:  # the run that rejected them, for its quarantine task and the UI
        conn.execute(
            update(QuarantinedInput)
            .where(
                QuarantinedInput.activity_id.is_(None),
                QuarantinedInput.source_file.in_(
                    {batch.source, *(r.file for r in batch.rejections)}
                ),
            )
            .values(activity_id=activity_id)
        )
    return report, earlier or record.iri


def _same_ingest(conn: Connection, record: ActivityRecord) -> str | None:
    """The IRI of an earlier ingest of the same content: one that used a file with the same
    SHA-256 and generated the same frames with the same checksums. Loading a file again (a
    re-run of ``rsp evaluate --store`` after one killed once its ingest had committed, or after
    a clean one) then leaves the record one load leaves: each frame generated by one ingest."""
    ((_, _, checksum),) = record.used
    candidates = conn.scalars(
        select(ActivityUsed.activity_id)
        .join(Activity, Activity.id == ActivityUsed.activity_id)
        .where(
            Activity.kind == "ingest",
            ActivityUsed.entity_kind == "lake_file",
            ActivityUsed.checksum == checksum,
        )
    ).all()
    wanted = {(iri, digest) for iri, _, digest in record.generated}
    for activity_id in dict.fromkeys(candidates):
        generated = set(
            conn.execute(
                select(ActivityGenerated.entity_iri, ActivityGenerated.checksum).where(
                    ActivityGenerated.activity_id == activity_id
                )
            ).tuples()
        )
        if generated == wanted:
            return conn.scalar(select(Activity.iri).where(Activity.id == activity_id))
    return None
