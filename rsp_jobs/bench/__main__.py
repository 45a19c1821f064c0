"""``make bench``: the engine and rdflib side by side on a CityBench-sized workload.

One day of the 33 Aarhus traffic streams (merged into one stream, a frame per 5-minute
reading time), the registered queries in ``queries/citybench/`` (an aggregate and a join with
the sensor repository, ``[RANGE 1h STEP 5m]``). The engine evaluates all windows in one Spark
job; rdflib evaluates the same windows one by one over contents computed in plain Python. Both
answers are compared window by window, and the timings are written as JSON.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.bench import close_ms, cores
from rsp_jobs.bench.reference import Elem, WindowSpec, plain_sparql, rdflib_answer, same_bindings, window_contents
from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.spark.background import load_graph
from rsp_jobs.spark.session import get_spark
from rsp_jobs.terms import nt_to_json, to_nt
from rsp_jobs.times import parse_datetime, to_us, us_to_ms

TRAFFIC = citybench.TRAFFIC
QUERIES = ["congestion_by_segment", "congested_pairs"]


def run(day: datetime, out_path: Path, with_rdflib: bool) -> dict:
    work = settings.home_dir() / "bench"
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    stream_file = citybench.merged_traffic(day, day + timedelta(days=1), work / f"traffic-{day:%Y-%m-%d}.nq")
    mapping_s = time.perf_counter() - t

    t = time.perf_counter()
    batch = read_stream_file(stream_file, TRAFFIC)
    lake = Lake(work / "lake")
    lake.write(batch, batch_id=f"traffic-{day:%Y%m%d}")
    ingest_s = time.perf_counter() - t
    triples = len(batch.elements)

    get_spark()
    repository = str(citybench.sensor_repository_path())
    elements = [Elem(TRAFFIC, us_to_ms(to_us(e.ts)), e.s, e.p, e.o) for e in batch.elements]
    report = {"workload": {"day": f"{day:%Y-%m-%d}", "streams": 33, "triples": triples,
                           "frames": batch.frames, "mapping_seconds": round(mapping_s, 2),
                           "ingest_seconds": round(ingest_s, 2),
                           "ingest_triples_per_second": round(triples / ingest_s)},
              "machine": {"cores": cores(), "python": platform.python_version()},
              "queries": {}}
    for name in QUERIES:
        path = settings.REPO_ROOT / "queries" / "citybench" / f"{name}.rsp"
        query = compiler.compile(path.read_text(), str(path))
        window = query.windows[0].window
        t = time.perf_counter()
        windows = list(evaluate(query, lake, [repository]))
        engine_s = time.perf_counter() - t
        contents = window_contents(elements, [WindowSpec(TRAFFIC, window.range_ms, window.step_ms)])
        window_triples = sum(len(c) for c in contents.values())
        entry = {"windows": len(windows), "window_triples": window_triples,
                 "result_rows": sum(w.rows for w in windows),
                 "windows_with_results": sum(bool(w.bindings) for w in windows),
                 "engine": {"seconds": round(engine_s, 2),
                            "seconds_per_window": round(engine_s / max(len(windows), 1), 4),
                            "stream_triples_per_second": round(triples / engine_s),
                            "window_triples_per_second": round(window_triples / engine_s)}}
        if with_rdflib:
            entry["rdflib"], entry["same_results"] = _rdflib_side(path, contents, windows, triples,
                                                                  window_triples, repository)
        report["queries"][name] = entry
        print(f"{name}: {json.dumps(entry)}", file=sys.stderr)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def _rdflib_side(path, contents, engine_windows, triples, window_triples, repository):
    """rdflib over the same windows; returns its timings and whether every window agrees."""
    sparql = plain_sparql(path.read_text())
    background = [load_graph(repository)]
    t = time.perf_counter()
    answers = {close: rdflib_answer(sparql, content, background) for close, content in contents.items()}
    rdflib_s = time.perf_counter() - t
    same = sorted(answers) == [close_ms(w) for w in engine_windows] and all(
        same_bindings(list(w.bindings), [{k: nt_to_json(to_nt(v)) for k, v in b.items()} for b in answers[close_ms(w)]])
        for w in engine_windows)
    return ({"seconds": round(rdflib_s, 2), "seconds_per_window": round(rdflib_s / max(len(answers), 1), 4),
             "stream_triples_per_second": round(triples / rdflib_s),
             "window_triples_per_second": round(window_triples / rdflib_s)}, same)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rsp_jobs.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--day", default="2014-08-02", help="the CityBench day to replay (default 2014-08-02)")
    parser.add_argument("--output", type=Path, default=Path("bench-results/engine.json"))
    parser.add_argument("--no-rdflib", action="store_true", help="time the engine only")
    args = parser.parse_args(argv)
    if not settings.data_dir().is_dir():
        print(f"bench: the shared data is not at {settings.data_dir()} (set RSP_DATA_DIR)", file=sys.stderr)
        return 2
    day = parse_datetime(args.day)
    report = run(day, args.output, not args.no_rdflib)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
