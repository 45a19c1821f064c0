"""The job of an alert DAG run: the alerting query's results reported in ``(after, until]``
(read back from the store, where the query's own run put them) become alerts - enriched,
stored as frames of the query's alert stream with provenance - and the ones not delivered yet
go to the configured notifiers. Re-running an interval re-derives the same alerts and notifies
nothing twice.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from rsp_jobs.alerts import notify
from rsp_jobs.alerts.build import raise_alerts
from rsp_jobs.alerts.enrich import Context, enrich_alerts
from rsp_jobs.alerts.store import mark_notified, store_alerts, unnotified
from rsp_jobs.errors import InputError
from rsp_jobs.orchestrate.registry import load_query
from rsp_jobs.results import WindowResult
from rsp_jobs.store import db
from rsp_jobs.store.models import Frame, StoredResult

log = logging.getLogger("rsp.alerts")


@dataclass(frozen=True)
class AlertRunSummary:
    query: str
    after: str
    until: str
    results: int
    alerts: int
    notified: int
    activity: str | None

    def as_dict(self) -> dict:
        return asdict(self)


def alert_run(
    query_path: str,
    after: datetime,
    until: datetime,
    store_url: str | None = None,
    airflow_context: dict | None = None,
) -> AlertRunSummary:
    registered = load_query(Path(query_path))
    if registered.alert is None:
        raise InputError(
            f"{query_path}: no [alert] table in {Path(query_path).with_suffix('.toml').name}"
        )
    started = datetime.now(UTC)
    engine = db.engine(store_url)
    db.upgrade(store_url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(StoredResult.form, StoredResult.payload, Frame.frame_iri)
            .outerjoin(Frame, Frame.id == StoredResult.frame_id)
            .where(
                StoredResult.query_iri == registered.iri,
                StoredResult.window_close > after,
                StoredResult.window_close <= until,
                StoredResult.row_count > 0,
            )
            .order_by(StoredResult.window_close)
        ).all()
    results = [WindowResult.from_json(r.payload, r.form) for r in rows]
    frames = {result.close_us: r.frame_iri for result, r in zip(results, rows)}
    alerts = enrich_alerts(
        raise_alerts(registered.iri, registered.alert, results, frames),
        registered.alert,
        Context(engine=engine),
    )
    activity = store_alerts(engine, registered.iri, alerts, started)
    sent = 0
    sinks = notify.configured()
    for payload in unnotified(engine, [a.iri for a in alerts]):
        for sink in sinks:
            sink.notify(payload, airflow_context)
        mark_notified(engine, payload["iri"])
        sent += 1
    log.info(
        "%s: (%s, %s]: %d result windows, %d alerts raised, %d newly notified (%s), activity %s",
        registered.dag_id,
        after.isoformat(),
        until.isoformat(),
        len(results),
        len(alerts),
        sent,
        ", ".join(type(sink).__name__ for sink in sinks) or "no notifier",
        activity,
    )
    return AlertRunSummary(
        registered.iri,
        after.isoformat(),
        until.isoformat(),
        len(results),
        len(alerts),
        sent,
        activity,
    )
