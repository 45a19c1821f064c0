"""``rsp demo`` (``make demo``): the platform's main job on the embedded defaults (local Spark,
SQLite store, Airflow on its own SQLite, all under ``<RSP_HOME>/demo``), on real data when
``../shared/data`` is there:

1. CSRBench's seven queries over its stream, checked against the published answers;
2. two hours of the 33 Aarhus traffic streams dropped in the landing directory and replayed
   through real DAG runs: the ingest DAG, every registered traffic query over a fixed half
   hour, the traffic chain (two derived streams and an alert query run on their upstream's
   asset events), the congestion and silence rules, and their alert DAGs;
3. the raw NOAA DART files of 21418 and 21401 dropped in their landing directories and the
   tsunami chain (10-minute averages, tide prediction, detection, alert) replayed over
   02:00-07:00 on 2011-03-11, through the Tohoku earthquake at 05:46:24 UTC (the prediction
   needs averages up to 3 h 15 min back, so predictions begin at 05:15);
then a summary: runs, windows, derived frames, quality results, the alerts (places to warn, an
alternative route), the provenance of one tsunami alert, and plots under ``<home>/plots``.

Without the shared data it says so and replays generated samples instead.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rsp_jobs import compiler, settings
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest import citybench, csrbench, dart
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.results import WindowResult
from rsp_jobs.textfile import read_text

DAY = datetime(2014, 8, 2, 6, 0, tzinfo=UTC)
HOURS = 6
TOHOKU = datetime(2011, 3, 11, 5, 46, 24, tzinfo=UTC)
# five hourly batches: the first predictions need 3 h 15 min of means, and DART 21401's detection at
# 05:50:15 is reported by the window closing at 06:05 (over 02:00-06:00 only 21418's alert was raised)
TSUNAMI_RANGE = (datetime(2011, 3, 11, 2, 0, tzinfo=UTC), datetime(2011, 3, 11, 7, 0, tzinfo=UTC))


def say(text: str = "") -> None:
    print(text, flush=True)


def run_query(path: Path, lake: Lake, background: list[str], out_dir: Path) -> list[WindowResult]:
    query = compiler.compile(read_text(path, "query"), str(path))
    if not isinstance(query, ContinuousQuery):
        raise ValueError(f"{path}: not a C-SPARQL or EP-SPARQL query")
    started = time.perf_counter()
    windows = list(evaluate(query, lake, background))
    seconds = time.perf_counter() - started
    out = out_dir / f"{path.stem}.jsonl"  # CSRBench registers every query under the same name
    out.write_text("".join(json.dumps(w.to_json()) + "\n" for w in windows))
    rows = sum(w.rows for w in windows)
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
        say(
            f"  {'':<24} {'matches the published answers' if same else 'DIFFERS from the published answers'}"
        )
    return ok


def demo_airflow(home: Path, traffic_files: list[Path], dart_files: list[Path]) -> bool:
    """The registered queries through real DAG runs over fixed ranges, with a summary."""
    from rsp_jobs.demo_deployment import airflow_deployment
    from rsp_jobs.orchestrate.replay import replay

    # only the replay's runs
    os.environ.update(
        RSP_HOME=str(home),
        RSP_STORE_URL=f"sqlite:///{home / 'store.sqlite'}",
        RSP_SCHEDULED_RUNS="false",
    )
    after, until = DAY + timedelta(hours=1), DAY + timedelta(hours=1, minutes=30)
    say("Airflow: starting a local deployment (about a minute)")
    with airflow_deployment(home) as airflow:
        say(f"  Airflow UI at {airflow.url} (user {airflow.user}) while the demo runs")
        say(
            f"Traffic: {len(traffic_files)} files through the DAGs, windows closing in "
            f"({after:%Y-%m-%d %H:%M}, {until:%H:%M}] UTC"
        )
        traffic = replay(airflow, {str(citybench.TRAFFIC): traffic_files}, after, until, say)
        t_after, t_until = TSUNAMI_RANGE
        say(
            f"Tsunami: raw DART files {', '.join(p.name for p in dart_files)} through the DAGs, "
            f"({t_after:%Y-%m-%d %H:%M}, {t_until:%H:%M}] UTC"
        )
        tsunami = replay(
            airflow,
            {dart.stream_iri(dart.station_id(p)): [p] for p in dart_files},
            t_after,
            t_until,
            say,
        )
    ok = True
    for title, summary in (("Traffic", traffic), ("Tsunami", tsunami)):
        ok &= summarize(title, summary)
    say_alerts(traffic.alerts + tsunami.alerts)
    tsunami_alerts = [a for a in tsunami.alerts if a["kind"] == "tsunami"]
    if tsunami_alerts:
        say_provenance(tsunami_alerts[0])
    write_plots(home, [dart.station_id(p) for p in dart_files])
    first = min(
        (a for a in tsunami_alerts if a["event_time"] >= TOHOKU.isoformat()),
        default=None,
        key=lambda a: a["event_time"],
    )
    if first is None:
        say("  no tsunami detection after the earthquake: the chain did not work")
        return False
    return ok


def summarize(title: str, summary) -> bool:
    say(f"\n{title} summary")
    for dag_id, states in summary.runs.items():
        say(f"  {dag_id:<26} runs: " + ", ".join(f"{n} {state}" for state, n in states.items()))
    for dag_id, windows in summary.windows.items():
        derived = summary.derived_frames.get(dag_id)
        say(
            f"  {dag_id:<26} {windows:>4} results stored"
            + (f", {derived} derived frames" if derived else "")
        )
    say(
        f"  quality: {summary.quality.get('checks', 0)} checks, {summary.quality.get('passed', 0)} expectations "
        f"passed, {summary.quality.get('failed', 0)} failed"
    )
    return sum(states.get("failed", 0) for states in summary.runs.values()) == 0


def say_alerts(alerts: list[dict]) -> None:
    say(
        f"\nAlerts: {len(alerts)} (all of them: rsp alerts; since a time: rsp alerts --since 2011-03-11T05:00Z)"
    )
    by_kind: dict[str, list[dict]] = {}
    for alert in alerts:
        by_kind.setdefault(alert["kind"], []).append(alert)
    for kind, group in sorted(by_kind.items()):
        say(f"  {kind}: {len(group)}")
        for alert in group[:3]:
            say(f"    {alert['event_time']}  {alert['message']}")


def say_provenance(alert: dict) -> None:
    from rsp_jobs.store import db
    from rsp_jobs.store.lineage import lineage, summary

    frame = alert["frame"]
    say(
        f"\nProvenance of the tsunami alert {alert['iri']} (frame {frame})\n  evidence: "
        + ", ".join(alert["evidence"][:6])
        + f"\n  (this summary: rsp provenance '{frame}'; as PROV-O: add "
        f"--format turtle; re-check it: rsp audit '{frame}')"
    )
    lines = summary(lineage(db.engine(), frame))
    for line in lines[:13]:
        say(f"  {line}")
    if len(lines) > 13:
        say(f"  ... {len(lines) - 13} more activities")


def write_plots(home: Path, stations: list[str]) -> None:
    from rsp_jobs import plots
    from rsp_jobs.errors import RspError
    from rsp_jobs.store import db

    say("\nPlots")

    def dart(station: str) -> Callable[[Path], Path]:
        return lambda out: plots.plot_dart(db.engine(), station, out, *TSUNAMI_RANGE)

    jobs = [(f"dart-{s}.png", dart(s)) for s in stations]
    jobs.append(
        (f"traffic-{DAY:%Y-%m-%d}.png", lambda out: plots.plot_traffic(db.engine(), DAY, out))
    )
    for name, plot in jobs:
        try:
            say(f"  {plot(home / 'plots' / name)}")
        except RspError as exc:
            say(f"  {name}: not written ({exc})")


def generated_sample(home: Path) -> tuple[Path, Path]:
    """A stand-in for the CityBench data: 12 sensors, a reading every 5 minutes for 6 hours,
    and a repository that types each sensor's congestion property."""
    rng = random.Random(7)
    ses, ssn, sao = (
        str(citybench.SES),
        "http://purl.oclc.org/NET/ssnx/ssn#",
        "http://purl.oclc.org/NET/sao/",
    )
    ct = "http://www.insight-centre.org/citytraffic#"
    sensors = ["AarhusTrafficData182955", "AarhusTrafficData158505"] + [
        f"AarhusTrafficData9{i:05d}" for i in range(10)
    ]
    repository = home / "SensorRepository.n3"
    repository.write_text(
        "".join(
            f"<{ses}{s}> <{ssn}observes> <{ses}{s}/congestion> .\n<{ses}{s}/congestion> a <{ct}CongestionLevel> .\n"
            for s in sensors
        )
    )
    stream = home / "sample-traffic.nq"
    with stream.open("w") as out:
        for step in range(HOURS * 12):
            moment = DAY + timedelta(minutes=5 * step)
            frame = f"<{citybench.TRAFFIC}/frame/{moment:%Y-%m-%dT%H:%M:%SZ}>"  # sorts by time
            out.write(
                f"{frame} <http://www.w3.org/ns/prov#generatedAtTime> "
                f'"{moment:%Y-%m-%dT%H:%M:%SZ}"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
            )
            for s in sensors:
                obs = f"<{ses}{s}/obs/{step}>"
                level = round(rng.uniform(0, 0.2), 4)
                out.write(
                    f"{obs} <{ssn}observedBy> <{ses}{s}> {frame} .\n"
                    f"{obs} <{ssn}observedProperty> <{ses}{s}/congestion> {frame} .\n"
                    f'{obs} <{sao}hasValue> "{level}"^^<http://www.w3.org/2001/XMLSchema#double> {frame} .\n'
                )
    return stream, repository


def generated_dart(folder: Path, station: str, arrival: datetime) -> Path:
    """A stand-in for a raw NDBC DART file: a semidiurnal tide sampled every 15 minutes, then
    every minute from 04:00, with a 30 cm tsunami wave arriving on 2011-03-11 at ``arrival``,
    one missing value and 15-minute values repeated (the mapping's cases)."""
    import math

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["#YY  MM DD hh mm ss T   HEIGHT", "#yr  mo dy hr mn  s -        m"]
    start = TSUNAMI_RANGE[0]
    moment = start
    # on past the range by more than the stream's 15 min lateness, as a real file goes on: a run
    # waits until every input's watermark passes its end plus that lateness
    stop = TSUNAMI_RANGE[1] + timedelta(minutes=30)
    while moment < stop:
        hours = (moment - start).total_seconds() / 3600
        height = 5662.0 + 0.5 * math.sin(2 * math.pi * hours / 12.42)
        if moment >= arrival:
            height += 0.3 * math.sin(2 * math.pi * (moment - arrival).total_seconds() / 1800)
        kind = 1 if moment.hour < 4 else 2
        value = (
            "9999.000" if moment == datetime(2011, 3, 11, 4, 30, tzinfo=UTC) else f"{height:.3f}"
        )
        lines.append(f"{moment:%Y %m %d %H %M %S} {kind} {value}")
        if moment.minute % 15 == 0 and kind == 2:
            lines.append(f"{moment:%Y %m %d %H %M %S} 1 {height:.3f}")  # NDBC repeats 15-min values
        moment += timedelta(minutes=15 if kind == 1 else 1)
    path = folder / f"{station}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


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
        files = [
            citybench.merged_traffic(
                DAY + timedelta(hours=h), DAY + timedelta(hours=h + 1), home / f"traffic-{h:02d}.nq"
            )
            for h in range(2)
        ]
        dart_files = [dart.dart_dir() / f"{station}.txt" for station in ("21418", "21401")]
    else:
        say(
            f"The shared data is not at {settings.data_dir()} (set RSP_DATA_DIR): running on generated samples."
        )
        sample = home / "sample-data"
        (sample / "citybench" / "background").mkdir(parents=True)
        stream, repository = generated_sample(sample)
        repository.rename(sample / "citybench" / "background" / repository.name)
        os.environ["RSP_DATA_DIR"] = str(sample)
        files = [stream]
        dart_files = [
            generated_dart(sample / "dart", "21418", TOHOKU + timedelta(minutes=6)),
            generated_dart(sample / "dart", "21401", TOHOKU + timedelta(minutes=24)),
        ]
    ok &= demo_airflow(home, files, dart_files)
    say(f"\nDone in {time.perf_counter() - started:.0f} s; results under {home}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
