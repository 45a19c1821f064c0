"""Waiting for the inputs of a run without holding a worker slot.

A run over ``(after, until]`` may start once every input stream's watermark (the latest event
time loaded) has reached ``until`` plus the stream's allowed lateness: later data for those
windows is late and goes to the stream's late-data policy. The sensor checks once and, if a
stream lags, defers to ``WatermarkTrigger``, which polls the store from the triggerer.
"""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Optional, Sequence

from airflow.sdk import BaseSensorOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent
from sqlalchemy import select

from rsp_jobs.orchestrate.intervals import run_interval
from rsp_jobs.store import db
from rsp_jobs.store.models import Stream
from rsp_jobs.times import parse_datetime


def lagging_streams(store_url: Optional[str], streams: Sequence[str], until: datetime) -> dict[str, Optional[str]]:
    """The streams whose watermark has not passed ``until`` + allowed lateness, with their
    watermark (None: nothing loaded yet)."""
    with db.engine(store_url).connect() as conn:
        rows = {r.iri: r for r in conn.execute(
            select(Stream.iri, Stream.watermark, Stream.allowed_lateness_ms).where(Stream.iri.in_(streams)))}
    lagging = {}
    for iri in streams:
        row = rows.get(iri)
        if row is None or row.watermark is None:
            lagging[iri] = None
        elif row.watermark < until + timedelta(milliseconds=row.allowed_lateness_ms):
            lagging[iri] = row.watermark.isoformat()
    return lagging


class WatermarkTrigger(BaseTrigger):
    """Fires when no input stream lags behind ``until`` any more (polls every ``poll_seconds``)."""

    def __init__(self, streams: Sequence[str], until: str, store_url: Optional[str] = None,
                 poll_seconds: float = 10.0):
        super().__init__()
        self.streams, self.until, self.store_url, self.poll_seconds = list(streams), until, store_url, poll_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"streams": self.streams, "until": self.until, "store_url": self.store_url,
                 "poll_seconds": self.poll_seconds})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        until = parse_datetime(str(self.until))
        while True:
            lagging = await asyncio.to_thread(lagging_streams, self.store_url, self.streams, until)
            if not lagging:
                yield TriggerEvent({"until": self.until, "status": "ready"})
                return
            self.log.info("waiting for watermarks to pass %s: %s", self.until, lagging)
            await asyncio.sleep(self.poll_seconds)


class WatermarkSensor(BaseSensorOperator):
    """Waits (deferred) until the run's input streams are complete up to its interval's end."""

    def __init__(self, *, streams: Sequence[str], store_url: Optional[str] = None,
                 poll_seconds: float = 10.0, query_path: Optional[str] = None, **kwargs):
        kwargs.setdefault("timeout", timedelta(hours=6))
        super().__init__(**kwargs)
        self.streams, self.store_url, self.poll_seconds = list(streams), store_url, poll_seconds
        # a query on a timetable: its run's interval must be whole batches, checked before waiting
        self.query_path = query_path

    def _until(self, context) -> datetime:
        _, until = run_interval(context)
        return until

    def poke(self, context) -> bool:
        return not lagging_streams(self.store_url, self.streams, self._until(context))

    def execute(self, context) -> None:
        if self.query_path is not None:
            from airflow.sdk.exceptions import AirflowFailException

            from rsp_jobs.errors import RspError
            from rsp_jobs.orchestrate.registry import load_query

            try:
                load_query(Path(self.query_path)).check_interval(*run_interval(context))
            except RspError as exc:  # the same interval fails the same way: no retries
                raise AirflowFailException(str(exc)) from exc
        from rsp_jobs.orchestrate.connections import store_url

        self.store_url = self.store_url or store_url()  # the rsp_store connection, for the triggerer too
        if self.poke(context):
            return
        until = self._until(context)
        self.defer(trigger=WatermarkTrigger(self.streams, until.isoformat(), self.store_url, self.poll_seconds),
                   method_name="execute_complete", timeout=timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context, event: Optional[dict] = None) -> None:
        self.log.info("inputs complete: %s", event)
