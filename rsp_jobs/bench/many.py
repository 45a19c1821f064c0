"""``python -m rsp_jobs.bench.many``: many registered queries sharing their work. Six hours of
the merged CityBench traffic stream replayed in 15-minute micro-batches, as the query DAGs'
runs read it, Spark warm, three ways: one query alone (congestion_by_segment), each of ``N``
generated variants (``variants``) alone, and the ``N`` together (``engine.evaluate_together``:
one scan of the slice, one job for their results). Reported per batch: wall time, Spark jobs
and the bytes Spark read from the lake, and the cost of the ``N`` against one query's; every
variant's answers together are checked against its answers alone (the bench exits 1 if any
differs). Written to ``bench-results/many.json`` with a plot of the time per batch against the
number of queries."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.algebra.plan import TermsAt
from rsp_jobs.bench import cores, variants, window_query
from rsp_jobs.bench.profile import profiled
from rsp_jobs.bench.workload import TRAFFIC, load_traffic
from rsp_jobs.engine import Interval, evaluate, evaluate_together
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.spark.session import get_spark
from rsp_jobs.times import to_us

ONE = Path(__file__).resolve().parents[2] / "queries" / "citybench" / "congestion_by_segment.rsp"
DAY = datetime(2014, 8, 2, tzinfo=UTC)  # the main bench's day
FIRST = timedelta(hours=6)  # the replay starts at 06:00 of DAY
BATCH = timedelta(minutes=15)


def _batches(hours: int) -> list[Interval]:
    start = DAY + FIRST
    return [
        Interval(to_us(start + k * BATCH), to_us(start + (k + 1) * BATCH))
        for k in range(int(timedelta(hours=hours) / BATCH))
    ]


def _per_batch(profiles: list[dict]) -> dict:
    return {
        "median_seconds": round(statistics.median(p["seconds"] for p in profiles), 3),
        "max_seconds": round(max(p["seconds"] for p in profiles), 3),
        "jobs": max(p["jobs"] for p in profiles),
        "stages": max(p["stages"] for p in profiles),
        "bytes_read": max(p["bytes_read"] for p in profiles),
    }


def run(count: int, hours: int, alone_batches: int, steps: list[int], work: Path) -> dict:
    traffic = load_traffic(DAY, 1, work)
    lake, files = traffic.lake, [traffic.repository]
    observed_by = TermsAt("o", "<http://purl.oclc.org/NET/ssnx/ssn#observedBy>")
    sensors = [
        o[1:-1] for o in LakeStatistics(lake).terms([TRAFFIC], places=[observed_by])[observed_by]
    ]
    texts = variants.variants(count, sensors)
    queries = [window_query(t, f"variant {i}") for i, t in enumerate(texts)]
    one = window_query(ONE.read_text(), str(ONE))
    batches = _batches(hours)
    spark = get_spark()
    evaluate_together(queries, lake, [files] * count, interval=batches[0])  # warm
    list(evaluate(one, lake, files, interval=batches[0]))

    def timed(name: str, make) -> tuple[list, dict]:
        with profiled(spark, name) as profile:
            t = time.perf_counter()
            found = make()
            took = time.perf_counter() - t
        profile["seconds"] = took
        return found, profile

    one_profiles = [
        timed(f"many-one-{k}", lambda b=b: list(evaluate(one, lake, files, interval=b)))[1]
        for k, b in enumerate(batches)
    ]
    together, together_profiles = [], []
    for k, b in enumerate(batches):
        found, profile = timed(
            f"many-together-{k}",
            lambda b=b: evaluate_together(queries, lake, [files] * count, interval=b),
        )
        together.append(found)
        together_profiles.append(profile)
    differing = []
    alone_profiles = []
    for k, b in enumerate(batches[:alone_batches]):
        found, profile = timed(
            f"many-alone-{k}",
            lambda b=b: [list(evaluate(q, lake, files, interval=b)) for q in queries],
        )
        alone_profiles.append(profile)
        differing += [queries[i].name for i, (a, t) in enumerate(zip(found, together[k])) if a != t]
    scaling: dict[str, dict] = {}
    for n in steps:
        profiles = [
            timed(
                f"many-scaling-{n}-{k}",
                lambda b=b, n=n: evaluate_together(queries[:n], lake, [files] * n, interval=b),
            )[1]
            for k, b in enumerate(batches[:alone_batches])
        ]
        scaling[str(n)] = _per_batch(profiles)
    one_cost = _per_batch(one_profiles)
    report = {
        "machine": {"cores": cores(), "python": platform.python_version()},
        "queries": count,
        "hours": hours,
        "batch_minutes": int(BATCH / timedelta(minutes=1)),
        "batches": len(batches),
        "lake_triples": traffic.triples,
        "one": one_cost,
        "together": _per_batch(together_profiles),
        "alone": _per_batch(alone_profiles),
        "alone_batches": alone_batches,
        "together_over_one": round(
            statistics.median(p["seconds"] for p in together_profiles) / one_cost["median_seconds"],
            2,
        ),
        "answers": sum(len(w.bindings) + len(w.triples) for q in together[0] for w in q),
        "differing": sorted(set(differing)),
        "scaling": scaling,
    }
    return report


def _plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    counts = sorted(int(n) for n in report["scaling"])
    together = [report["scaling"][str(n)]["median_seconds"] for n in counts]
    one = report["one"]["median_seconds"]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(counts, together, marker="o", label="together (one scan, one job)")
    axes.plot(counts, [one * n for n in counts], linestyle=":", label="congestion_by_segment x n")
    axes.plot(
        [report["queries"]],
        [report["alone"]["median_seconds"]],
        marker="s",
        linestyle="none",
        label="each alone, measured",
    )
    axes.axhline(5 * one, color="grey", linestyle="--", label="5x one query")
    axes.set_xlabel("registered queries")
    axes.set_ylabel("seconds per 15-minute batch")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.bench.many", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hours", type=int, default=6)
    parser.add_argument(
        "--alone-batches",
        type=int,
        default=2,
        help="the batches each query also runs alone in, and the scaling's (default 2)",
    )
    parser.add_argument("--steps", default="1,10,25,50,100", help="query counts of the plot")
    parser.add_argument("--output", type=Path, default=Path("bench-results/many.json"))
    parser.add_argument("--work", type=Path, default=None, help="the lake's folder")
    args = parser.parse_args(argv)
    if not settings.data_dir().is_dir():
        print(f"bench: the shared data is not at {settings.data_dir()}", file=sys.stderr)
        return 2
    work = args.work or settings.home_dir() / "bench" / "many"
    steps = [int(n) for n in args.steps.split(",") if int(n) <= args.queries]
    report = run(args.queries, args.hours, args.alone_batches, steps, work)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    _plot(report, args.output.with_suffix(".png"))
    print(json.dumps(report, indent=2))
    return 1 if report["differing"] else 0


if __name__ == "__main__":
    sys.exit(main())
