"""``make bench``, beyond one machine: congestion_by_segment over eight days of the 33 CityBench
traffic streams on a Spark standalone cluster beside ``local[2]``, the same lake and the same
answers.

The bench starts the cluster on this machine (``spark.standalone``: a master and two workers of
one core each, on 127.0.0.1, asking for a shared secret), so the two sides have the same two
cores: what the cluster adds is its cost, the executors in JVMs of their own, the shuffle
between them over the network stack and the tasks sent from the driver, not more hardware. Each
side is a driver process of its own (``--side``), warmed, then timing the engine, the
hand-written RDF job and the typed floor of ``anchors`` ``--runs`` times in turn (medians); the
answers of every side and job are compared with the local engine's.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.bench import anchors, cores, window_query
from rsp_jobs.bench.profile import profiled
from rsp_jobs.bench.workload import TRAFFIC, load_traffic
from rsp_jobs.times import parse_datetime, to_us

QUERY = settings.REPO_ROOT / "queries" / "citybench" / "congestion_by_segment.rsp"
JOBS = ("engine", "hand_written", "typed_floor")
WORKERS, WORKER_CORES = 2, 1
WORKER_MEMORY, EXECUTOR_MEMORY = "3g", "2g"


def measure(
    lake_root: Path,
    typed: Path,
    repository: str,
    day: datetime,
    days: int,
    runs: int,
    answers_path: Path,
) -> dict:
    """One side, in this process's session: the three jobs over ``days`` days, ``runs`` times in
    turn after a warm-up over two hours; the last answers of each go to ``answers_path``."""
    from rsp_jobs.engine import Interval, evaluate
    from rsp_jobs.ingest.lake import Lake
    from rsp_jobs.spark.session import get_spark

    spark = get_spark(app_name="rsp-bench-cluster")
    lake = Lake(lake_root)
    properties = anchors.congestion_properties(Path(repository))
    query = window_query(QUERY.read_text(), str(QUERY))
    after, until = day, day + timedelta(days=days)

    def run(job: str, until: datetime):
        if job == "engine":
            windows = evaluate(
                query, lake, [repository], interval=Interval(to_us(after), to_us(until))
            )
            return anchors.engine_answers(windows)
        if job == "hand_written":
            return anchors.rdf_anchor(spark, lake, TRAFFIC, properties, 3600, 300, after, until)
        return anchors.typed_floor(spark, typed, 3600, 300, after, until)

    for job in JOBS:  # warm, as timed runs find the session
        run(job, after + timedelta(hours=2))
    seconds: dict[str, list[float]] = {job: [] for job in JOBS}
    answers: dict = {}
    profiles = []
    for number in range(runs):
        for job in JOBS:
            with profiled(spark, f"bench-cluster-{job}-{number}") as profile:
                t = time.perf_counter()
                answers[job] = run(job, until)
                seconds[job].append(time.perf_counter() - t)
            if job == "engine":
                profiles.append(profile)
    answers_path.write_bytes(pickle.dumps(answers))
    return {
        "master": spark.sparkContext.master,
        **{f"{job}_seconds": round(statistics.median(seconds[job]), 2) for job in JOBS},
        **{f"{job}_runs": [round(s, 2) for s in seconds[job]] for job in JOBS},
        "answers": len(answers["engine"]),
        "engine_vs_hand_written": round(
            statistics.median(seconds["engine"]) / statistics.median(seconds["hand_written"]), 2
        ),
        "engine_profile": profiles[-1],
    }


def _side(name: str, env: dict[str, str], args: list[str], answers: Path) -> dict:
    """``measure`` in a driver process of its own (a SparkContext per process)."""
    command = [
        sys.executable,
        "-m",
        "rsp_jobs.bench.cluster",
        "--side",
        name,
        "--answers",
        str(answers),
        *args,
    ]
    print(f"cluster bench: the {name} side ({env.get('RSP_SPARK_MASTER')})", file=sys.stderr)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cluster bench: the {name} side failed with code {done.returncode}")
    return json.loads(done.stdout.splitlines()[-1])


def run(day: datetime, days: int, runs: int, out_path: Path) -> dict:
    from rsp_jobs.spark.standalone import standalone_cluster

    work = settings.home_dir() / "bench-cluster"
    traffic = load_traffic(day, days, work)
    args = [
        "--lake",
        str(traffic.lake.root),
        "--typed",
        str(traffic.typed),
        "--day",
        f"{day:%Y-%m-%d}",
        "--days",
        str(days),
        "--runs",
        str(runs),
    ]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "RSP_SPARK"))}
    sides = {}
    answers = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch:
        answers["local"] = Path(scratch) / "local.pickle"
        sides["local"] = _side(
            "local", {**base, "RSP_SPARK_MASTER": "local[2]"}, args, answers["local"]
        )
        with standalone_cluster(
            Path(scratch) / "cluster", cores=WORKER_CORES, memory=WORKER_MEMORY, workers=WORKERS
        ) as cluster:
            answers["cluster"] = Path(scratch) / "cluster.pickle"
            env = {
                **base,
                **cluster.driver_env(),
                "RSP_EXECUTOR_MEMORY": EXECUTOR_MEMORY,
                "RSP_SPARK_CORES_MAX": str(WORKERS * WORKER_CORES),
            }
            sides["cluster"] = _side("cluster", env, args, answers["cluster"])
            # the side ran on the cluster: its application finished, with an executor per worker
            app = cluster.wait_for_application("rsp-bench-cluster")
            sides["cluster"]["application"] = app["state"]
            sides["cluster"]["executors"] = len(
                list(cluster.directory.glob(f"work/*/{app['id']}/*/stderr"))
            )
        found = {side: pickle.loads(path.read_bytes()) for side, path in answers.items()}
    reference = found["local"]["engine"]
    report = {
        "workload": {
            "day": f"{day:%Y-%m-%d}",
            "days": days,
            "streams": 33,
            "triples": traffic.triples,
            "frames": traffic.frames,
            "query": "congestion_by_segment",
            "runs": runs,
        },
        "machine": {"cores": cores(), "python": platform.python_version()},
        "cluster": {
            "workers": WORKERS,
            "cores_per_worker": WORKER_CORES,
            "executor_memory": EXECUTOR_MEMORY,
            "authenticated": True,
        },
        "sides": sides,
        "same_answers": {
            f"{side}.{job}": anchors.same_answers(reference, found[side][job])
            for side in found
            for job in JOBS
        },
        "cluster_vs_local": {
            job: round(sides["cluster"][f"{job}_seconds"] / sides["local"][f"{job}_seconds"], 2)
            for job in JOBS
        },
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.bench.cluster", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--day", default="2014-08-02", help="the first CityBench day (default 2014-08-02)"
    )
    parser.add_argument("--days", type=int, default=8, help="the span in days (default 8)")
    parser.add_argument(
        "--runs", type=int, default=3, help="timed runs of each job a side (default 3)"
    )
    parser.add_argument("--output", type=Path, default=Path("bench-results/cluster.json"))
    parser.add_argument("--side", help=argparse.SUPPRESS)  # one side's driver process
    parser.add_argument("--answers", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--lake", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--typed", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    day = parse_datetime(args.day)
    if args.side:
        from rsp_jobs.ingest import citybench

        result = measure(
            args.lake,
            args.typed,
            str(citybench.sensor_repository_path()),
            day,
            args.days,
            args.runs,
            args.answers,
        )
        print(json.dumps(result))
        return 0
    if not settings.data_dir().is_dir():
        print(
            f"bench: the shared data is not at {settings.data_dir()} (set RSP_DATA_DIR)",
            file=sys.stderr,
        )
        return 2
    report = run(day, args.days, args.runs, args.output)
    print(json.dumps(report, indent=2))
    return 0 if all(report["same_answers"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
