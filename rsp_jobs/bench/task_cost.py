"""``make bench``, a task's fixed cost: the seconds from a task process's start to the end of
its first Spark job, before any work of its own, and then its import of Great Expectations (a
task that checks its batch does that next). A DAG task is a process of its own, so it is
measured as one: a fresh interpreter that has imported Airflow's Task SDK (the task runner has,
before our code runs) imports the task module (``orchestrate.tasks``), gets its Spark from the
``rsp_spark`` connection, runs one trivial job and imports GX. Three ways, side by side:

- ``preloaded_fork``: what a DAG task pays under the project's executor
  (``orchestrate.executor.PreloadingLocalExecutor``): a fork of a process that has imported the
  Task SDK and the executor's ``PRELOADED`` modules, as the task process is a fork of such a
  worker, on a warm Spark Connect server; the target is under 2 s;
- ``connect``: a fresh interpreter on the same server, importing the task module and GX itself
  (a task under Airflow's plain LocalExecutor, or ``airflow tasks test``);
- ``jvm_per_task``: the connection names ``local[2]``, so the task starts its own driver JVM.

Airflow's own start of a task (the supervisor, the Task SDK's API calls) is not included: it is
the same either way and not ours to make shorter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rsp_jobs.bench import cores
from rsp_jobs.demo_deployment import free_port
from rsp_jobs.spark import connect_server

TARGET_S = 2.0
# what a task does first, the phases stamped: its imports, its Spark session, one job, then GX
TASK_MARKS = r"""
import json, os, sys, time
import airflow.sdk  # noqa: F401  (imported by Airflow's task runner before the task's code)


def task_marks() -> dict:
    started = time.time()
    from rsp_jobs.orchestrate import tasks  # noqa: F401  (what a query task imports)
    from rsp_jobs.orchestrate.spark_connection import get_spark
    imported = time.time()
    spark = get_spark()
    session = time.time()
    assert spark.range(1).count() == 1
    job = time.time()
    import great_expectations  # noqa: F401  (what a task checking its batch imports next)
    return {"started": started, "imported": imported, "session": session, "job": job, "gx": time.time()}
"""
TASK = TASK_MARKS + "print(json.dumps(task_marks()))\n"
FORKED = (
    TASK_MARKS
    + r"""
from rsp_jobs.orchestrate import executor
executor.preload()
for _ in range(int(sys.argv[1])):
    read, write = os.pipe()
    if os.fork() == 0:  # the task process
        os.write(write, json.dumps(task_marks()).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as marks:
        print(marks.read(), flush=True)
    os.wait()
"""
)


def _task_env(connection: str, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN", "RSP_SPARK"))}
    env.update(AIRFLOW_CONN_RSP_SPARK=connection, RSP_HOME=str(home))
    return env


def _phases(marks: dict) -> dict:
    return {
        "imports_s": round(marks["imported"] - marks["started"], 3),
        "session_s": round(marks["session"] - marks["imported"], 3),
        "first_job_s": round(marks["job"] - marks["session"], 3),
        "total_s": round(marks["job"] - marks["started"], 3),
        "gx_import_s": round(marks["gx"] - marks["job"], 3),
        "total_with_gx_s": round(marks["gx"] - marks["started"], 3),
    }


def forked_tasks(connection: str, home: Path, runs: int) -> list[dict]:
    """``runs`` task processes forked, one after another, from one preloaded parent."""
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(runs)],
        env=_task_env(connection, home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(lines) != runs:
        raise RuntimeError(f"the forked task processes failed: {done.stderr[-2000:]}")
    return [_phases(json.loads(line)) for line in lines]


def task_once(connection: str, home: Path) -> dict:
    """One task-like process on ``connection`` (``AIRFLOW_CONN_RSP_SPARK``, a URI or JSON): its phases in s."""
    done = subprocess.run(
        [sys.executable, "-c", TASK],
        env=_task_env(connection, home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the task process failed: {done.stderr[-2000:]}")
    return _phases(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(connection: str, home: Path, runs: int, forked: bool = False) -> dict:
    samples = (
        forked_tasks(connection, home, runs)
        if forked
        else [task_once(connection, home) for _ in range(runs)]
    )
    return {
        "connection": connection,
        "runs": samples,
        "median_total_s": round(statistics.median(s["total_s"] for s in samples), 3),
        "median_total_with_gx_s": round(
            statistics.median(s["total_with_gx_s"] for s in samples), 3
        ),
    }


def run(output: Path, runs: int = 5) -> dict:
    with tempfile.TemporaryDirectory(prefix="rsp-task-cost-") as scratch:
        home = Path(scratch)
        port = free_port()
        token = connect_server.new_token()
        server = connect_server.start(port, home / "connect.log", home=home, token=token)
        connection = f"spark-connect://:{token}@localhost:{port}"
        try:
            task_once(connection, home)  # the server's first job warms it
            preloaded = measure(connection, home, runs, forked=True)
            connect = {
                **measure(connection, home, runs),
                "connection": f"spark-connect://localhost:{port}",
            }
        finally:
            server.terminate()
            server.wait(60)
        jvm = measure(
            json.dumps({"conn_type": "spark", "host": "local[2]"}), home, max(1, runs // 2)
        )
    preloaded["connection"] = connect["connection"]  # the report names the server, not its token
    report = {
        "benchmark": "task fixed cost: from the task's code starting to the end of its first Spark job, "
        "then importing Great Expectations",
        "cores": cores(),
        "target_s": TARGET_S,
        "preloaded_fork": preloaded,
        "connect": connect,
        "jvm_per_task": jvm,
        "within_target": preloaded["median_total_with_gx_s"] < TARGET_S,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rsp_jobs.bench.task_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--output", type=Path, default=Path("bench-results/task_cost.json"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    report = run(args.output, args.runs)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
