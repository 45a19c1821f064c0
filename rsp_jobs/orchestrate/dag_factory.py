"""The DAG factory: one DAG per registered query under ``queries/``, one ingest DAG per stream of
``queries/streams.toml``. Schedules, assets and wiring only; the work is in ``rsp_jobs.orchestrate``.

- A query over input streams runs on a data-interval timetable of its batch (a whole number of
  STEPs); each run waits, deferred, for its inputs' watermarks, then evaluates every window
  close of its interval in one Spark job.
- A query over a stream another query derives (REGISTER STREAM) runs on that stream's asset and
  takes its interval from the asset events.
- A query with an ``[alert]`` table gets an alert DAG on its output's asset: its new results
  become stored, notified alerts.
- Every query run emits an asset event for its output stream; every ingest that loaded data, one
  for its input stream. Extras: the interval, counts and the provenance activity.

Two DAG files use it (``dags/``): ``rsp_dags.py`` defines the DAGs that ``build`` makes, and
``rsp_query_errors.py`` fails with the errors ``build`` collects (a query file that does not
parse, cannot be read or cannot be scheduled, two that register one name, a broken
``streams.toml``), each naming its file and line. Airflow 3's DAG processor marks every DAG of a
file that has an import error stale (deactivated, not triggerable): the errors must be another
file's, one that defines no DAG, for a broken query to cost its own DAGs only. The DAGs are made
with ``auto_register=False`` so that building them in the errors file defines none there.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

from airflow.sdk import DAG, Asset, DeltaDataIntervalTimetable, DeltaTriggerTimetable, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from rsp_jobs import settings
from rsp_jobs.errors import InputError, RspError
from rsp_jobs.orchestrate import connections, registry
from rsp_jobs.orchestrate.intervals import run_interval
from rsp_jobs.orchestrate.landing_wait import LandingSensor
from rsp_jobs.orchestrate.watermark import WatermarkSensor
from rsp_jobs.times import duration_text, parse_timedelta

log = logging.getLogger("rsp.dags")


def default_args() -> dict:
    """Every task: owned by the platform, retried after a transient failure (a lost Spark
    executor, a locked store) but not after one the input or the query causes (``final``)."""
    retries, delay = settings.task_retries()
    return {"owner": "rsp", "retries": retries, "retry_delay": delay}


def final(run):
    """Run ``run()`` on the frame store the ``rsp_store`` connection names (``RSP_STORE_URL``
    wins); an ``RspError`` (bad input, a failed quality check, a query error) fails the task at
    once, without retries: running it again would fail the same way."""
    try:
        connections.use_store_connection()
        return run()
    except RspError as exc:
        raise AirflowFailException(str(exc)) from exc


def _span(us: int) -> str:
    return duration_text(us // 1000)


def stream_asset(iri: str) -> Asset:
    """A stream as an Airflow asset (the ``x-rsp:`` scheme keeps the IRI, fragment and all)."""
    return Asset(name=iri, uri=f"x-rsp:{iri}", group="rsp-stream")


def describe(rq: registry.RegisteredQuery) -> str:
    streams = "\n".join(
        f"- `<{s}>`" + (f" `{w}`" if (w := _window_of(rq, s)) else "") for s in rq.streams
    )
    lookback = rq.range_us  # None only for an unbounded pattern (``keeps_partials``)
    if lookback is None:
        scope = (
            f"Each run reports the matches ending in its {_span(rq.batch_us)} interval; the "
            "pattern is unbounded, so its partial matches are kept in the store between runs "
            "(no retention: they are never dropped)"
        )
    elif rq.kind == "window":
        scope = (
            f"Each run covers {_span(rq.batch_us)} of window closes (STEP {_span(rq.step_us)}, "
            f"RANGE {_span(lookback)})"
        )
        what = f"**{rq.query.form}** query"
    else:
        scope = (
            f"Each run reports the matches ending in its {_span(rq.batch_us)} interval, "
            f"reading back the pattern's bound of {_span(lookback)}"
        )
    if rq.kind != "window":
        what = "**EP-SPARQL pattern**" if rq.kind == "pattern" else "**DOTR rule**"
    toml = rq.path.with_suffix(".toml")
    run_settings = (
        f"\n\nIts run settings, `{toml.name}`:\n\n```toml\n{toml.read_text().strip()}\n```\n"
        if toml.is_file()
        else ""
    )
    return (
        f"{what} `{rq.iri}` ({rq.application}), from the query file `{rq.path}`: edit it there, "
        "and the DAG follows. (The Code tab shows `rsp_dags.py`, which makes every query's "
        f"DAG.)\n\n{scope}; output stream `{rq.output_stream}`.\n\nStreams:\n{streams}\n\n"
        f"```sparql\n{rq.query.text.strip()}\n```\n{run_settings}"
    )


def summary(rq: registry.RegisteredQuery) -> str:
    """The DAG's one-line description (the DAG list shows it)."""
    what = {
        "window": f"C-SPARQL {rq.query.form}",
        "pattern": "EP-SPARQL pattern",
        "rule": "DOTR rule",
    }[rq.kind]
    windows = sorted({str(w) for s in rq.streams if (w := _window_of(rq, s)) is not None})
    over = f"{len(rq.streams)} stream(s)" + "".join(f" {w}" for w in windows)
    return f"{what} over {over}, every {_span(rq.batch_us)}"


def _window_of(rq: registry.RegisteredQuery, stream: str):
    if rq.kind == "rule":
        return None
    return next(
        (w.window for w in rq.query.windows if w.stream == stream and w.window is not None), None
    )


def replay_params(rq: registry.RegisteredQuery) -> dict:
    """The trigger form of a query over input streams: the interval to evaluate, for a replay of
    recorded data (empty: the run's data interval). Checked before the run waits: both or
    neither, and whole batches (``intervals.run_interval``, ``RegisteredQuery.check_interval``)."""
    from airflow.sdk import Param

    batch = _span(rq.batch_us)
    return {
        name: Param(
            None,
            type=["null", "string"],
            format="date-time",
            title=title,
            description=f"{what} (UTC). Leave both empty for the run's data interval; the interval "
            f"must be whole batches of {batch} on the query's grid of closes.",
        )
        for name, title, what in (
            ("after", "Replay from", "The interval's start, excluded"),
            ("until", "Replay until", "The interval's end, included"),
        )
    }


def query_dag(rq: registry.RegisteredQuery, derived: set[str]) -> DAG:
    upstream = [stream_asset(s) for s in rq.streams if s in derived]
    output = stream_asset(rq.output_stream)
    timetable = (
        DeltaDataIntervalTimetable(timedelta(microseconds=rq.batch_us))
        if registry.scheduled_runs()
        else None
    )
    with DAG(
        dag_id=rq.dag_id,
        schedule=upstream or timetable,
        start_date=rq.first_batch_end(),
        catchup=False,
        auto_register=False,
        max_active_runs=1,
        doc_md=describe(rq),
        description=summary(rq),
        default_args=default_args(),
        params={} if upstream else replay_params(rq),
        tags=["rsp", "query" if rq.kind == "window" else "pattern", rq.application],
    ) as dag:
        # a run on the timetable (or by hand) must cover whole batches; a chained run takes its
        # upstream's interval from the asset events
        wait = WatermarkSensor(
            task_id="wait_for_inputs",
            streams=rq.streams,
            query_path=None if upstream else str(rq.path),
        )

        @task(task_id="evaluate", outlets=[output])
        def evaluate(**context) -> dict:
            from rsp_jobs.orchestrate import lineage_events
            from rsp_jobs.orchestrate.tasks import evaluate_run

            after, until = run_interval(context)
            summary = final(lambda: evaluate_run(str(rq.path), after, until).as_dict())
            extra = context["outlet_events"][output].extra = {
                "after": summary["after"],
                "until": summary["until"],
                "windows": summary["windows"],
                "rows": summary["rows"],
                "activity": summary["activity"],
                "query": summary["query"],
                "intervals": [list(span) for span in summary["intervals"]],
            }
            log.info("asset event for <%s>: %s", rq.output_stream, extra)
            lineage_events.report(
                context, [summary["activity"]], query=summary["query"], source=rq.path
            )
            return summary

        wait >> evaluate()
    return dag


def alert_dag(rq: registry.RegisteredQuery) -> DAG:
    """Runs on each asset event of the query's output: its new results become alerts."""
    alert = rq.alert
    if alert is None:
        raise ValueError(
            f"{rq.path}: alerts need an [alert] table in {rq.path.with_suffix('.toml')}"
        )
    source, alerts = stream_asset(rq.output_stream), stream_asset(f"{rq.iri}/alerts")
    with DAG(
        dag_id=f"alert_{rq.dag_id}",
        schedule=[source],
        start_date=registry.DEFAULT_START,
        catchup=False,
        auto_register=False,
        max_active_runs=1,
        tags=["rsp", "alert", rq.application],
        default_args=default_args(),
        description=f"{alert.kind} alerts from {rq.dag_id}'s results",
        doc_md=(
            f"Raises **{alert.kind}** alerts from the results of `{rq.iri}` (subject variable "
            f"`?{alert.subject}`), stores them as frames of `<{rq.iri}/alerts>` with provenance "
            "and delivers the new ones through the configured notifiers (`RSP_NOTIFIERS`)."
        ),
    ) as dag:

        @task(task_id="raise_alerts", outlets=[alerts])
        def raise_alerts(**context) -> dict:
            from rsp_jobs.orchestrate import lineage_events
            from rsp_jobs.orchestrate.alerting import alert_run

            after, until = run_interval(context)
            summary = final(
                lambda: alert_run(str(rq.path), after, until, airflow_context=context).as_dict()
            )
            extra = context["outlet_events"][alerts].extra = {
                "after": summary["after"],
                "until": summary["until"],
                "alerts": summary["alerts"],
                "activity": summary["activity"],
            }
            log.info("asset event for <%s/alerts>: %s", rq.iri, extra)
            lineage_events.report(context, [summary["activity"]], query=rq.iri, source=rq.path)
            return summary

        raise_alerts()
    return dag


def ingest_dag(config: registry.StreamConfig) -> DAG:
    """Loads the stream's landing files as they arrive: a scheduled run waits, deferred, for a
    file (``landing_wait``), so each run is an arrival; one triggered by hand loads what is there."""
    asset = stream_asset(config.iri)
    every = parse_timedelta(os.environ.get("RSP_INGEST_EVERY", "1m"))
    with DAG(
        dag_id=f"ingest_{config.key}",
        schedule=DeltaTriggerTimetable(every),
        start_date=registry.DEFAULT_START,
        catchup=False,
        auto_register=False,
        max_active_runs=1,
        default_args=default_args(),
        description=f"Loads the files dropped in landing/{config.key}/ into <{config.iri}> as they arrive",
        doc_md=(
            f"Loads files dropped in `{config.landing_dir}` into stream `<{config.iri}>`. A scheduled run "
            "waits (deferred, in the triggerer) until a file is there, then loads it: each run is an "
            "arrival. A run triggered by hand loads what is there now, and is skipped when nothing is.\n\n"
            "Input the parser or the input checks rejected is quarantined, never lost: the task "
            "`quarantined_input` is skipped when there was none; otherwise it lists the parts in its "
            "log and, by `RSP_QUARANTINE_POLICY`, succeeds (`warn`, the default) or fails the run "
            "(`fail`). `rsp quarantine` lists every rejected part."
        ),
        tags=["rsp", "ingest"],
    ) as dag:
        wait = LandingSensor(task_id="wait_for_files", stream=config.iri)

        @task(task_id="load_landing_files", outlets=[asset])
        def load(**context) -> dict:
            from rsp_jobs.orchestrate import lineage_events
            from rsp_jobs.orchestrate.ingest import ingest_landing

            report = final(lambda: ingest_landing(config.iri).as_dict())
            if not report["loaded"]:
                raise AirflowSkipException(f"no new files in {config.landing_dir}")
            extra = context["outlet_events"][asset].extra = {
                "files": report["loaded"],
                "triples": report["triples"],
                "quarantined": report["quarantined"],
                "watermark": report["watermark"],
            }
            log.info("asset event for <%s>: %s", config.iri, extra)
            lineage_events.report(context, [f["activity"] for f in report["files"]])
            return report

        @task(task_id="quarantined_input")
        def quarantined_input(report: dict, **context) -> dict:
            from rsp_jobs.orchestrate.ingest import quarantined_by_run

            message = final(lambda: quarantined_by_run(report, context["run_id"]))
            if message is None:
                raise AirflowSkipException("nothing was quarantined")
            if final(settings.quarantine_policy) == "fail":
                raise AirflowFailException(f"{message}\n(RSP_QUARANTINE_POLICY is fail)")
            log.warning("%s", message)
            return {"stream": config.iri, "quarantined": report["quarantined"]}

        loaded = load()
        wait >> loaded
        quarantined_input(loaded)  # type: ignore[arg-type]  # an XComArg resolves to the dict
    return dag


_told: list[bool] = []


def build() -> tuple[dict[str, DAG], dict[Path, RspError]]:
    """The DAGs of every registered query and stream that can be scheduled, and the error of each
    file that cannot (the DAGs depending on it are left out, the others kept). A broken
    settings file loses every DAG: which queries and streams there are depends on it."""
    import rsp_jobs

    if rsp_jobs.SETTINGS_ERROR is not None:
        return {}, {settings.settings_file() or settings.SETTINGS_FILE: rsp_jobs.SETTINGS_ERROR}
    if not _told:  # once per process (a task's log shows it): the DAG processor parses it twice
        log.info("%s", settings.in_use())
        _told.append(True)
    queries, errors = registry.discover()
    derived = {rq.output_stream for rq in queries if rq.derives_stream}
    dags: dict[str, DAG] = {}
    for rq in queries:
        made = _checked(
            rq.path,
            errors,
            lambda rq=rq: (
                [query_dag(rq, derived)] + ([alert_dag(rq)] if rq.alert is not None else [])
            ),
        )
        dags.update({dag.dag_id: dag for dag in made})
    try:  # a broken catalog loses the ingest DAGs, which need it, not the query DAGs
        catalog = registry.streams()
    except RspError as exc:
        errors[registry.catalog_path()] = exc
    else:
        for config in catalog.values():
            dags.update(
                {
                    dag.dag_id: dag
                    for dag in _checked(
                        registry.catalog_path(), errors, lambda c=config: [ingest_dag(c)]
                    )
                }
            )
    return dags, errors


def _checked(path: Path, errors: dict[Path, RspError], make) -> list[DAG]:
    """``make()``'s DAGs once each passes the validation the DAG processor applies, or none, with
    the reason recorded against ``path``: one DAG that fails it would fail the whole DAG file."""
    try:
        made = make()
        for dag in made:
            dag.validate()
        return made
    except (
        Exception
    ) as exc:  # a bug of ours, met on this file's content: still this file's error only
        errors.setdefault(
            path, InputError(f"{path}: cannot be scheduled ({type(exc).__name__}: {exc})")
        )
        return []


def errors_text(errors: dict[Path, RspError]) -> str:
    """The import error of ``rsp_query_errors.py``: what is lost, then each file's error."""
    count = f"{len(errors)} registered file{'s' if len(errors) > 1 else ''}"
    return f"{count} cannot become DAGs; the DAGs of the other files are loaded:\n" + "\n".join(
        str(e) for e in errors.values()
    )
