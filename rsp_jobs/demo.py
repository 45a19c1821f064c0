"""``rsp demo`` (``make demo``): the engine's main job on the embedded defaults (local Spark, the
lake under the project home), on real data when ``../shared/data`` is there:

1. CSRBench's seven queries over its stream, checked against the published answers;
2. the registered CityBench queries in ``queries/citybench/`` over six hours of the 33 Aarhus
   traffic streams with the sensor repository as background.

Without the shared data it says so and runs the CityBench queries on a generated sample.
"""
from __future__ import annotations

import json
import random
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


def demo_citybench(home: Path, stream_file: Path, repository: Path) -> None:
    say(f"CityBench: registered queries over {stream_file.name}")
    batch = read_stream_file(stream_file, citybench.TRAFFIC)
    lake = Lake(home / "citybench-lake")
    lake.write(batch, batch_id="citybench")
    say(f"  loaded {len(batch.elements)} triples in {batch.frames} frames "
        f"({batch.rejected_triples} rejected)")
    for path in sorted((settings.REPO_ROOT / "queries" / "citybench").glob("*.rsp")):
        windows = run_query(path, lake, [str(repository)], home)
        busiest = max(windows, key=lambda w: len(w.get("bindings", [])), default=None)
        if busiest and busiest.get("bindings"):
            first = busiest["bindings"][0]
            shown = ", ".join(f"{k}={v['value'].rsplit('#', 1)[-1][:40]}" for k, v in first.items())
            say(f"  {'':<24} e.g. window closing {busiest['window_close']}: {shown}")


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
            frame = f"<{citybench.TRAFFIC}/frame/{step}>"
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
    home.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ok = True
    if settings.data_dir().is_dir():
        ok = demo_csrbench(home)
        say()
        stream = citybench.merged_traffic(DAY, DAY + timedelta(hours=HOURS), home / "citybench-traffic.nq")
        demo_citybench(home, stream, citybench.sensor_repository_path())
    else:
        say(f"The shared data is not at {settings.data_dir()} (set RSP_DATA_DIR): running on a generated sample.")
        stream, repository = generated_sample(home)
        demo_citybench(home, stream, repository)
    say(f"\nDone in {time.perf_counter() - started:.0f} s; results under {home}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
