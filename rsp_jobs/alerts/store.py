"""Alerts in the frame store: each alerting query gets an alert stream ``<query>/alerts`` whose
frame at a report time holds that time's alerts as RDF; the ``alerts`` table indexes them for
``rsp alerts``; an ``alert`` provenance activity records what each raising used (the result
frames and the evidence frames, with checksums) and generated (the alert frames). One
transaction per run; alert IRIs are stable, so a re-run rewrites the same rows.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rdflib import XSD, Literal, URIRef
from sqlalchemy import Engine, select, update

from rsp_jobs.alerts.build import Alert
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import INSERT_ON_CONFLICT, write_batch
from rsp_jobs.store.models import Alert as AlertRow
from rsp_jobs.store.models import Frame, table_of
from rsp_jobs.store.provenance import ActivityRecord, write_activity
from rsp_jobs.store.results import frames_named
from rsp_jobs.terms import RDF_TYPE_NT as RDF_TYPE
from rsp_jobs.terms import nt_to_rdflib, numeric_value, time_value, to_nt
from rsp_jobs.times import datetime_lexical, parse_datetime

AL = "urn:rsp:ns:alert/"


def alert_stream(query_iri: str) -> str:
    return f"{query_iri}/alerts"


def _triples(alert: Alert) -> list[tuple[str, str, str]]:
    me = f"<{alert.iri}>"

    def lit(value, datatype=None) -> str:
        return to_nt(Literal(value, datatype=datatype))

    def when(moment: datetime) -> str:
        return to_nt(Literal(datetime_lexical(moment), datatype=XSD.dateTime, normalize=False))

    out = [
        (me, RDF_TYPE, f"<{AL}Alert>"),
        (me, f"<{AL}kind>", lit(alert.kind)),
        (me, f"<{AL}about>", to_nt(URIRef(alert.subject))),
        (me, f"<{AL}eventTime>", when(alert.event_time)),
        (me, f"<{AL}reportedAt>", when(alert.reported_at)),
        (me, f"<{AL}raisedBy>", f"<{alert.query_iri}>"),
        (me, f"<{AL}message>", lit(alert.message)),
    ]
    if alert.source_frame:
        out.append((me, f"<{AL}triggeredBy>", f"<{alert.source_frame}>"))
    out += [(me, f"<{AL}evidence>", f"<{frame}>") for frame in alert.evidence]
    for place in alert.enrichment.get("places", []):
        out.append((me, f"<{AL}warns>", f"<{place['iri']}>"))
    found = alert.enrichment.get("route")
    if found:
        out.append((me, f"<{AL}routeLengthMetres>", lit(float(found["length_m"]), XSD.double)))
        out.append((me, f"<{AL}routePath>", lit(" ".join(found["nodes"]))))
        out += [(me, f"<{AL}routeSegment>", to_nt(URIRef(s["segment"]))) for s in found["segments"]]
    return out


def store_alerts(
    engine: Engine, query_iri: str, alerts: list[Alert], started_at: datetime
) -> str | None:
    """Write the alerts (frames, rows, provenance) in one transaction; returns the activity IRI."""
    if not alerts:
        return None
    stream = alert_stream(query_iri)
    batch = StreamBatch(stream=stream, source=f"alerts of <{query_iri}>")
    frame_of = {}
    for alert in sorted(alerts, key=lambda a: (a.reported_at, a.iri)):
        frame = f"{stream}/frame/{datetime_lexical(alert.reported_at)}"
        frame_of[alert.iri] = frame
        for s, p, o in _triples(alert):
            term = nt_to_rdflib(o)
            batch.elements.append(
                Element(
                    stream, alert.reported_at, frame, s, p, o, numeric_value(term), time_value(term)
                )
            )
    record = ActivityRecord(
        "alert",
        started_at,
        query_iri=query_iri,
        window_open=min(a.event_time for a in alerts),
        window_close=max(a.reported_at for a in alerts),
    )
    with write_transaction(engine) as conn:
        write_batch(conn, batch, kind="derived", query_iri=query_iri)
        frames = {
            r.frame_iri: (r.id, r.checksum)
            for r in conn.execute(
                select(Frame.frame_iri, Frame.id, Frame.checksum).where(
                    Frame.frame_iri.in_(set(frame_of.values()))
                )
            )
        }
        table = table_of(AlertRow)
        for alert in alerts:
            values = dict(
                alert_iri=alert.iri,
                kind=alert.kind,
                query_iri=query_iri,
                subject=alert.subject,
                event_time=alert.event_time,
                reported_at=alert.reported_at,
                message=alert.message,
                payload=alert.as_dict(),
                frame_id=frames[frame_of[alert.iri]][0],
                activity_iri=record.iri,
            )
            statement = INSERT_ON_CONFLICT[conn.dialect.name](table).values(**values)
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[table.c.alert_iri],
                    set_={k: statement.excluded[k] for k in values if k != "alert_iri"},
                )
            )
        used = sorted({f for a in alerts for f in [a.source_frame, *a.evidence] if f})
        record.used = frames_named(conn, used)
        record.generated = [
            (iri, "frame", frames[iri][1]) for iri in sorted(set(frame_of.values()))
        ]
        write_activity(conn, record)
    return record.iri


def unnotified(engine: Engine, iris: list[str]) -> list[dict]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(AlertRow.alert_iri, AlertRow.payload)
            .where(AlertRow.alert_iri.in_(iris), AlertRow.notified_at.is_(None))
            .order_by(AlertRow.event_time, AlertRow.alert_iri)
        ).all()
    return [r.payload for r in rows]


def mark_notified(engine: Engine, iri: str) -> None:
    with write_transaction(engine) as conn:
        conn.execute(
            update(AlertRow).where(AlertRow.alert_iri == iri).values(notified_at=datetime.now(UTC))
        )


def list_alerts(
    engine: Engine, since: datetime | None = None, kind: str | None = None
) -> list[dict]:
    """Stored alerts by event time (at or after ``since``), each its payload plus the frame and
    activity that hold its provenance and when it was notified."""
    query = select(
        AlertRow.payload, AlertRow.activity_iri, AlertRow.notified_at, Frame.frame_iri
    ).outerjoin(Frame, Frame.id == AlertRow.frame_id)
    if since is not None:
        query = query.where(AlertRow.event_time >= since)
    if kind is not None:
        query = query.where(AlertRow.kind == kind)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(AlertRow.event_time, AlertRow.alert_iri)).all()
    return [
        {
            **row.payload,
            "frame": row.frame_iri,
            "activity": row.activity_iri,
            "notified_at": row.notified_at.isoformat() if row.notified_at else None,
        }
        for row in rows
    ]


def alerts_between(engine: Engine, start: datetime, end: datetime) -> list[Alert]:
    """Stored alerts with event times in [start, end] (the segments currently in alert)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(AlertRow.payload).where(AlertRow.event_time.between(start, end))
        ).all()
    out = []
    for (payload,) in rows:
        out.append(
            Alert(
                payload["iri"],
                payload["kind"],
                payload["query_iri"],
                payload["subject"],
                parse_datetime(payload["event_time"]),
                parse_datetime(payload["reported_at"]),
                payload["message"],
                payload["solution"],
                payload.get("source_frame"),
                payload.get("evidence", []),
                payload.get("enrichment", {}),
            )
        )
    return out
