"""``rsp demo`` (``make demo``): the platform's main job on the embedded defaults (local Spark,
SQLite store, Airflow on its own SQLite, all under ``<RSP_HOME>/demo``), on real data when
``../shared/data`` is there:

1. CSRBench's seven queries over its stream, checked against the published answers;
2. two hours of the 33 Aarhus traffic streams dropped in the landing directory and replayed
   through real DAG runs: the ingest DAG, every registered query over a fixed half hour, the
   traffic chain (two derived streams and an alert query run on their upstream's asset events);
   then a summary: runs, windows, derived frames, quality results, alerts, and the provenance
   of one alert.

Without the shared data it says so and replays a generated sample instead.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.engine import compile_query, evaluate
from rsp_jobs.ingest import citybench, csrbench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file

DAY = datetime(2014, 8, 2, 6, 0, tzinfo=timezone.utc)
HOURS = 6


def say(text: str = "") -> None:
    print(text, flush=True)


def run_query(path: Path, lake: Lake, background: list[str], out_dir: Path) -> list[dict]:
    query = compile_query(path.read_text(encoding="utf-8"), str(path))
    started = time.perf_counter()
    windows = list(evaluate(query, lake, background))
    seconds = time.perf_counter() - started
    out = out_dir / f"{path.stem}.jsonl"  # CSRBench registers every query under the same name
    out.write_text("".join(json.dumps(w) + "\n" for w in windows))
    rows = sum(len(w.get("bindings", w.get("triples", []))) for w in windows)
    say(f"  {path.stem:<24} {len(windows):>5} windows {rows:>7} results {seconds:7.1f} s  -> {out}")
    return windows


def demo_csrbench(home: Path) -> bool:
    say("CSRBench: 7 C-SPARQL queries against the published answers")
    stream = csrbench.write_stream(home / "csrbench-stream.nq")
    lake = Lake(home / "csrbench-lake")
    lake.write(read_stream_file(stream, csrbench.STREAM), batch_id="csrbench")
    ok = True
    for name in csrbench.QUERIES:
        windows = run_query(csrbench.query_path(name), lake, [], home)
        same = csrbench.answers_of(windows) == csrbench.expected_answers(name)
        ok &= same
        say(f"  {'':<24} {'matches the published answers' if same else 'DIFFERS from the published answers'}")
    return ok


def demo_airflow(home: Path, traffic_files: list[Path]) -> bool:
    """The registered queries through real DAG runs over a fixed range, with a summary."""
    from rsp_jobs.orchestrate.deployment import airflow_deployment
    from rsp_jobs.orchestrate.replay import replay
    from rsp_jobs.store import db
    from rsp_jobs.store.lineage import lineage

    os.environ.update(RSP_HOME=str(home), RSP_STORE_URL=f"sqlite:///{home / 'store.sqlite'}",
                      RSP_SCHEDULED_RUNS="false")  # only the replay's runs
    after, until = DAY + timedelta(hours=1), DAY + timedelta(hours=1, minutes=30)
    say(f"Airflow: replaying {len(traffic_files)} traffic files through the DAGs, windows closing in "
        f"({after:%Y-%m-%d %H:%M}, {until:%H:%M}] UTC (starting Airflow: about a minute)")
    with airflow_deployment(home) as airflow:
        say(f"  Airflow UI at {airflow.url} (user {airflow.user}) while the demo runs")
        summary = replay(airflow, {str(citybench.TRAFFIC): traffic_files}, after, until, say)
    say("\nSummary")
    for dag_id, states in summary.runs.items():
        say(f"  {dag_id:<24} runs: " + ", ".join(f"{n} {state}" for state, n in states.items()))
    for dag_id, windows in summary.windows.items():
        derived = summary.derived_frames.get(dag_id)
        say(f"  {dag_id:<24} {windows:>3} windows evaluated" + (f", {derived} derived frames" if derived else ""))
    say(f"  quality: {summary.quality.get('checks', 0)} checks, {summary.quality.get('passed', 0)} expectations "
        f"passed, {summary.quality.get('failed', 0)} failed")
    say(f"  alerts: {len(summary.alerts)} windows with congestion alerts")
    for alert in summary.alerts[:5]:
        for row in alert["bindings"][:3]:
            say(f"    {alert['window_close']}  {row['sensor']['value'].rsplit('#', 1)[-1]}  "
                f"peak {row['peak']['value']}  readings {row['readings']['value']}")
    if summary.alerts:
        frame = summary.alerts[0]["frame"]
        say(f"\nProvenance of the alert {frame}\n  (all of it as PROV-O: rsp provenance '{frame}'; "
            f"re-check it: rsp audit '{frame}')")
        for step in lineage(db.engine(), frame):
            a = step.activity
            what = a.query_iri or "landing file"
            say(f"  {a.kind:<18} {what:<40} DAG {a.dag_id} run {a.run_id} task {a.task_id}: used "
                f"{len(step.used)}, generated {len(step.generated)}, Spark {a.spark_app_id or '-'}")
    failed = sum(states.get("failed", 0) for states in summary.runs.values())
    return failed == 0


def generated_sample(home: Path) -> tuple[Path, Path]:
    """A stand-in for the CityBench data: 12 sensors, a reading every 5 minutes for 6 hours,
    and a repository that types each sensor's congestion property."""
    rng = random.Random(7)
    ses, ssn, sao = str(citybench.SES), "http://purl.oclc.org/NET/ssnx/ssn#", "http://purl.oclc.org/NET/sao/"
    ct = "http://www.insight-centre.org/citytraffic#"
    sensors = ["AarhusTrafficData182955", "AarhusTrafficData158505"] + [f"AarhusTrafficData9{i:05d}" for i in range(10)]
    repository = home / "SensorRepository.n3"
    repository.write_text("".join(
        f"<{ses}{s}> <{ssn}observes> <{ses}{s}/congestion> .\n<{ses}{s}/congestion> a <{ct}CongestionLevel> .\n"
        for s in sensors))
    stream = home / "sample-traffic.nq"
    with stream.open("w") as out:
        for step in range(HOURS * 12):
            moment = DAY + timedelta(minutes=5 * step)
            frame = f"<{citybench.TRAFFIC}/frame/{moment:%Y-%m-%dT%H:%M:%SZ}>"  # sorts by time
            out.write(f'{frame} <http://www.w3.org/ns/prov#generatedAtTime> '
                      f'"{moment:%Y-%m-%dT%H:%M:%SZ}"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n')
            for s in sensors:
                obs = f"<{ses}{s}/obs/{step}>"
                level = round(rng.uniform(0, 0.2), 4)
                out.write(f"{obs} <{ssn}observedBy> <{ses}{s}> {frame} .\n"
                          f"{obs} <{ssn}observedProperty> <{ses}{s}/congestion> {frame} .\n"
                          f'{obs} <{sao}hasValue> "{level}"^^<http://www.w3.org/2001/XMLSchema#double> {frame} .\n')
    return stream, repository


def main() -> int:
    home = settings.home_dir() / "demo"
    if home.exists():
        shutil.rmtree(home)  # a replay starts from an empty store and Airflow
    home.mkdir(parents=True)
    started = time.perf_counter()
    ok = True
    if settings.data_dir().is_dir():
        ok = demo_csrbench(home)
        say()
        files = [citybench.merged_traffic(DAY + timedelta(hours=h), DAY + timedelta(hours=h + 1),
                                          home / f"traffic-{h:02d}.nq") for h in range(2)]
    else:
        say(f"The shared data is not at {settings.data_dir()} (set RSP_DATA_DIR): running on a generated sample.")
        sample = home / "sample-data"
        (sample / "citybench" / "background").mkdir(parents=True)
        stream, repository = generated_sample(sample)
        repository.rename(sample / "citybench" / "background" / repository.name)
        os.environ["RSP_DATA_DIR"] = str(sample)
        files = [stream]
    ok &= demo_airflow(home, files)
    say(f"\nDone in {time.perf_counter() - started:.0f} s; results under {home}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
