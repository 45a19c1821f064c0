"""Waiting for the inputs of a run without holding a worker slot.

A run over ``(after, until]`` may start once every input stream's watermark (the latest event
time loaded) has reached ``until`` plus the stream's allowed lateness: later data for those
windows is late and goes to the stream's late-data policy. The sensor checks once and, if a
stream lags, defers to ``WatermarkTrigger``, which polls the store from the triggerer.

A run does not wait for inputs that cannot come (``RSP_INPUT_WAIT``, default 30 min):

- an input stream of the catalog whose data ends more than that before the run's interval (or
  that has none), with no file waiting in its landing folder, fails the run at once: it is not
  live, as when a DAG is unpaused over recorded data and its first scheduled run is for today;
  a replay is a run triggered over the recorded interval;
- a replay whose recorded data stops short (the interval, plus its allowed lateness, ended more
  than that ago; the stream's data ends inside it, as a file ending at 07:55 with ``until``
  08:00; no file waits) fails at once, naming the stream and where its data ends, rather than
  hold its DAG's one active run for the whole wait; ``RSP_REPLAY_WAIT`` (default 0) lets it
  wait that long for a file still being dropped, then fail the same way;
- otherwise the wait ends that long after the later of the interval's end and the start of the
  wait; the run then fails, naming the streams that lag and how far they got.

Both failures are final (no retries: a retry would wait the same way); clear the task to wait
again once the inputs are there.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException
from airflow.triggers.base import BaseTrigger, TriggerEvent
from sqlalchemy import select

from rsp_jobs import settings
from rsp_jobs.orchestrate.intervals import run_interval
from rsp_jobs.store import db
from rsp_jobs.store.models import Stream
from rsp_jobs.times import duration_text, iso_ms, parse_datetime, to_us


def lagging_streams(
    store_url: str | None, streams: Sequence[str], until: datetime
) -> dict[str, str | None]:
    """The streams whose watermark has not passed ``until`` + allowed lateness, with their
    watermark (None: nothing loaded yet)."""
    with db.engine(store_url).connect() as conn:
        rows = {
            r.iri: r
            for r in conn.execute(
                select(Stream.iri, Stream.watermark, Stream.allowed_lateness_ms).where(
                    Stream.iri.in_(streams)
                )
            )
        }
    lagging: dict[str, str | None] = {}
    for iri in streams:
        row = rows.get(iri)
        if row is None or row.watermark is None:
            lagging[iri] = None
        elif row.watermark < until + timedelta(milliseconds=row.allowed_lateness_ms):
            lagging[iri] = row.watermark.isoformat()
    return lagging


def _when(moment: datetime) -> str:
    return iso_ms(to_us(moment))


def _held(mark: str | None) -> str:
    """How far a stream's data goes, from its watermark (``lagging_streams``'s value)."""
    return f"holds data up to {_when(parse_datetime(mark))}" if mark else "holds no data yet"


class WatermarkTrigger(BaseTrigger):
    """Fires when no input stream lags behind ``until`` any more (polls every ``poll_seconds``),
    or at ``deadline`` with the streams that still lag."""

    def __init__(
        self,
        streams: Sequence[str],
        until: str,
        store_url: str | None = None,
        poll_seconds: float = 10.0,
        deadline: str | None = None,
        why: str | None = None,  # the failure at the deadline, when it is known beforehand
    ):
        super().__init__()
        self.why = why
        self.streams, self.until, self.store_url, self.poll_seconds = (
            list(streams),
            until,
            store_url,
            poll_seconds,
        )
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "streams": self.streams,
                "until": self.until,
                "store_url": self.store_url,
                "poll_seconds": self.poll_seconds,
                "deadline": self.deadline,
                "why": self.why,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        until = parse_datetime(str(self.until))
        deadline = parse_datetime(self.deadline) if self.deadline else None
        while True:
            lagging = await asyncio.to_thread(lagging_streams, self.store_url, self.streams, until)
            if not lagging:
                yield TriggerEvent({"until": self.until, "status": "ready"})
                return
            if deadline and datetime.now(deadline.tzinfo) >= deadline:
                yield TriggerEvent(
                    {
                        "until": self.until,
                        "status": "timeout",
                        "lagging": lagging,
                        "deadline": self.deadline,
                        "why": self.why,
                    }
                )
                return
            self.log.info("waiting for watermarks to pass %s: %s", self.until, lagging)
            await asyncio.sleep(self.poll_seconds)


def stranded(lagging: dict[str, str | None], after: datetime, wait: timedelta) -> dict[str, str]:
    """Of the lagging streams, the catalog's input streams that cannot fill ``(after, ...]``
    soon: data ending more than ``wait`` before ``after`` (or none) and no landing file waiting;
    each with why, in words."""
    from rsp_jobs.orchestrate import registry
    from rsp_jobs.orchestrate.ingest import landing_files

    catalog = registry.streams()
    found = {}
    for iri, mark in lagging.items():
        if iri not in catalog:
            continue  # a derived stream: its producer's runs move it
        if mark is not None and parse_datetime(mark) >= after - wait:
            continue
        if landing_files(catalog[iri]):
            continue
        found[iri] = f"{_held(mark)} and nothing waits in {catalog[iri].landing_dir}"
    return found


def stops_short(
    lagging: dict[str, str | None], until: datetime, wait: timedelta, now: datetime
) -> dict[str, str]:
    """Of the lagging streams, the catalog's input streams replayed past the end of their
    recorded data: the interval's end plus the stream's allowed lateness is more than ``wait``
    before ``now``, and no landing file waits; each with where its data ends, in words."""
    from rsp_jobs.orchestrate import registry
    from rsp_jobs.orchestrate.ingest import landing_files

    catalog = registry.streams()
    found = {}
    for iri, mark in lagging.items():
        config = catalog.get(iri)
        if config is None or landing_files(config):
            continue
        due = until + timedelta(microseconds=config.allowed_lateness_us)
        if due < now - wait:
            found[iri] = (
                f"{_held(mark)}, short of the interval's end plus its allowed lateness "
                f"({_when(due)}); nothing waits in {config.landing_dir}"
            )
    return found


def _short_message(after: datetime, until: datetime, short: dict[str, str]) -> str:
    return (
        f"the replay of ({_when(after)}, {_when(until)}] cannot finish: "
        + "; ".join(f"<{iri}> {why}" for iri, why in short.items())
        + ". Trigger it again up to where the data ends, or drop the rest in the landing folder "
        "first (RSP_REPLAY_WAIT: how long a replay waits for it; dags/README.md)."
    )


class WatermarkSensor(BaseSensorOperator):
    """Waits (deferred) until the run's input streams are complete up to its interval's end."""

    def __init__(
        self,
        *,
        streams: Sequence[str],
        store_url: str | None = None,
        poll_seconds: float = 10.0,
        query_path: str | None = None,
        **kwargs,
    ):
        # a safety net: the wait ends at RSP_INPUT_WAIT
        kwargs.setdefault("timeout", timedelta(days=7))
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
        from rsp_jobs.errors import RspError
        from rsp_jobs.orchestrate.registry import load_query

        try:  # a bad interval fails the same way again: no retries
            after, until = run_interval(context)
            if self.query_path is not None:  # a run on the timetable or by hand: whole batches
                load_query(Path(self.query_path)).check_interval(after, until)
        except RspError as exc:
            raise AirflowFailException(str(exc)) from exc
        from rsp_jobs.orchestrate.connections import store_url

        # the rsp_store connection, for the triggerer too
        self.store_url = self.store_url or store_url()
        lagging = lagging_streams(self.store_url, self.streams, until)
        if not lagging:
            return
        wait = settings.input_wait()
        if cannot := stranded(lagging, after, wait):
            raise AirflowFailException(
                f"the inputs of ({_when(after)}, {_when(until)}] cannot arrive: "
                + "; ".join(f"<{iri}> {why}" for iri, why in cannot.items())
                + f" (more than {duration_text(wait // timedelta(milliseconds=1))} behind the interval: "
                "RSP_INPUT_WAIT). To replay recorded data, trigger a run over its interval "
                "(dags/README.md); to wait for a stream that is catching up, clear this task."
            )
        now = datetime.now(until.tzinfo)
        deadline = max(until, now) + wait
        why = None
        if short := stops_short(lagging, until, wait, now):
            why = _short_message(after, until, short)
            replay_wait = settings.replay_wait()
            if not replay_wait:
                raise AirflowFailException(why)
            deadline = now + replay_wait
            self.log.warning("%s Waiting until %s for it.", why, _when(deadline))
        self.log.info(
            "waiting for %s to pass %s (until %s at most): %s",
            ", ".join(f"<{s}>" for s in lagging),
            _when(until),
            _when(deadline),
            lagging,
        )
        self.defer(
            trigger=WatermarkTrigger(
                self.streams,
                until.isoformat(),
                self.store_url,
                self.poll_seconds,
                deadline.isoformat(),
                why,
            ),
            method_name="execute_complete",
            timeout=deadline - now + timedelta(minutes=5),
        )

    def execute_complete(self, context, event: dict | None = None) -> None:
        if event and event.get("status") == "timeout":
            if event.get("why"):
                raise AirflowFailException(event["why"])
            lag = "; ".join(f"<{iri}> {_held(mark)}" for iri, mark in event["lagging"].items())
            raise AirflowFailException(
                f"the inputs did not arrive by {_when(parse_datetime(event['deadline']))} "
                f"(RSP_INPUT_WAIT past the run's interval ending {_when(parse_datetime(event['until']))}): {lag}. "
                "Clear this task to wait again once they are loaded."
            )
        self.log.info("inputs complete: %s", event)
