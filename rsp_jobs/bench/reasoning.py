"""``make bench`` (reasoning): stream entailment over a large generated class hierarchy.

The background is a tree of classes (branching 3, depth 8: 3,280 classes) with sub-properties,
domains and ranges; the stream is typed observations, one frame per second. The registered
query asks for the instances of a class just under the root, so nearly every answer is entailed
(leaf types lifted seven levels, or a domain or range's type lifted). Reported: the background's
closure time (cold and from the cache), the triples the stream entails, stream triples per
second over the whole run and the time per micro-batch (one ``evaluate`` per run interval, as
Airflow would schedule it). The answer of one window is checked against rdflib over owlrl's
closure of that window and the background (typing rules read one triple at a time, so for this
query reasoning per frame and per window agree).

    python -m rsp_jobs.bench.reasoning --output bench-results/reasoning.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rdflib import Graph, Namespace, URIRef
from rdflib.namespace import RDF, RDFS, XSD

from rsp_jobs import settings
from rsp_jobs.bench import close_ms, cores
from rsp_jobs.times import US_PER_S, to_us, us_to_ms

EX = Namespace("http://example.org/bench/")
STREAM = str(EX["stream/observations"])
START = datetime(2024, 1, 1, tzinfo=UTC)


def hierarchy(branching: int = 3, depth: int = 8, properties: int = 20) -> tuple[Graph, list, list]:
    """The background: a class tree (``C``, ``C0``, ``C01``, ...), ``properties`` stream properties
    under five mid-level ones under ``ex:observes``, each mid-level one with a domain and a
    range; returns the graph, the leaf classes and the stream properties."""
    graph = Graph()
    level = [EX["C"]]
    classes = [level]
    for _ in range(depth - 1):
        nxt = []
        for parent in level:
            for i in range(branching):
                child = URIRef(f"{parent}{i}")
                graph.add((child, RDFS.subClassOf, parent))
                nxt.append(child)
        classes.append(nxt)
        level = nxt
    rng = random.Random(7)
    middle = [EX[f"q{j}"] for j in range(5)]
    for q in middle:
        graph.add((q, RDFS.subPropertyOf, EX["observes"]))
        graph.add((q, RDFS.domain, rng.choice(classes[3])))
        graph.add((q, RDFS.range, rng.choice(classes[2])))
    props = [EX[f"p{i}"] for i in range(properties)]
    for i, p in enumerate(props):
        graph.add((p, RDFS.subPropertyOf, middle[i % len(middle)]))
    return graph, classes[-1], props


def observations(leaves, props, frames: int, per_frame: int, seed: int = 11):
    """``frames`` frames a second apart, each ``per_frame`` observations of three triples: a leaf
    type, a stream property to a feature, a numeric value."""
    from rsp_jobs.ingest.rdf_stream import Element, StreamBatch

    rng = random.Random(seed)
    batch = StreamBatch(stream=STREAM, source="generated")
    value = f"<{XSD.double}>"
    for f in range(frames):
        ts = START + timedelta(seconds=f)
        frame = f"{STREAM}/f{f}"
        for k in range(per_frame):
            obs = f"<{EX}obs/{f}-{k}>"
            v = round(rng.uniform(0, 100), 2)
            batch.elements += [
                Element(
                    STREAM, ts, frame, obs, f"<{RDF.type}>", f"<{rng.choice(leaves)}>", None, None
                ),
                Element(
                    STREAM,
                    ts,
                    frame,
                    obs,
                    f"<{rng.choice(props)}>",
                    f"<{EX}feature/{rng.randrange(500)}>",
                    None,
                    None,
                ),
                Element(STREAM, ts, frame, obs, f"<{EX}value>", f'"{v}"^^{value}', v, None),
            ]
    return batch


def run(out_path: Path, frames: int, per_frame: int, batches: int, regime: str) -> dict:
    from rsp_jobs.bench import window_query
    from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, window_contents
    from rsp_jobs.engine import Interval, evaluate
    from rsp_jobs.ingest.lake import Lake
    from rsp_jobs.reasoning.entailment import Schema, closed
    from rsp_jobs.spark.entailment import entail
    from rsp_jobs.spark.session import get_spark
    from rsp_jobs.terms import nt_to_rdflib

    work = settings.home_dir() / "bench-reasoning"
    work.mkdir(parents=True, exist_ok=True)
    graph, leaves, props = hierarchy()
    ontology = work / "hierarchy.ttl"
    graph.serialize(ontology, format="turtle")
    classes = len(set(graph.subjects(RDFS.subClassOf))) + 1

    import os
    import tempfile

    home = os.environ.get("RSP_HOME")
    with tempfile.TemporaryDirectory(prefix="rsp-cold-") as cold_home:
        os.environ["RSP_HOME"] = (
            cold_home  # cold: an empty cache, the project's own cache untouched
        )
        try:
            t = time.perf_counter()
            closed(graph, regime)
            cold_s = time.perf_counter() - t
        finally:
            if home is None:
                del os.environ["RSP_HOME"]
            else:
                os.environ["RSP_HOME"] = home
    closure = closed(graph, regime)  # fills the project's cache if it was empty
    t = time.perf_counter()
    closed(graph, regime)
    cached_s = time.perf_counter() - t

    batch = observations(leaves, props, frames, per_frame)
    lake = Lake(work / "lake")
    if (work / "lake").exists():
        import shutil

        shutil.rmtree(work / "lake")
    lake.write(batch, batch_id="reasoning-bench")
    triples = len(batch.elements)

    spark = get_spark()
    schema = Schema.of(closure, regime)
    elements = lake.read(spark, [STREAM])
    t = time.perf_counter()
    entailed = entail(elements, schema).count() - triples
    entail_s = time.perf_counter() - t

    top = EX["C1"]
    text = (
        f"REGISTER QUERY instances AS PREFIX ex: <{EX}>\nSELECT ?x\n"
        f"FROM STREAM <{STREAM}> [RANGE 10s STEP 10s]\nFROM <{EX}hierarchy.ttl>\nWHERE {{ ?x a ex:C1 }}"
    )
    query = window_query(text, "reasoning-bench")
    t = time.perf_counter()
    windows = list(evaluate(query, lake, [str(ontology)], entailment=regime))
    engine_s = time.perf_counter() - t

    start_us = to_us(START)
    span_us = (frames + 10) * US_PER_S
    bounds = [start_us + span_us * i // batches for i in range(batches + 1)]
    bounds = [b - b % 10_000_000 for b in bounds]  # whole steps
    per_batch, batch_windows = [], 0
    for after, until in itertools.pairwise(bounds):
        t = time.perf_counter()
        batch_windows += len(
            list(
                evaluate(
                    query, lake, [str(ontology)], interval=Interval(after, until), entailment=regime
                )
            )
        )
        per_batch.append(time.perf_counter() - t)

    elems = [
        Elem(STREAM, us_to_ms(to_us(e.ts)), e.s, e.p, e.o)
        for e in batch.elements[: 3 * per_frame * 10]
    ]
    contents = window_contents(elems, [WindowSpec(STREAM, 10_000, 10_000)])
    close = min(contents)
    window_graph = Graph()
    for triple in graph:
        window_graph.add(triple)
    for _, e in contents[close]:
        window_graph.add((nt_to_rdflib(e.s), nt_to_rdflib(e.p), nt_to_rdflib(e.o)))
    t = time.perf_counter()
    theirs = rdflib_answer(
        f"SELECT ?x WHERE {{ ?x a <{top}> }}", [], [closed(window_graph, regime)]
    )
    reference_s = time.perf_counter() - t
    ours = next(w for w in windows if close_ms(w) == close)
    same = sorted(b["x"]["value"] for b in ours.bindings) == sorted(str(b["x"]) for b in theirs)

    report = {
        "workload": {
            "classes": classes,
            "background_triples": len(graph),
            "closed_background_triples": len(closure),
            "regime": regime,
            "frames": frames,
            "stream_triples": triples,
            "query": "instances of ex:C1 (a child of the root) per [RANGE 10s STEP 10s] window",
        },
        "machine": {"cores": cores(), "python": platform.python_version()},
        "background_closure": {
            "cold_seconds": round(cold_s, 2),
            "cached_seconds": round(cached_s, 3),
        },
        "entailment": {
            "entailed_triples": entailed,
            "seconds": round(entail_s, 2),
            "stream_triples_per_second": round(triples / entail_s),
        },
        "query": {
            "windows": len(windows),
            "result_rows": sum(w.rows for w in windows),
            "seconds": round(engine_s, 2),
            "stream_triples_per_second": round(triples / engine_s),
            "micro_batches": batches,
            "micro_batch_windows": batch_windows,
            "seconds_per_batch": {
                "mean": round(statistics.mean(per_batch), 2),
                "median": round(statistics.median(per_batch), 2),
                "max": round(max(per_batch), 2),
            },
        },
        "check": {
            "window_close_ms": close,
            "window_triples": len(contents[close]),
            "answers": len(theirs),
            "same_as_rdflib_owlrl": same,
            "rdflib_owlrl_seconds": round(reference_s, 2),
        },
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.bench.reasoning", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--output", type=Path, default=Path("bench-results/reasoning.json"))
    parser.add_argument(
        "--frames", type=int, default=200, help="frames, one a second (default 200)"
    )
    parser.add_argument(
        "--per-frame", type=int, default=67, help="observations per frame, 3 triples each"
    )
    parser.add_argument(
        "--batches", type=int, default=4, help="micro-batches (run intervals) to time"
    )
    parser.add_argument("--regime", default="rdfs++", choices=("rdfs", "rdfs++"))
    args = parser.parse_args(argv)
    report = run(args.output, args.frames, args.per_frame, args.batches, args.regime)
    print(json.dumps(report, indent=2))
    return 0 if report["check"]["same_as_rdflib_owlrl"] else 1


if __name__ == "__main__":
    sys.exit(main())
