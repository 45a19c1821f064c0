"""Replaying streams through the DAGs: the main job of ``make demo``.

Starts a local Airflow (scheduler, DAG processor, triggerer, API server) on the embedded
defaults, drops the stream files in their landing directories, runs the ingest DAG, then
triggers the root query DAGs once per batch interval of the range, in order; the chained
queries run when their upstream's asset events arrive. Everything goes through real DAG runs;
the summary is read back from Airflow's REST API and the frame store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from rsp_jobs.alerts.store import list_alerts
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import drop, landing_files
from rsp_jobs.orchestrate.registry import RegisteredQuery
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, Frame, QualityResult, StoredResult, Stream

TERMINAL = {"success", "failed"}


@dataclass
class ReplaySummary:
    runs: dict[str, dict[str, int]] = field(default_factory=dict)  # dag id -> state -> count
    windows: dict[str, int] = field(default_factory=dict)  # query -> windows stored
    derived_frames: dict[str, int] = field(default_factory=dict)
    quality: dict[str, int] = field(default_factory=dict)  # passed / failed expectations
    alerts: list[dict] = field(default_factory=list)  # the stored alerts (rsp alerts --json)


def run_states(airflow, dag_id: str) -> list[str]:
    runs = (
        airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 500})
        .raise_for_status()
        .json()
    )
    return [r["state"] for r in runs["dag_runs"]]


def waiting_for_files(airflow, dag_id: str) -> int:
    """How many runs of an ingest DAG wait, deferred, for a file to land."""
    found = (
        airflow.client.get(
            f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances",
            params={"task_id": "wait_for_files", "state": "deferred"},
        )
        .raise_for_status()
        .json()
    )
    return found["total_entries"]


def trigger(
    airflow, dag_id: str, after: datetime | None = None, until: datetime | None = None
) -> str:
    body = {"logical_date": (until or datetime.now().astimezone()).isoformat()}
    if after is not None:
        if until is None:
            raise ValueError(
                f"{dag_id}: a run from {after.isoformat()} needs the end of its interval"
            )
        body.update(data_interval_start=after.isoformat(), data_interval_end=until.isoformat())
    run = airflow.client.post(f"/api/v2/dags/{dag_id}/dagRuns", json=body).raise_for_status().json()
    return run["dag_run_id"]


def wait_for_run(airflow, dag_id: str, run_id: str, timeout: float) -> str:
    def done():
        state = (
            airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            .raise_for_status()
            .json()["state"]
        )
        return state if state in TERMINAL else None

    return airflow.wait_for(done, timeout, f"run {run_id} of {dag_id}")


def ingested(airflow, dag_id: str, config, timeout: float) -> str:
    """Wait until the ingest DAG has taken every file out of the stream's landing folder and
    the run that did has finished; returns that run's ``load_landing_files`` state. An unpaused
    ingest DAG's scheduled run is usually waiting for files already, and the DAG runs one run
    at a time, so a run triggered now would queue behind the waiting one: one is triggered only
    when no run is going."""
    triggered: list[str] = []  # the run triggered here, if any

    def done():
        runs = (
            airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})
            .raise_for_status()
            .json()
        )
        # newest first
        runs = sorted(runs["dag_runs"], key=lambda r: r["start_date"] or "~", reverse=True)
        if landing_files(config):
            if not triggered and not any(r["state"] in ("running", "queued") for r in runs):
                triggered.append(trigger(airflow, dag_id))
            return None
        for run in runs:  # the newest run that loaded: the next one may be waiting for files
            state = (
                airflow.client.get(
                    f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}/taskInstances/"
                    "load_landing_files"
                )
                .raise_for_status()
                .json()["state"]
            )
            if state in ("success", "failed", "upstream_failed"):
                return state
            if state not in (None, "skipped"):
                return None  # loading
        return None

    return airflow.wait_for(done, timeout, f"{dag_id} loaded the files in {config.landing_dir}")


def unpause_all(airflow, dag_ids: Sequence[str], timeout: float = 180) -> None:
    def parsed():
        listed = (
            airflow.client.get("/api/v2/dags", params={"limit": 200})
            .raise_for_status()
            .json()["dags"]
        )
        return {d["dag_id"] for d in listed} >= set(dag_ids)

    airflow.wait_for(parsed, timeout, "the project's DAGs parsed")
    for dag_id in dag_ids:
        airflow.client.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False}).raise_for_status()


def replay(
    airflow,
    stream_files: dict[str, list[Path]],
    after: datetime,
    until: datetime,
    say: Callable[[str], None] = print,
    timeout: float = 1800,
) -> ReplaySummary:
    """Land ``stream_files`` (stream IRI -> files), ingest them, and evaluate every registered
    query over ``(after, until]`` through DAG runs."""
    queries, errors = registry.discover()
    if errors:
        raise RuntimeError("; ".join(str(e) for e in errors.values()))
    streams = registry.streams()
    ingest_dags = [f"ingest_{streams[iri].key}" for iri in stream_files]
    queries = downstream_of(queries, set(stream_files))
    roots = [q for q in queries if set(q.streams) <= set(stream_files)]
    for (
        q
    ) in roots:  # each run must be a whole batch (the DAG refuses others): say so before starting
        q.check_interval(after, until)
    alert_dags = [f"alert_{q.dag_id}" for q in queries if q.alert is not None]
    unpause_all(airflow, ingest_dags + [q.dag_id for q in queries] + alert_dags)

    for iri, files in stream_files.items():
        for path in files:
            drop(path, streams[iri])
    for iri, dag_id in zip(stream_files, ingest_dags):
        say(f"  {dag_id}: {ingested(airflow, dag_id, streams[iri], timeout)}")

    # every root's runs at once: the executor runs them side by side, as the scheduler would
    triggered = []
    for q in roots:
        run_ids = [trigger(airflow, q.dag_id, a, b) for a, b in batches(q, after, until)]
        say(f"  {q.dag_id}: {len(run_ids)} runs over ({after:%H:%M}, {until:%H:%M}]")
        triggered += [(q.dag_id, run_id) for run_id in run_ids]
    for dag_id, run_id in triggered:
        wait_for_run(airflow, dag_id, run_id, timeout)
    catch_up = _CatchUp(airflow, queries, after, until)

    def evaluated() -> bool | None:
        if _evaluated_through(airflow, queries, until, alert_dags):
            return True
        catch_up()
        return None

    airflow.wait_for(evaluated, timeout, "the chained queries and alerts")
    return summarize(airflow, queries, ingest_dags, alert_dags)


class _CatchUp:
    """Airflow 3 can drop an asset event that arrives while its consumer DAG is at
    ``max_active_runs`` (apache/airflow#56050): the consumer never runs for that interval. A
    DAG scheduled on derived streams whose output lags behind them, with no run of it or of
    its producers going for three looks in a row, gets one run for the missing interval
    ``(its watermark, its producers' watermark]``, as the lost event would have given it.
    Always returns None (a ``wait_for`` probe that never ends the wait)."""

    PATIENCE = 3

    def __init__(self, airflow, queries: list[RegisteredQuery], after: datetime, until: datetime):
        derived = {q.output_stream: q.dag_id for q in queries}
        self.airflow, self.after, self.until = airflow, after, until
        self.idle: dict[str, int] = {}  # dag id -> looks in a row it was behind and quiet
        # (dag id, the streams it waits for and the DAGs that make them, the stream it writes)
        self.consumers = [
            (q.dag_id, {s: derived[s] for s in q.streams if s in derived}, q.output_stream)
            for q in queries
            if any(s in derived for s in q.streams)
        ]
        self.consumers += [
            (f"alert_{q.dag_id}", {q.output_stream: q.dag_id}, f"{q.iri}/alerts")
            for q in queries
            if q.alert is not None
        ]

    def __call__(self) -> None:
        with db.engine().connect() as conn:
            marks = dict(conn.execute(select(Stream.iri, Stream.watermark)).all())
        for dag_id, upstream, output in self.consumers:
            produced = [marks.get(s) for s in upstream]
            known = [mark for mark in produced if mark is not None]
            ready = min(min(known), self.until) if len(known) == len(produced) else None
            done = max(marks.get(output) or self.after, self.after)
            behind = ready is not None and done < ready
            quiet = behind and all(
                state in TERMINAL
                for d in [dag_id, *upstream.values()]
                for state in run_states(self.airflow, d)
            )
            self.idle[dag_id] = self.idle.get(dag_id, 0) + 1 if quiet else 0
            if self.idle[dag_id] >= self.PATIENCE:
                self.idle[dag_id] = 0
                try:
                    trigger(self.airflow, dag_id, done, ready)
                except Exception:
                    continue
        return None


def downstream_of(queries: list[RegisteredQuery], streams: set[str]) -> list[RegisteredQuery]:
    """The queries that read only ``streams`` or streams derived from them (a replay of some
    input streams runs exactly these)."""
    chosen, known, grew = [], set(streams), True
    while grew:
        grew = False
        for q in queries:
            if q not in chosen and set(q.streams) <= known:
                chosen.append(q)
                known.add(q.output_stream)
                grew = True
    return [q for q in queries if q in chosen]


def batches(
    q: RegisteredQuery, after: datetime, until: datetime
) -> list[tuple[datetime, datetime]]:
    """``(after, until]`` as the query's runs, one batch each (``check_interval`` has passed)."""
    step = timedelta(microseconds=q.batch_us)
    return [(after + k * step, after + (k + 1) * step) for k in range((until - after) // step)]


def _evaluated_through(
    airflow, queries: list[RegisteredQuery], until: datetime, alert_dags: Sequence[str] = ()
) -> bool:
    """Every query evaluated up to ``until`` and none of their (or the alert DAGs') runs still going."""
    with db.engine().connect() as conn:
        marks = dict(
            conn.execute(
                select(Stream.iri, Stream.watermark).where(
                    Stream.iri.in_([q.output_stream for q in queries])
                )
            ).all()
        )
    evaluated = all(
        (mark := marks.get(q.output_stream)) is not None and mark >= until for q in queries
    )
    dag_ids = [q.dag_id for q in queries] + list(alert_dags)
    return evaluated and all(
        s in TERMINAL for dag_id in dag_ids for s in run_states(airflow, dag_id)
    )


def summarize(
    airflow, queries: list[RegisteredQuery], ingest_dags: list[str], alert_dags: Sequence[str] = ()
) -> ReplaySummary:
    summary = ReplaySummary()
    for dag_id in ingest_dags + [q.dag_id for q in queries] + list(alert_dags):
        counts = Counter(run_states(airflow, dag_id))
        if dag_id in ingest_dags:  # its scheduled run waits, deferred, for the next file to land
            # (no more than are running: a run may have moved on between the two calls)
            counts["waiting for files"] = min(waiting_for_files(airflow, dag_id), counts["running"])
            counts["running"] -= counts["waiting for files"]
        summary.runs[dag_id] = {s: n for s, n in sorted(counts.items()) if n}
    with db.engine().connect() as conn:
        for q in queries:
            summary.windows[q.dag_id] = conn.execute(
                select(func.count())
                .select_from(StoredResult)
                .where(StoredResult.query_iri == q.iri)
            ).scalar_one()
            if q.derives_stream:
                summary.derived_frames[q.dag_id] = conn.execute(
                    select(func.count())
                    .select_from(Frame)
                    .join(Stream, Stream.id == Frame.stream_id)
                    .where(Stream.iri == q.output_stream)
                ).scalar_one()
        for success, count in conn.execute(
            select(QualityResult.success, func.count()).group_by(QualityResult.success)
        ):
            summary.quality["passed" if success else "failed"] = count
        summary.quality["checks"] = conn.execute(
            select(func.count()).select_from(Activity).where(Activity.kind == "quality_check")
        ).scalar_one()
        summary.alerts = [
            a for a in list_alerts(db.engine()) if a["query_iri"] in {q.iri for q in queries}
        ]
    return summary
