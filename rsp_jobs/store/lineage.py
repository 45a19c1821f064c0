"""Lineage of a stored result or frame: the activities behind it, back to the input files, as W3C
PROV-O (``rsp provenance``) and as an audit that recomputes what was used (``rsp audit``)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from rdflib import BNode, Graph, Literal, Namespace, URIRef
from rdflib.namespace import PROV, RDF, XSD
from sqlalchemy import Engine, select

from rsp_jobs.errors import InputError
from rsp_jobs.store.db import chunks
from rsp_jobs.store.frames import frame_checksum, frame_events
from rsp_jobs.store.models import (
    Activity,
    ActivityGenerated,
    ActivityUsed,
    Derivation,
    Frame,
    Query,
    Stream,
)
from rsp_jobs.store.provenance import EVALUATION_KINDS, file_checksum
from rsp_jobs.times import as_utc, datetime_lexical, parse_datetime, to_us

RSPNS = Namespace("urn:rsp:ns:")
ENGINE_AGENT = URIRef("urn:rsp:agent:engine")


@dataclass
class Step:
    """One activity in the lineage, with what it used and generated of the lineage (an
    evaluation reached through one result frame: that window's inputs, not the whole run's)."""

    activity: Any  # the activities row (a Core row: its columns are untyped attributes)
    used: list = field(default_factory=list)  # rows of activity_used
    generated: list = field(default_factory=list)  # rows of activity_generated
    # generated entity -> the used frames it was derived from
    derived: dict = field(default_factory=dict)


def stored_iri(engine: Engine, iri: str) -> str:
    """``iri`` as the store names it. A frame IRI ``<stream>/frame/<time>`` is found by its
    stream and instant whatever lexical form its time is written in (``07:30:00Z``,
    ``07:30:00.000Z``, ``09:30:00+02:00``): a printed time, pasted, names the frame. Any other
    IRI, or one the store has no frame for, is returned as given."""
    stream, marker, written = iri.rpartition("/frame/")
    if not marker:
        return iri
    try:
        moment = parse_datetime(written)
    except ValueError:
        return iri
    with engine.connect() as conn:
        found = conn.scalar(
            select(Frame.frame_iri)
            .join(Stream, Stream.id == Frame.stream_id)
            .where(Stream.iri == stream, Frame.ts == moment)
        )
    return found or iri


def lineage(engine: Engine, iri: str, depth: int | None = None) -> list[Step]:
    """Every activity upstream of ``iri`` (an entity or an activity), breadth first; with
    ``depth``, only that many levels (1: the activity that generated ``iri``). From a result
    frame, the way up follows what that frame was derived from (``activity_derivations``: its
    window's frames, its matches' events); an activity recorded without them, everything it used.
    Each level is a handful of queries, whatever the number of entities in it."""
    if depth is not None and depth < 1:
        raise InputError(f"--depth {depth}: give 1 or more levels of activities")
    steps: dict[int, Step] = {}
    rows: dict[int, tuple[list, list]] = {}
    # activity -> the entities of the lineage it generated (None: itself)
    reached: dict[int, set | None] = {}
    seen, entities, level = {iri}, [iri], 1
    with engine.connect() as conn:
        if (
            conn.scalar(select(Activity.id).where(Activity.iri == iri)) is None
            and conn.scalar(
                select(ActivityGenerated.activity_id)
                .where(ActivityGenerated.entity_iri == iri)
                .limit(1)
            )
            is None
        ):
            raise InputError(f"{iri}: no activity generated it and no activity has that IRI")
        while entities:
            found, derived = _level(conn, entities, rows)
            following = []
            for activity, entity in found:
                steps.setdefault(activity.id, Step(activity))
                used, _ = rows[activity.id]
                frames = {u.entity_iri for u in used if u.entity_kind == "frame"}
                if activity.iri == entity:
                    sources = frames
                    reached[activity.id] = None
                else:
                    sources = derived.get((activity.id, entity)) or frames
                    steps[activity.id].derived[entity] = sources
                    if activity.id not in reached:
                        reached[activity.id] = {entity}
                    elif (entities_reached := reached[activity.id]) is not None:
                        entities_reached.add(entity)
                if depth is None or level < depth:
                    for source in sorted(sources - seen):
                        seen.add(source)
                        following.append(source)
            entities, level = following, level + 1
    for activity_id, step in steps.items():
        used, generated = rows[activity_id]
        generated_here = reached[activity_id]
        needed = set().union(*step.derived.values()) if generated_here is not None else None
        step.used = [
            u for u in used if needed is None or u.entity_kind != "frame" or u.entity_iri in needed
        ]
        step.generated = [
            g for g in generated if generated_here is None or g.entity_iri in generated_here
        ]
    return list(steps.values())


def _level(conn, entities: list[str], rows: dict[int, tuple[list, list]]):
    """One level of the lineage: the (activity, entity) pairs where the activity is the entity or
    generated it, in the order of ``entities``; the frames each generated entity was derived
    from; and, into ``rows``, what each newly met activity used and generated."""
    pairs: dict[str, list[int]] = {}
    derived: dict[tuple[int, str], set] = {}
    activities: dict[int, Any] = {}  # rows of activities
    for chunk in chunks(entities):
        for activity in conn.execute(select(Activity).where(Activity.iri.in_(chunk))):
            activities[activity.id] = activity
            pairs.setdefault(activity.iri, []).append(activity.id)
        for row in conn.execute(
            select(ActivityGenerated.activity_id, ActivityGenerated.entity_iri)
            .where(ActivityGenerated.entity_iri.in_(chunk))
            .order_by(ActivityGenerated.activity_id)
        ):
            pairs.setdefault(row.entity_iri, []).append(row.activity_id)
        for row in conn.execute(select(Derivation).where(Derivation.entity_iri.in_(chunk))):
            derived.setdefault((row.activity_id, row.entity_iri), set()).add(row.source_iri)
    wanted = sorted({i for ids in pairs.values() for i in ids} - activities.keys())
    for chunk in chunks(wanted):
        activities.update(
            (a.id, a) for a in conn.execute(select(Activity).where(Activity.id.in_(chunk)))
        )
    found = [(activities[i], entity) for entity in entities for i in pairs.get(entity, ())]
    new = sorted({activity.id for activity, _ in found} - rows.keys())
    used: dict[int, list] = {i: [] for i in new}
    generated: dict[int, list] = {i: [] for i in new}
    for chunk in chunks(new):
        for row in conn.execute(select(ActivityUsed).where(ActivityUsed.activity_id.in_(chunk))):
            used[row.activity_id].append(row)
        for row in conn.execute(
            select(ActivityGenerated).where(ActivityGenerated.activity_id.in_(chunk))
        ):
            generated[row.activity_id].append(row)
    rows.update({i: (used[i], generated[i]) for i in new})
    return found, derived


def summary(steps: list[Step]) -> list[str]:
    """The lineage for a reader: what ran, in time order, one line per activity with its DAG run,
    window and the counts of what it used and generated (``rsp provenance``'s default; the
    PROV-O graph of one tsunami alert is about 150,000 lines)."""
    kinds = Counter(step.activity.kind for step in steps)
    inputs = {u.entity_iri for step in steps for u in step.used if u.entity_kind == "lake_file"}
    lines = [
        f"{len(steps)} activities ("
        + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        + f"), "
        f"{len(inputs)} input file(s)"
    ]
    for step in sorted(steps, key=lambda s: (s.activity.started_at, s.activity.id)):
        a = step.activity
        what = (
            a.query_iri
            or ", ".join(sorted(u.entity_iri for u in step.used if u.entity_kind == "lake_file"))
            or "-"
        )
        run = f" DAG {a.dag_id} run {a.run_id} task {a.task_id}" if a.dag_id else ""
        window = ""
        # an evaluation's closes, or the times of the frames an ingest loaded
        if a.window_close is not None:
            span = "windows" if a.kind in EVALUATION_KINDS else "frames"
            window = f" {span} {_iso(a.window_open)} .. {_iso(a.window_close)}"
        used = Counter(u.entity_kind for u in step.used)
        made = Counter(g.entity_kind for g in step.generated)
        lines.append(
            f"{_iso(a.started_at)}  {a.kind:<18} {what}{run}{window}; used "
            + (", ".join(f"{n} {k}(s)" for k, n in sorted(used.items())) or "nothing")
            + "; generated "
            + (", ".join(f"{n} {k}(s)" for k, n in sorted(made.items())) or "nothing")
            + (f"; revises {a.revision_of}" if a.revision_of else "")
        )
    return lines


def _iso(moment) -> str:
    return datetime_lexical(as_utc(moment)) if moment is not None else "-"


def prov_graph(engine: Engine, iri: str, depth: int | None = None) -> Graph:
    """The lineage as PROV-O: entities, activities, used / wasGeneratedBy / wasDerivedFrom, times,
    and each evaluation's query as the prov:Plan of a qualified association with the engine."""
    graph = Graph()
    graph.bind("prov", PROV)
    graph.bind("rsp", RSPNS)
    graph.add((ENGINE_AGENT, RDF.type, PROV.SoftwareAgent))
    for step in lineage(engine, iri, depth):
        a = step.activity
        node = URIRef(a.iri)
        graph.add((node, RDF.type, PROV.Activity))
        graph.add((node, RSPNS.kind, Literal(a.kind)))
        graph.add((node, PROV.startedAtTime, Literal(a.started_at, datatype=XSD.dateTime)))
        if a.ended_at:
            graph.add((node, PROV.endedAtTime, Literal(a.ended_at, datatype=XSD.dateTime)))
        for name in (
            "status",
            "code_version",
            "spark_app_id",
            "dag_id",
            "run_id",
            "task_id",
            "try_number",
        ):
            value = getattr(a, name)
            if value is not None:
                graph.add((node, RSPNS[name], Literal(value)))
        if a.revision_of:  # a re-evaluation after late data revises an earlier evaluation
            graph.add((node, PROV.wasInformedBy, URIRef(a.revision_of)))
            graph.add((node, RSPNS.revisionOf, URIRef(a.revision_of)))
        if a.entailment is not None:  # what the evaluation ran with (revision 0010 on)
            graph.add((node, RSPNS.entailment, Literal(a.entailment)))
        if a.report is not None:  # its reporting policy (revision 0012 on)
            graph.add((node, RSPNS.report, Literal(a.report)))
        for name in ("window_open", "window_close", "t0"):
            if getattr(a, name) is not None:
                graph.add((node, RSPNS[name], Literal(getattr(a, name), datatype=XSD.dateTime)))
        plans = []
        for used in step.used:
            entity = URIRef(used.entity_iri)
            _entity(graph, entity, used.entity_kind, used.checksum)
            if used.entity_kind == "query":
                plans.append(entity)
                graph.add((entity, RDF.type, PROV.Plan))
            else:
                graph.add((node, PROV.used, entity))
        association = BNode()
        graph.add((node, PROV.qualifiedAssociation, association))
        graph.add((association, RDF.type, PROV.Association))
        graph.add((association, PROV.agent, ENGINE_AGENT))
        for plan in plans:
            graph.add((association, PROV.hadPlan, plan))
        for generated in step.generated:
            entity = URIRef(generated.entity_iri)
            _entity(graph, entity, generated.entity_kind, generated.checksum)
            graph.add((entity, PROV.wasGeneratedBy, node))
            sources = step.derived.get(generated.entity_iri)
            for used in step.used:
                # a result rests on the background graphs of its evaluation as well as on its frames
                if used.entity_kind == "background" or (
                    used.entity_kind != "query" and (sources is None or used.entity_iri in sources)
                ):
                    graph.add((entity, PROV.wasDerivedFrom, URIRef(used.entity_iri)))
    return graph


def _entity(graph: Graph, entity: URIRef, kind: str, checksum: str | None) -> None:
    graph.add((entity, RDF.type, PROV.Entity))
    graph.add((entity, RSPNS.entityKind, Literal(kind)))
    if checksum:
        graph.add((entity, RSPNS.sha256, Literal(checksum)))


@dataclass
class AuditReport:
    iri: str
    checked: int = 0
    changed: list[str] = field(default_factory=list)  # frames whose content no longer matches
    missing: list[str] = field(default_factory=list)  # frames no longer in the store
    # the evaluation that generated ``iri``: its kind (window_evaluation, pattern_match), query
    # and the query text it recorded as its plan
    evaluation_kind: str | None = None
    query_text: str | None = None
    query_iri: str | None = None
    # what that evaluation ran with, when it recorded it (None: an evaluation stored before
    # revision 0010, or not an evaluation): t0 (µs), entailment, background files as given
    t0_us: int | None = None
    entailment: str | None = None
    background: list[str] | None = None
    report: str | None = None  # the reporting policy (None: before revision 0012, non-empty)
    # background files of the lineage whose content changed since (path, recorded, now; now is
    # None for a file that is gone)
    background_changed: list[tuple[str, str, str | None]] = field(default_factory=list)

    @property
    def inputs_unchanged(self) -> bool:
        return not self.changed and not self.missing and not self.background_changed


def audit(engine: Engine, iri: str) -> AuditReport:
    """Recompute the checksum of every stored frame, and of every background file, the lineage
    of ``iri`` used; note the settings the evaluation that generated it recorded."""
    report = AuditReport(iri)
    steps = lineage(engine, iri)
    with engine.connect() as conn:
        known = {
            r.frame_iri
            for r in conn.execute(
                select(Frame.frame_iri).where(
                    Frame.frame_iri.in_(
                        [u.entity_iri for s in steps for u in s.used if u.entity_kind == "frame"]
                    )
                )
            )
        }
        # the latest evaluation that generated ``iri`` itself (a revision after late data comes
        # after the evaluation it revises), not one further upstream
        evaluation = max(
            (
                s.activity
                for s in steps
                if s.activity.kind in EVALUATION_KINDS
                and (s.activity.iri == iri or any(g.entity_iri == iri for g in s.generated))
            ),
            key=lambda a: a.id,
            default=None,
        )
        if evaluation is not None:
            report.evaluation_kind = evaluation.kind
            report.query_iri = evaluation.query_iri
            report.query_text = conn.scalar(
                select(Query.text).where(
                    Query.iri == evaluation.query_iri, Query.text_hash == evaluation.query_text_hash
                )
            )
            if evaluation.entailment is not None:
                report.t0_us = to_us(as_utc(evaluation.t0)) if evaluation.t0 is not None else None
                report.entailment = evaluation.entailment
                report.background = list(evaluation.background or [])
                report.report = evaluation.report
    checksums: dict[
        str, str | None
    ] = {}  # one read per background file, however many steps used it
    for step in steps:
        for used in step.used:
            if used.entity_kind == "background":
                path = url2pathname(urlparse(used.entity_iri).path)
                if path not in checksums:
                    checksums[path] = file_checksum(path) if os.path.isfile(path) else None
                now = checksums[path]
                if (
                    now != used.checksum
                    and (path, used.checksum, now) not in report.background_changed
                ):
                    report.background_changed.append((path, used.checksum, now))
            if used.entity_kind != "frame":
                continue
            report.checked += 1
            if used.entity_iri not in known:
                report.missing.append(used.entity_iri)
            elif frame_checksum(frame_events(engine, used.entity_iri)) != used.checksum:
                report.changed.append(used.entity_iri)
    return report
